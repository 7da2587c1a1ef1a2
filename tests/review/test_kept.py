"""A scratch copy kept for a proposal survives its process and is reopened by the next."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

from driveros.review import ScratchWorkspace
from driveros.state import collect_garbage, list_leases, mounts_under
from tests.review._repo import git, make_repo

_KEEP = """
import asyncio, sys
from pathlib import Path
from driveros.review import ScratchWorkspace

async def main() -> None:
    scratch = await ScratchWorkspace.create(Path(sys.argv[1]), base_dir=Path(sys.argv[2]))
    (scratch.path / "a.py").write_text("A = 2\\n")
    await scratch.changes()
    await scratch.keep({"run_id": "r1", "task": "bump A"})
    await scratch.aclose()

asyncio.run(main())
"""


def _worktrees(repo: Path) -> list[str]:
    out = git(repo, "worktree", "list", "--porcelain")
    return [line.split(" ", 1)[1] for line in out.splitlines() if line.startswith("worktree ")]


async def test_kept_scratch_survives_its_process_and_reopens(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "proj", {"a.py": "A = 1\n"})
    base = tmp_path / "scratch"
    base.mkdir()
    proc = await asyncio.create_subprocess_exec(sys.executable, "-c", _KEEP, str(repo), str(base))
    assert await proc.wait() == 0
    assert mounts_under(base) == []  # kept on disk, never left mounted by a gone process
    assert (await collect_garbage()).removed == []  # its owner is gone, but it is kept

    other = await ScratchWorkspace.reopen_kept(workspace=tmp_path)
    assert other == []
    [kept] = await ScratchWorkspace.reopen_kept(workspace=repo)
    assert kept.manifest == {"run_id": "r1", "task": "bump A"}
    scratch = kept.scratch
    assert [(c.path, c.after) for c in await scratch.changes()] == [("a.py", "A = 2\n")]
    await scratch.apply()
    assert (repo / "a.py").read_text() == "A = 2\n"
    await scratch.discard()
    assert _worktrees(repo) == [str(repo)]
    assert list(base.iterdir()) == []
    assert await list_leases() == []


async def test_kept_scratch_closed_then_discarded_is_removed(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "proj", {"a.py": "A = 1\n"})
    scratch = await ScratchWorkspace.create(repo, base_dir=tmp_path)
    await scratch.keep({"run_id": "r2"})
    await scratch.aclose()
    assert scratch.path.is_dir()
    await scratch.discard()
    assert not scratch.path.exists()
    assert _worktrees(repo) == [str(repo)]
