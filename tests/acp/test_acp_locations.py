"""ACP: a semantic tool's `tool_call_update` carries the places its answer names as
`locations` (issue 31), from the result's typed locations: a rename's changed lines too, which
its output only summarizes; places outside the workspace are left out."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from driveros.acp._updates import UpdateStream
from driveros.agent import ToolCall, ToolResult


async def _updates(tmp_path: Path, name: str, output: str, places: list[Any]) -> list[Any]:
    sent: list[Any] = []

    async def send(update: Any) -> None:
        sent.append(update)

    stream = UpdateStream(send, workspace=tmp_path, history=[])
    args = {"symbol": "compute_total", "new_name": "grand_total"}
    await stream.on_event(ToolCall(run_id="r", turn=1, call_id="c1", name=name, arguments=args))
    await stream.on_event(
        ToolResult(
            run_id="r",
            turn=1,
            call_id="c1",
            name=name,
            ok=True,
            output=output,
            locations=places,
        )
    )
    await stream.close()
    return sent


async def test_acp_rename_update_locations_are_every_changed_line(tmp_path: Path) -> None:
    output = (
        "renamed compute_total to grand_total: 3 edits in 2 files\n"
        "pkg/calc.py: lines 1\npkg/use.py: lines 1, 5"
    )
    places = [
        {"path": "pkg/calc.py", "line": 1, "column": 1},
        {"path": "pkg/use.py", "line": 1, "column": 1},
        {"path": "pkg/use.py", "line": 5, "column": 1},
        {"path": "../outside.py", "line": 2, "column": 1},
        {"path": "..data/gen.py", "line": 3, "column": 1},  # a name, not a climb out
    ]
    start, done = await _updates(tmp_path, "rename", output, places)
    assert start.title == "rename compute_total"
    assert done.session_update == "tool_call_update" and done.status == "completed"
    assert [(loc.path, loc.line) for loc in done.locations] == [
        (str(tmp_path / "pkg/calc.py"), 1),
        (str(tmp_path / "pkg/use.py"), 1),
        (str(tmp_path / "pkg/use.py"), 5),
        (str(tmp_path / "..data/gen.py"), 3),
    ]


async def test_acp_references_update_locations_without_typed_places_parse_the_answer(
    tmp_path: Path,
) -> None:
    output = (
        "2 references to f in 1 files (declaration included):\na.py:1:5: def f():\na.py:3:1: f()"
    )
    _, done = await _updates(tmp_path, "references", output, [])
    assert [(loc.path, loc.line) for loc in done.locations] == [
        (str(tmp_path / "a.py"), 1),
        (str(tmp_path / "a.py"), 3),
    ]
