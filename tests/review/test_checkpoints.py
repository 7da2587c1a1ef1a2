"""Checkpoints of a scratch copy: one per turn that changed it, shell edits included; diff,
apply and revert by checkpoint, with the conflict rules of apply; kept across a process."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from pathlib import Path

import pytest

from driveros.review import ConflictError, ScratchWorkspace, checkpoints_of
from tests.review._repo import git


async def _three_turns(scratch: ScratchWorkspace) -> None:
    """Turn 1 writes a.txt, turn 2 edits src/app.py with sed, turn 3 writes b.txt and
    changes src/util.py."""
    cps = checkpoints_of(scratch)
    (scratch.path / "a.txt").write_text("one\n")
    assert (await cps.record(1, ["write_file"])) is not None
    await asyncio.to_thread(
        subprocess.run,
        ["sed", "-i", "s/a - b/a + b/", "src/app.py"],
        cwd=scratch.path,
        check=True,
    )
    assert (await cps.record(2, ["run"])) is not None
    assert (await cps.record(3, ["read_file"])) is None  # nothing changed: no checkpoint
    (scratch.path / "b.txt").write_text("three\n")
    (scratch.path / "src/util.py").write_text("X = 3\n")
    assert (await cps.record(4, ["write_file", "edit_file"])) is not None


async def test_checkpoints_list_every_changing_turn_with_its_files(
    repo: Path, scratch_base: Path
) -> None:
    async with await ScratchWorkspace.create(repo, base_dir=scratch_base) as scratch:
        await _three_turns(scratch)
        got = [(c.checkpoint, c.turn, c.files, c.tools) for c in checkpoints_of(scratch).records]
    assert got == [
        (1, 1, ["a.txt"], ["write_file"]),
        (2, 2, ["src/app.py"], ["run"]),
        (3, 4, ["b.txt", "src/util.py"], ["write_file", "edit_file"]),
    ]


async def test_diff_and_apply_through_two_take_exactly_the_first_two_turns(
    repo: Path, scratch_base: Path
) -> None:
    before = git(repo, "ls-files", "-s")
    async with await ScratchWorkspace.create(repo, base_dir=scratch_base) as scratch:
        await _three_turns(scratch)
        cps = checkpoints_of(scratch)
        through = await cps.changes(through=2)
        assert [(c.path, c.action) for c in through] == [
            ("a.txt", "create"),
            ("src/app.py", "modify"),
        ]
        assert "+    return a + b" in through[1].diff
        only3 = await cps.changes(turn=4)
        assert [c.path for c in only3] == ["b.txt", "src/util.py"]
        assert not (repo / "a.txt").exists()  # nothing reaches the user's files before apply
        result = await cps.apply(through=2)
        assert sorted(result.applied) == ["a.txt", "src/app.py"]
    assert (repo / "a.txt").read_text() == "one\n"
    assert "a + b" in (repo / "src/app.py").read_text()
    assert not (repo / "b.txt").exists()
    assert (repo / "src/util.py").read_text() == "X = 1\n"
    assert git(repo, "ls-files", "-s") == before  # the user's index is never touched


async def test_apply_through_conflicts_as_apply_does_and_writes_nothing(
    repo: Path, scratch_base: Path
) -> None:
    async with await ScratchWorkspace.create(repo, base_dir=scratch_base) as scratch:
        await _three_turns(scratch)
        (repo / "src/app.py").write_text("user's own edit\n")
        with pytest.raises(ConflictError) as caught:
            await checkpoints_of(scratch).apply(through=2)
    assert [c.path for c in caught.value.conflicts] == ["src/app.py"]
    assert caught.value.clean == ["a.txt"]
    assert not (repo / "a.txt").exists()
    assert (repo / "src/app.py").read_text() == "user's own edit\n"


async def test_revert_drops_the_later_checkpoints_from_the_copy(
    repo: Path, scratch_base: Path
) -> None:
    async with await ScratchWorkspace.create(repo, base_dir=scratch_base) as scratch:
        await _three_turns(scratch)
        cps = checkpoints_of(scratch)
        assert await cps.revert(1) == ["b.txt", "src/app.py", "src/util.py"]
        assert [c.checkpoint for c in cps.records] == [1]
        assert [c.path for c in await scratch.changes()] == ["a.txt"]
        assert "a - b" in (scratch.path / "src/app.py").read_text()
        # the next turn's checkpoint is numbered after the kept ones
        (scratch.path / "c.txt").write_text("c\n")
        cp = await cps.record(5)
        assert cp is not None and (cp.checkpoint, cp.files) == (2, ["c.txt"])
        await cps.revert(0)
        assert await scratch.changes() == []
    assert not (repo / "a.txt").exists()


_KEEP = """
import asyncio, sys
from pathlib import Path
from driveros.review import ScratchWorkspace, checkpoints_of

async def main() -> None:
    scratch = await ScratchWorkspace.create(Path(sys.argv[1]), base_dir=Path(sys.argv[2]))
    cps = checkpoints_of(scratch)
    (scratch.path / "a.txt").write_text("1\\n")
    await cps.record(1)
    (scratch.path / "b.txt").write_text("2\\n")
    await cps.record(2)
    await scratch.keep({"run_id": "r1", "checkpoints": cps.to_manifest()})
    await scratch.aclose()

asyncio.run(main())
"""


async def test_checkpoints_survive_the_process_that_kept_the_copy(
    repo: Path, scratch_base: Path
) -> None:
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-c", _KEEP, str(repo), str(scratch_base)
    )
    assert await proc.wait() == 0
    [kept] = await ScratchWorkspace.reopen_kept(workspace=repo)
    try:
        cps = checkpoints_of(kept.scratch, kept.manifest)
        assert [(c.checkpoint, c.files) for c in cps.records] == [(1, ["a.txt"]), (2, ["b.txt"])]
        assert [c.path for c in await cps.changes(through=1)] == ["a.txt"]
        await cps.apply(through=1)
    finally:
        await kept.scratch.discard()
    assert (repo / "a.txt").read_text() == "1\n" and not (repo / "b.txt").exists()
