"""A view's staging asks git about ignore rules only for paths its index does not hold (a
tracked file is never ignored): whatever a run does to tracked, ignored and new paths, each
checkpoint's tree is exactly what staging the view from scratch records."""

from __future__ import annotations

import asyncio
import shutil
import tempfile
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from driveros._git import GitRepo, run_git, split_z
from driveros.review import ScratchWorkspace, checkpoints_of
from driveros.review._changes import stage_all
from driveros.review._indexed import IndexedFiles
from tests.review._repo import git, make_repo

#: Tracked, tracked but ignored (force-added), ignored, new, and inside an ignored directory.
PATHS = [
    "src/app.py",
    "src",
    "keep.log",
    "new.log",
    "notes.txt",
    "notes.txt/x/y.txt",
    "build/out.o",
    "d/e.txt",
]
OPS = st.lists(
    st.tuples(st.sampled_from(["write", "delete", "dir"]), st.sampled_from(PATHS)),
    min_size=1,
    max_size=8,
)


def _repo(root: Path) -> Path:
    repo = make_repo(
        root / "proj",
        {".gitignore": "*.log\nbuild/\n", "src/app.py": "A = 1\n", "d/e.txt": "e\n"},
    )
    (repo / "keep.log").write_text("kept\n")
    git(repo, "add", "-f", "keep.log")
    git(repo, "commit", "-q", "-m", "tracked though ignored")
    return repo


def _no_file_above(root: Path, target: Path) -> None:
    """A file where ``target`` needs a directory becomes one (its file is removed)."""
    for above in reversed(target.relative_to(root).parents[:-1]):
        if (root / above).is_file() or (root / above).is_symlink():
            (root / above).unlink()


def _apply(root: Path, op: str, rel: str, n: int) -> None:
    target = root / rel
    if op == "delete":
        if target.is_dir() and not target.is_symlink():
            shutil.rmtree(target)
        elif target.exists() or target.is_symlink():
            target.unlink()
        return
    if op == "dir":  # the path becomes a directory holding a file
        _no_file_above(root, target)
        if target.is_file() or target.is_symlink():
            target.unlink()
        target.mkdir(parents=True, exist_ok=True)
        (target / "inner.txt").write_text(f"inner {n}\n")
        return
    if target.is_dir() and not target.is_symlink():
        shutil.rmtree(target)
    _no_file_above(root, target)
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(f"turn {n}\n")


async def _view_git(scratch: ScratchWorkspace, *args: str) -> bytes:
    """``git ARGS`` on the view's private repository; its stdout."""
    lay = scratch._lay
    repo = GitRepo(git_dir=lay.git_dir, work_tree=lay.work, scratch=True)
    _, out, _ = await run_git(list(args), cwd=lay.work, repo=repo)
    return out


async def _fresh_tree(scratch: ScratchWorkspace) -> str:
    """The tree staging the whole view records, without what the staging kept."""
    scratch._lay.tracked = None
    await stage_all(scratch._lay)
    return (await _view_git(scratch, "write-tree")).decode().strip()


async def _index_files(scratch: ScratchWorkspace) -> set[str]:
    return set(split_z(await _view_git(scratch, "ls-files", "-z", "--cached")))


async def _check(ops: list[tuple[str, str]]) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        repo = _repo(Path(tmp))
        base = Path(tmp) / "scratch"
        base.mkdir()
        async with await ScratchWorkspace.create(repo, base_dir=base) as scratch:
            cps = checkpoints_of(scratch)
            for n, (op, rel) in enumerate(ops, start=1):
                await asyncio.to_thread(_apply, scratch.path, op, rel, n)
                await cps.record(n)
                lay = scratch._lay
                assert lay.tracked is None or set(lay.tracked) <= await _index_files(scratch)
                last = cps.records[-1].tree if cps.records else lay.baseline
                assert await _fresh_tree(scratch) == last, (ops[:n], scratch.strategy)


def test_tracked_and_ignored_paths_through_many_turns() -> None:
    asyncio.run(
        _check(
            [
                ("write", "keep.log"),  # tracked though ignored: recorded
                ("delete", "keep.log"),  # the deletion is recorded
                ("write", "keep.log"),  # now untracked and ignored: not recorded
                ("write", "new.log"),
                ("dir", "notes.txt"),
                ("delete", "d/e.txt"),
                ("dir", "src/app.py"),
                ("delete", "src"),
                ("write", "src/app.py"),
                ("dir", "src/app.py"),  # a file that becomes a directory, and back
                ("write", "src/app.py"),
                ("dir", "notes.txt"),
                ("write", "notes.txt/inner.txt/x"),  # a file that becomes a directory below
            ]
        )
    )


@settings(
    max_examples=25,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(OPS)
def test_any_sequence_of_turns_records_what_a_fresh_staging_records(
    ops: list[tuple[str, str]],
) -> None:
    asyncio.run(_check(ops))


def test_indexed_files_follow_what_git_takes_out() -> None:
    files = IndexedFiles(["a/b/c.txt", "a/b/d.txt", "a/e", "f"])
    files.add_file("a/b")  # a directory became a file: what was under it is out
    assert set(files) == {"a/b", "a/e", "f"}
    files.add_file("f/g")  # a file became a directory holding a file
    assert set(files) == {"a/b", "a/e", "f/g"}
    files.add_directory("a/e")  # a file became a directory
    assert set(files) == {"a/b", "f/g"}
    files.add_directory("f")  # recorded anew: what was under it is not known any more
    assert set(files) == {"a/b"}
    files.add_file("f/g")
    files.discard("f")  # a directory deleted with its files
    assert set(files) == {"a/b"}
    files.add_file("a/b/x/y")
    assert set(files) == {"a/b/x/y"} and "a/b" not in files


async def test_a_file_the_run_made_and_then_removed_leaves_no_change(
    tmp_path: Path, scratch_base: Path
) -> None:
    """``mv`` there and back: the moved name existed only in the upper layer, and nothing is
    left there once it is gone; the checkpoint and the proposal must not keep it."""
    repo = _repo(tmp_path)
    async with await ScratchWorkspace.create(repo, base_dir=scratch_base) as scratch:
        cps = checkpoints_of(scratch)
        (scratch.path / "src/app.py").rename(scratch.path / "moved.py")
        first = await cps.record(1)
        assert first is not None and first.files == ["moved.py", "src/app.py"]
        (scratch.path / "moved.py").rename(scratch.path / "src/app.py")
        second = await cps.record(2)
        assert second is not None and second.files == ["moved.py", "src/app.py"]
        assert second.tree == scratch._lay.baseline
        assert await scratch.changes() == []
