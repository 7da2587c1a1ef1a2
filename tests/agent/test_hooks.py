"""Diagnostics feed (driveros.intel) and memory (driveros.memory) plugged into real runs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from tests._scripted import FIX_CALC

from driveros.diagnostics import DiagnosticItem
from driveros.intel import DiagnosticsFeed, read_workspace_config
from driveros.sandbox import LocalSandbox
from driveros.testing import ToolCallSpec, Turn

from .conftest import run_scripted, sandbox_env


@pytest.fixture
def checked_repo(calc_repo: Path) -> Path:
    """The calc repository configured so the feed runs its tests (not just collects them);
    the runs below trust it, so its configuration is used."""
    (calc_repo / ".driveros.toml").write_text('[diagnostics]\npytest = "run"\n')
    return calc_repo


async def _baseline(repo: Path) -> list[DiagnosticItem]:
    async with LocalSandbox(repo, base_env=sandbox_env()) as sandbox:
        config = read_workspace_config(repo).config
        before = await DiagnosticsFeed(sandbox, config=config).snapshot()
    targets = [d for d in before.items if d.severity == "error"]
    assert targets, f"the fixture's failing test should be a diagnostic: {before}"
    return targets


async def test_diagnostics_delta_after_edits_and_targets_fixed(checked_repo: Path) -> None:
    targets = await _baseline(checked_repo)
    turns = [
        Turn(tool_calls=[ToolCallSpec("read_file", {"path": "calc.py"})]),
        Turn(tool_calls=[FIX_CALC]),
        Turn(text="Fixed."),
    ]
    out = await run_scripted(
        turns, checked_repo, diagnostics=True, targets=targets, workspace_trusted=True
    )
    (event,) = out.of("diagnostics")
    assert event.turn == 2 and len(event.fixed) >= 1 and event.new == []
    sent = [m for m in out.server.requests[2]["messages"] if m["role"] == "tool"][-1]
    assert "[build diagnostics after this turn's edits:" in sent["content"]
    assert "fixed" in sent["content"]
    first_prompt = out.server.requests[0]["messages"][1]["content"]
    assert "Diagnostics to fix:" in first_prompt
    assert out.report.result.targets_fixed is True
    assert out.report.result.outcome == "answered"


async def test_a_test_still_failing_with_other_values_is_neither_new_nor_fixed(
    checked_repo: Path,
) -> None:
    """The event, the note to the model, the stuck detector and the targets share one identity:
    before, the event said "1 new, 1 fixed" here while the targets said "still failing"."""
    targets = await _baseline(checked_repo)
    wrong_again = ToolCallSpec(
        "edit_file", {"path": "calc.py", "old_string": "a - b", "new_string": "a * b"}
    )
    out = await run_scripted(
        [Turn(tool_calls=[wrong_again]), Turn(text="Fixed.")],
        checked_repo,
        diagnostics=True,
        targets=targets,
        workspace_trusted=True,
    )
    (event,) = out.of("diagnostics")
    assert (event.new, event.fixed) == ([], [])
    assert event.unchanged == event.total >= 1
    sent = [m for m in out.server.requests[1]["messages"] if m["role"] == "tool"][-1]
    assert "0 new, 0 fixed" in sent["content"]
    assert out.report.result.targets_fixed is False


async def test_targets_not_fixed_when_the_answer_is_premature(checked_repo: Path) -> None:
    targets = await _baseline(checked_repo)
    out = await run_scripted(
        [Turn(text="Done!")],
        checked_repo,
        diagnostics=True,
        targets=targets,
        workspace_trusted=True,
    )
    assert out.report.result.targets_fixed is False


async def test_memory_stores_verified_answers_and_recalls_them_labelled(
    calc_repo: Path, tmp_path: Path
) -> None:
    environ = {"DRIVEROS_MEMORY_PATH": str(tmp_path / "memory.db")}
    extraction = json.dumps({"facts": ["calc.py defines add(a, b) in the repository root"]})
    first = await run_scripted(
        [
            Turn(tool_calls=[ToolCallSpec("read_file", {"path": "calc.py"})]),
            Turn(text="calc.py defines add."),
            Turn(text=extraction),  # the memory layer's extraction call
        ],
        calc_repo,
        memory=True,
        environ=environ,
        task="what does calc.py define?",
    )
    assert [(e.action, e.count) for e in first.of("memory")] == [("recall", 0), ("store", 1)]
    second = await run_scripted(
        [Turn(text="It defines add.")],
        calc_repo,
        memory=True,
        environ=environ,
        task="what does calc.py define?",
    )
    assert [e.action for e in second.of("memory")] == ["recall", "skipped"]
    prompt = second.server.requests[0]["messages"][1]["content"]
    assert "possibly stale — verify with tools" in prompt
    assert "calc.py defines add(a, b)" in prompt


async def test_memory_failure_is_reported_and_the_run_goes_on(
    calc_repo: Path, tmp_path: Path
) -> None:
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("")
    environ = {"DRIVEROS_MEMORY_PATH": str(blocker / "memory.db")}
    out = await run_scripted(
        [Turn(tool_calls=[ToolCallSpec("list_files", {})]), Turn(text="ok")],
        calc_repo,
        memory=True,
        environ=environ,
    )
    (event,) = out.of("memory")
    assert event.action == "error" and "memory unavailable" in event.detail
    assert out.report.result.outcome == "answered"


async def test_a_diagnostics_snapshot_the_model_saw_verifies_the_answer(
    checked_repo: Path,
) -> None:
    """Edit -> "0 new, 1 fixed" shown to the model -> answer: an observation of real state."""
    out = await run_scripted(
        [Turn(tool_calls=[FIX_CALC]), Turn(text="Fixed.")],
        checked_repo,
        diagnostics=True,
        workspace_trusted=True,
    )
    (event,) = out.of("diagnostics")
    assert event.fixed and event.new == []
    sent = [m for m in out.server.requests[1]["messages"] if m["role"] == "tool"][-1]
    assert "[build diagnostics after this turn's edits:" in sent["content"]
    result = out.report.result
    assert (result.outcome, result.verified, result.exit_code) == ("answered", True, 0)


async def test_an_edit_without_any_snapshot_stays_unverified(checked_repo: Path) -> None:
    out = await run_scripted(
        [Turn(tool_calls=[FIX_CALC]), Turn(text="Fixed.")], checked_repo, diagnostics=False
    )
    result = out.report.result
    assert (result.outcome, result.verified, result.exit_code) == ("unverified", False, 2)
