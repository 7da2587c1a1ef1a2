"""execute_run in review mode: the path the language server takes."""

from __future__ import annotations

from pathlib import Path

from driveros.testing import ToolCallSpec, Turn

from .conftest import run_scripted

EDIT = ToolCallSpec("edit_file", {"path": "calc.py", "old_string": "a - b", "new_string": "a + b"})


async def test_run_review_mode_proposes_changes_without_touching_the_workspace(
    calc_repo: Path,
) -> None:
    turns = [
        Turn(tool_calls=[EDIT]),
        Turn(tool_calls=[ToolCallSpec("read_file", {"path": "calc.py"})]),
        Turn(text="Fixed add()."),
    ]
    out = await run_scripted(turns, calc_repo, review=True)
    report = out.report
    assert report.scratch is not None
    try:
        assert (calc_repo / "calc.py").read_text().endswith("a - b\n")
        assert [c.path for c in report.changes] == ["calc.py"]
        assert report.changes[0].after is not None and "a + b" in report.changes[0].after
        (proposal,) = out.of("proposal")
        assert proposal.rationale == "Fixed add()."
        assert "+    return a + b" in proposal.files[0].diff
        assert out.types[-2:] == ["proposal", "result"]
        await report.scratch.apply()
        assert (calc_repo / "calc.py").read_text().endswith("a + b\n")
    finally:
        await report.scratch.aclose()


async def test_run_overlays_are_what_the_agent_reads(calc_repo: Path) -> None:
    overlay = "def add(a, b):\n    return b + a  # unsaved buffer\n"
    turns = [Turn(tool_calls=[ToolCallSpec("read_file", {"path": "calc.py"})]), Turn(text="ok")]
    out = await run_scripted(turns, calc_repo, review=True, overlays={"calc.py": overlay})
    assert out.report.scratch is not None
    await out.report.scratch.aclose()
    assert out.of("tool_result")[0].output == overlay
    assert (calc_repo / "calc.py").read_text().endswith("a - b\n")


async def test_run_overlays_without_review_are_a_setup_error(calc_repo: Path) -> None:
    out = await run_scripted([Turn(text="x")], calc_repo, overlays={"calc.py": "x = 1\n"})
    assert (out.report.result.outcome, out.report.result.exit_code) == ("setup_error", 1)
    assert out.server.requests == []
