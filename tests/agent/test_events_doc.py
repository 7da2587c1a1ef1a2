"""docs/events.md carries the event JSON Schema exactly as the code generates it."""

from __future__ import annotations

import json
import re
from pathlib import Path

from driveros.agent import EVENT_TYPES, EXIT_CODES, event_json_schema

DOC = Path(__file__).resolve().parents[2] / "docs" / "events.md"


def test_events_doc_schema_matches_the_code() -> None:
    text = DOC.read_text(encoding="utf-8")
    blocks = re.findall(r"```json\n(.*?)\n```", text, flags=re.DOTALL)
    assert blocks, "docs/events.md has no ```json block"
    assert json.loads(blocks[-1]) == event_json_schema(), (
        "docs/events.md is out of date: regenerate its JSON Schema block from "
        "driveros.agent.event_json_schema()"
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
