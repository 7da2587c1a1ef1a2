"""docs/events.schema.json is the event JSON Schema exactly as the code generates it, and
docs/events.md names every event type and outcome."""

from __future__ import annotations

import json
from pathlib import Path

from driveros.agent import EVENT_TYPES, EXIT_CODES, event_json_schema

DOCS = Path(__file__).resolve().parents[2] / "docs"
DOC = DOCS / "events.md"
SCHEMA = DOCS / "events.schema.json"


def test_events_schema_file_is_the_codes() -> None:
    generated = json.dumps(event_json_schema(), indent=2, sort_keys=True) + "\n"
    assert SCHEMA.read_text(encoding="utf-8") == generated, (
        "docs/events.schema.json is out of date: regenerate it as docs/events.md, "
        '"JSON Schema", says'
    )


def test_events_doc_lists_every_type_and_outcome() -> None:
    text = DOC.read_text(encoding="utf-8")
    for kind in EVENT_TYPES:
        assert f"| `{kind}` |" in text, kind
    for outcome, code in EXIT_CODES.items():
        assert f"| `{outcome}` | {code} |" in text, outcome


def test_agent_public_names_are_unique_and_importable() -> None:
    import driveros.agent as agent

    assert len(agent.__all__) == len(set(agent.__all__))
    assert all(hasattr(agent, name) for name in agent.__all__)
    for name in ("Agent", "AgentConfig", "event_json_schema"):
        assert name in agent.__all__
