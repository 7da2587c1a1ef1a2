"""A tool box with a ``ready`` gate (a review run's: its scratch copy's baseline) runs no tool
before the gate opens, and one whose gate failed runs none at all."""

from __future__ import annotations

import asyncio
from pathlib import Path

from driveros.agent._tools import ToolBox
from driveros.review import ReviewError
from driveros.sandbox import LocalSandbox


async def test_no_tool_runs_before_the_gate_opens(tmp_path: Path) -> None:
    opened = asyncio.Event()
    async with LocalSandbox(tmp_path) as sandbox:
        box = ToolBox(sandbox, ready=opened.wait)
        calls = [
            asyncio.create_task(box.call("write_file", {"path": "a.txt", "content": "A"}, None)),
            asyncio.create_task(box.call("run", {"command": "echo B > b.txt"}, None)),
        ]
        await asyncio.sleep(0.3)
        assert not any(c.done() for c in calls)
        assert sorted(p.name for p in tmp_path.iterdir()) == []
        opened.set()
        outcomes = await asyncio.gather(*calls)
    assert all(o.ok for o in outcomes), [o.output for o in outcomes]
    assert (tmp_path / "a.txt").read_text() == "A"
    assert (tmp_path / "b.txt").read_text() == "B\n"


async def test_a_failed_gate_runs_no_tool(tmp_path: Path) -> None:
    async def broken() -> None:
        raise ReviewError("cannot record the baseline")

    async with LocalSandbox(tmp_path) as sandbox:
        box = ToolBox(sandbox, ready=broken)
        outcome = await box.call("run", {"command": "echo B > b.txt"}, None)
    assert not outcome.ok
    assert "not ready: cannot record the baseline" in outcome.output
    assert not (tmp_path / "b.txt").exists()
