"""Held runs and an editor's kept proposals share the state directory: each reopener takes only
its own kind (held_runs / reopen_kept_where), never mounting or adopting the other's."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

from tests.review._repo import make_repo

from driveros.llm import user
from driveros.review import reopen_kept_where
from driveros.runs import held_runs
from driveros.runs._held import history_through

_KEEP_BOTH = """
import asyncio, sys
from pathlib import Path
from driveros.review import ScratchWorkspace, checkpoints_of
from driveros.runs import hold_run
from driveros.llm import user

async def main() -> None:
    ws, base = Path(sys.argv[1]), Path(sys.argv[2])
    run = await ScratchWorkspace.create(ws, base_dir=base)
    (run.path / "a.txt").write_text("run\\n")
    await checkpoints_of(run).record(1, ["write_file"])
    await hold_run(run, run_id="r1", task="t", history=[user("t")], turns=1)
    await run.aclose()
    proposal = await ScratchWorkspace.create(ws, base_dir=base)
    (proposal.path / "b.txt").write_text("editor\\n")
    await proposal.changes()
    await proposal.keep({"runId": "p1", "task": "editor's"})
    await proposal.aclose()

asyncio.run(main())
"""


async def test_held_runs_and_kept_proposals_reopen_apart(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "proj", {"x.py": "X = 1\n"})
    base = tmp_path / "scratch"
    base.mkdir()
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-c", _KEEP_BOTH, str(repo), str(base)
    )
    assert await proc.wait() == 0
    [held] = await held_runs(repo)
    try:
        assert (held.run_id, [c.files for c in held.checkpoints.records]) == ("r1", [["a.txt"]])
        assert [m.role for m in held.history] == ["user"]
    finally:
        await held.aclose()
    [proposal] = await reopen_kept_where(lambda m: m.get("kind") != "run", workspace=repo)
    try:
        assert proposal.manifest["runId"] == "p1"
        assert [c.path for c in await proposal.scratch.changes()] == ["b.txt"]
    finally:
        await proposal.scratch.discard()
    [again] = await held_runs(repo)
    await again.scratch.discard()
    assert await held_runs(repo) == []


def test_history_through_cuts_after_a_turns_tool_results() -> None:
    from driveros.llm import ToolResultPart, assistant, tool_results

    history = [
        user("task"),
        assistant("t1"),
        tool_results(ToolResultPart(tool_call_id="1", content="r1")),
        assistant("t2"),
        tool_results(ToolResultPart(tool_call_id="2", content="r2")),
        assistant("done"),
        user("follow up"),
        assistant("t4"),
    ]
    assert history_through(history, 0) == []
    assert history_through(history, 1) == history[:3]
    assert history_through(history, 3) == history[:6]
    assert history_through(history, 4) == history
