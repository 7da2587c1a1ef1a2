"""Scripted-model runs of the real agent with the real feed (ruff in a LocalSandbox): runs that
oscillate, stall and worsen end ``stuck`` by ``build_diagnostics``; a run that polls while
making progress does not."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from driveros.agent import Event
from driveros.config import load_environment
from driveros.runs import RunReport, RunSpec, execute_run
from driveros.testing import ScriptedModelServer, ToolCallSpec, Turn
from tests.intel import _projects as P

SETTINGS = '[diagnostics]\ntype_checker = "off"\npytest = "off"\n'


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    files = {"pyproject.toml": P.RUFF_CONFIG, ".driveros.toml": SETTINGS, "m.py": "a = 1\n"}
    return P.write_project(tmp_path / "repo", files)


def write(text: str) -> Turn:
    return Turn(tool_calls=[ToolCallSpec("write_file", {"path": "m.py", "content": text})])


async def run(turns: Sequence[Turn], repo: Path) -> tuple[RunReport, list[Event]]:
    events: list[Event] = []

    async def on_event(event: Event) -> None:
        events.append(event)

    async with ScriptedModelServer(turns) as server:
        environ = P.tool_env() | {
            "OPENAI_API_KEY": "sk-test-not-a-real-key",
            "OPENAI_BASE_URL": server.openai_base_url,
            "OPENAI_MODEL": "scripted",
        }
        env = load_environment(cwd=repo, environ=environ)
        spec = RunSpec(
            task="make m.py lint clean",
            workspace=repo,
            diagnostics=True,
            memory=False,
            workspace_trusted=True,  # its .driveros.toml turns mypy and pytest off
        )
        report = await execute_run(spec, env=env, on_event=on_event)
    return report, events


def stuck_of(events: list[Event]) -> Any:
    (stuck,) = [e for e in events if e.type == "stuck"]
    return stuck


async def test_run_oscillating_edits_end_stuck_by_build_diagnostics(repo: Path) -> None:
    turns = [
        write("a = undefined_one\n"),
        write("a = 1\nb = undefined_two\n"),  # fixes one, breaks two
        write("a = undefined_one\nb = 2\n"),  # one is back
        Turn(text="done"),
    ]
    report, events = await run(turns, repo)
    stuck = stuck_of(events)
    assert (stuck.detector, stuck.turn) == ("build_diagnostics", 3)
    assert stuck.detail.startswith("oscillation")
    assert stuck.evidence == ["m.py:1:5: error [ruff F821] Undefined name `undefined_one`"]
    assert (report.result.outcome, report.result.exit_code) == ("stuck", 4)


async def test_run_stalled_edits_end_stuck_after_k_turns(repo: Path) -> None:
    turns = [write(f"a = undefined_one  # attempt {n}\n") for n in range(1, 6)] + [Turn(text="ok")]
    report, events = await run(turns, repo)
    stuck = stuck_of(events)
    assert (stuck.detector, stuck.turn) == ("build_diagnostics", 4)
    assert stuck.detail.startswith("no improvement")
    assert report.result.outcome == "stuck"


async def test_run_worsening_edits_end_stuck(repo: Path) -> None:
    names = ["u1", "u2", "u3", "u4", "u5"]
    turns = [write("".join(f"v{i} = {n}\n" for i, n in enumerate(names[:k]))) for k in range(1, 6)]
    report, events = await run([*turns, Turn(text="ok")], repo)
    stuck = stuck_of(events)
    # the clean pre-edit baseline counts: turns 1, 2 and 3 each made it worse
    assert (stuck.detector, stuck.turn) == ("build_diagnostics", 3)
    assert stuck.detail.startswith("worse: errors rose on 3 edit turns in a row (0 → 1 → 2 → 3)")
    assert report.result.outcome == "stuck"


async def test_run_polling_with_progress_is_not_stuck(repo: Path) -> None:
    turns = [
        write("a = u1\nb = u2\nc = u3\n"),
        Turn(tool_calls=[ToolCallSpec("diagnostics", {})]),
        Turn(tool_calls=[ToolCallSpec("read_file", {"path": "m.py"})]),
        write("a = 1\nb = u2\nc = u3\n"),
        Turn(tool_calls=[ToolCallSpec("diagnostics", {})]),
        write("a = 1\nb = 2\nc = u3\n"),
        Turn(tool_calls=[ToolCallSpec("diagnostics", {})]),
        write("a = 1\nb = 2\nc = 3\n"),
        Turn(text="m.py is lint clean."),
    ]
    report, events = await run(turns, repo)
    assert [e for e in events if e.type == "stuck"] == []
    assert report.result.outcome == "answered"
    totals = [e.total for e in events if e.type == "diagnostics"]
    assert totals[0] == 3 and totals[-1] == 0
