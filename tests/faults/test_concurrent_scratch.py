"""Row 1 of issue 15: many scratch copies of one repository start at the same time."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from driveros.review import ScratchWorkspace
from driveros.state import list_leases, mounts_under
from tests.review._repo import git, make_repo

if TYPE_CHECKING:
    from tests.server._lsp import Editor

N = 20


def _repo(tmp_path: Path) -> Path:
    return make_repo(tmp_path / "proj", {"a.py": "A = 1\n", "pkg/b.py": "B = 2\n"})


def _worktrees(repo: Path) -> list[str]:
    out = git(repo, "worktree", "list", "--porcelain")
    return [line.split(" ", 1)[1] for line in out.splitlines() if line.startswith("worktree ")]


async def test_concurrent_scratch_create_all_succeed(tmp_path: Path, scratch_strategy: str) -> None:
    repo = _repo(tmp_path)
    (repo / "untracked.txt").write_text("u\n")
    base = tmp_path / "scratch"
    base.mkdir()
    copies = await asyncio.gather(*(ScratchWorkspace.create(repo, base_dir=base) for _ in range(N)))
    try:
        assert all(c.strategy == scratch_strategy for c in copies)
        assert len({c.path for c in copies}) == N
        for c in copies:
            assert (c.path / "untracked.txt").read_text() == "u\n"
        # Views are mounts, never worktrees of the user's repository.
        assert len(_worktrees(repo)) == (N + 1 if scratch_strategy == "worktree" else 1)
        assert len(mounts_under(base)) == (N if scratch_strategy == "overlay" else 0)
        assert len(await list_leases()) == N
    finally:
        await asyncio.gather(*(c.aclose() for c in copies))
    assert _worktrees(repo) == [str(repo)]
    assert list(base.iterdir()) == []
    assert await list_leases() == []
    assert mounts_under(base) == []


async def test_concurrent_scratch_create_and_close_interleaved(tmp_path: Path) -> None:
    repo = _repo(tmp_path)
    base = tmp_path / "scratch"
    base.mkdir()

    async def one() -> None:
        async with await ScratchWorkspace.create(repo, base_dir=base) as scratch:
            (scratch.path / "a.py").write_text("A = 2\n")
            assert [c.path for c in await scratch.changes()] == ["a.py"]

    await asyncio.gather(*(one() for _ in range(N)))
    assert _worktrees(repo) == [str(repo)]
    assert list(base.iterdir()) == []


_CHILD = """
import asyncio, sys
from pathlib import Path
from driveros.review import ScratchWorkspace

async def main() -> None:
    copies = await asyncio.gather(
        *(ScratchWorkspace.create(Path(sys.argv[1]), base_dir=Path(sys.argv[2])) for _ in range(5))
    )
    for c in copies:
        await c.aclose()

asyncio.run(main())
"""


async def test_concurrent_scratch_create_across_processes(tmp_path: Path) -> None:
    repo = _repo(tmp_path)
    base = tmp_path / "scratch"
    base.mkdir()
    procs = [
        await asyncio.create_subprocess_exec(
            sys.executable, "-c", _CHILD, str(repo), str(base), stderr=subprocess.PIPE
        )
        for _ in range(4)
    ]
    results = [await p.communicate() for p in procs]
    assert [p.returncode for p in procs] == [0] * 4, [err.decode()[-2000:] for _, err in results]
    assert _worktrees(repo) == [str(repo)]
    assert list(base.iterdir()) == []


#: Run states after which a run does nothing more on its own.
_ENDED = frozenset({"finished", "proposed", "failed", "canceled"})


async def _wait_all_ended(ed: Editor, run_ids: list[str]) -> dict[str, str]:
    """Every run's state once all have ended (a failed run is reported, not waited for);
    on a timeout, an error that says where each run is."""
    from driveros_lsp import protocol

    states: dict[str, str] = {}
    try:
        async with asyncio.timeout(300):  # a machine busy with other suites is slow, not stuck
            while True:
                listing = await ed.command(protocol.CMD_AGENT_LIST)
                states = {r["runId"]: r["state"] for r in listing["runs"] if r["runId"] in run_ids}
                if len(states) == len(run_ids) and set(states.values()) <= _ENDED:
                    return states
                await asyncio.sleep(0.1)
    except TimeoutError:
        raise AssertionError(f"runs still going after 300 s: {_report(ed, states)}") from None


def _report(ed: Editor, states: dict[str, str]) -> str:
    """The runs not finished or proposed: their state, error and last events."""
    lines = []
    for run_id, state in states.items():
        if state in ("finished", "proposed"):
            continue
        events = ed.events(run_id)
        last = [(e["type"], e.get("outcome") or e.get("error") or "") for e in events[-5:]]
        lines.append(f"{run_id} {state}: {len(events)} events, the last {last}")
    return "\n".join(lines) or "none"


async def test_concurrent_runs_through_the_server_all_start(tmp_path: Path) -> None:
    """20 runs started at once through a real driveros-lsp on one repository: none ends
    ``setup_error`` (their scratch worktrees no longer race), and none is left behind."""
    from driveros.testing import ScriptedModelServer, Turn
    from driveros_lsp import protocol
    from tests.server._lsp import editor_session
    from tests.server.conftest import model_env
    from tests.server.test_flow import SETTINGS

    repo = _repo(tmp_path)
    turns = [Turn(text=f"answer {i}") for i in range(N)]
    settings = {**SETTINGS, "maxConcurrentRuns": N, "diagnostics": False}
    async with (
        ScriptedModelServer(turns) as model,
        editor_session(repo, env=model_env(model), settings=settings) as ed,
    ):
        starts = [ed.command(protocol.CMD_AGENT_START, {"task": f"t{i}"}) for i in range(N)]
        run_ids = [r["runId"] for r in await asyncio.gather(*starts)]
        states = await _wait_all_ended(ed, run_ids)
        assert set(states.values()) <= {"finished", "proposed"}, _report(ed, states)
        await ed.wait_for(lambda: all(ed.events(r, "result") for r in run_ids), what="results")
        outcomes = [ed.events(r, "result")[0]["outcome"] for r in run_ids]
        errors = [ed.events(r, "result")[0].get("error") for r in run_ids]
        assert "setup_error" not in outcomes, errors
        assert sorted(outcomes) == ["unverified"] * N
        # Finished runs free their copies in the background: wait for that before shutdown
        # (a shutdown racing those releases is row 6's business, not this test's).
        async with asyncio.timeout(60):
            while await list_leases():
                await asyncio.sleep(0.05)
    assert _worktrees(repo) == [str(repo)]
    assert await list_leases() == []
