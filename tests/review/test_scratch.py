"""Scratch copies: what is copied, overlays, and complete cleanup (real git, real files)."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

import pytest

from driveros.review import ReviewError, ScratchClosedError, ScratchWorkspace
from driveros.state import mounts_under
from tests.review._repo import git, make_repo, tree, write_files

# Every test here runs once per strategy available on this machine (tests/review/conftest.py):
# `scratch_strategy` is `worktree` or `overlay`. What the agent sees differs (a view shows the
# whole tree, ignored files included, read-only below); what is proposed does not.


def _dirty(repo: Path) -> None:
    """Uncommitted edits, a staged file, an untracked file, a deletion and ignored files."""
    (repo / "src/app.py").write_text("def add(a, b):\n    return a + b  # wip\n")
    (repo / "staged.txt").write_text("staged\n")
    git(repo, "add", "staged.txt")
    (repo / "notes/todo.md").parent.mkdir()
    (repo / "notes/todo.md").write_text("- untracked\n")
    (repo / "src/util.py").unlink()
    (repo / "debug.log").write_text("ignored\n")
    (repo / "build").mkdir()
    (repo / "build/out.bin").write_bytes(b"\0ignored")


async def test_scratch_worktree_equals_user_working_tree(
    repo: Path, scratch_base: Path, scratch_strategy: str
) -> None:
    _dirty(repo)
    status_before = git(repo, "status", "--porcelain")
    async with await ScratchWorkspace.create(repo, base_dir=scratch_base) as scratch:
        assert scratch.strategy == scratch_strategy
        assert scratch.path.parent.parent == scratch_base.resolve()
        # Ignored files are in neither: left out of a worktree, hidden in a view.
        expected = {k: v for k, v in tree(repo).items() if not k.endswith(".log")}
        expected = {k: v for k, v in expected.items() if not k.startswith("build/")}
        assert tree(scratch.path) == expected
        if scratch_strategy == "worktree":
            assert (scratch.path / ".git").is_file()  # a real worktree to run git in
            assert scratch.git_dir == (repo / ".git").resolve()
        else:
            assert (scratch.path / ".git").is_dir()  # the user's, read through the view
            assert scratch.git_dir is None
            assert git(scratch.path, "status", "--porcelain") == status_before
        assert await scratch.changes() == []
        # Ignored files are never part of a proposal, whether the agent sees them or not.
        write_files(scratch.path, {"debug.log": "agent\n", "build/new.bin": b"\0"})
        assert await scratch.changes() == []
    # The user's repository, index and working tree are exactly as before.
    assert git(repo, "status", "--porcelain") == status_before
    assert "staged.txt" in git(repo, "diff", "--cached", "--name-only")


async def test_scratch_worktree_is_registered_then_removed(
    repo: Path, scratch_base: Path, scratch_strategy: str
) -> None:
    scratch = await ScratchWorkspace.create(repo, base_dir=scratch_base)
    if scratch_strategy == "worktree":
        assert str(scratch.path) in git(repo, "worktree", "list", "--porcelain")
    else:  # a view is a mount, never a worktree of the user's repository
        assert str(scratch.path) in mounts_under(scratch.path)
        assert str(scratch.path) not in git(repo, "worktree", "list", "--porcelain")
    await scratch.aclose()
    await scratch.aclose()  # idempotent
    assert mounts_under(scratch_base) == []
    assert str(scratch.path) not in git(repo, "worktree", "list", "--porcelain")
    assert list(scratch_base.iterdir()) == []
    assert not (repo / ".git/worktrees").exists() or list((repo / ".git/worktrees").iterdir()) == []
    with pytest.raises(ScratchClosedError):
        await scratch.changes()


async def test_scratch_plain_copy_honours_gitignore(
    tmp_path: Path, scratch_base: Path, scratch_strategy: str
) -> None:
    ws = tmp_path / "plain"
    write_files(
        ws,
        {
            ".gitignore": "*.tmp\n/dist/\n",
            "main.py": "print('hi')\n",
            "pkg/mod.py": "X = 1\n",
            "pkg/.gitignore": "generated.py\n!keep.tmp\n",
            "pkg/generated.py": "skip me\n",
            "pkg/keep.tmp": "negated, so copied\n",
            "a.tmp": "ignored\n",
            "dist/bundle.js": "ignored\n",
            "node_modules/x/index.js": "skipped by default\n",
            ".venv/bin/python": "skipped by default\n",
            "pkg/__pycache__/mod.cpython-311.pyc": "skipped by default\n",
            "data.bin": b"\x00\x01\x02",
        },
    )
    copied = [".gitignore", "data.bin", "main.py", "pkg/.gitignore", "pkg/keep.tmp", "pkg/mod.py"]
    async with await ScratchWorkspace.create(ws, base_dir=scratch_base) as scratch:
        assert not scratch.is_worktree
        assert scratch.git_dir is None
        if scratch_strategy == "overlay":
            assert scratch.strategy == "overlay"  # a plain directory gets a view too
            # What a copy leaves out is hidden; the environment is seen, not copied.
            assert sorted(tree(scratch.path)) == sorted([*copied, "node_modules/x/index.js"])
        else:
            assert scratch.strategy == "copy"
            assert sorted(tree(scratch.path)) == copied
        assert (scratch.path / "data.bin").read_bytes() == b"\x00\x01\x02"
        assert not (scratch.path / ".git").exists()
        # Whatever the agent sees, only what .gitignore and the defaults let through is
        # proposed: the baseline is the same on both.
        assert await scratch.changes() == []
        for rel in sorted(tree(ws)):
            if not rel.endswith(".gitignore"):
                write_files(scratch.path, {rel: b"changed\n"})
        assert sorted(c.path for c in await scratch.changes()) == [
            p for p in copied if not p.endswith(".gitignore")
        ]
    assert list(scratch_base.iterdir()) == []
    assert tree(ws)["main.py"] == b"print('hi')\n"


async def test_scratch_copy_keeps_symlinks_and_modes(tmp_path: Path, scratch_base: Path) -> None:
    ws = tmp_path / "plain"
    write_files(ws, {"run.sh": "#!/bin/sh\necho hi\n", "target.txt": "t\n"})
    (ws / "run.sh").chmod(0o755)
    (ws / "link.txt").symlink_to("target.txt")
    async with await ScratchWorkspace.create(ws, base_dir=scratch_base) as scratch:
        assert os.access(scratch.path / "run.sh", os.X_OK)
        assert (scratch.path / "link.txt").is_symlink()
        assert os.readlink(scratch.path / "link.txt") == "target.txt"


async def test_scratch_overlays_replace_and_add_files(repo: Path, scratch_base: Path) -> None:
    overlays = {"src/app.py": "def add(a, b):\n    return a + b\n", "src/new.py": "NEW = 1\r\n"}
    async with await ScratchWorkspace.create(
        repo, overlays=overlays, base_dir=scratch_base
    ) as scratch:
        assert (scratch.path / "src/app.py").read_text() == overlays["src/app.py"]
        assert (scratch.path / "src/new.py").read_bytes() == b"NEW = 1\r\n"
        # Overlays are part of the baseline: no change is reported for them.
        assert await scratch.changes() == []
    assert (repo / "src/app.py").read_text() == "def add(a, b):\n    return a - b\n"
    assert not (repo / "src/new.py").exists()


@pytest.mark.parametrize("bad", ["../escape.py", "/etc/passwd", ".git/config", ""])
async def test_scratch_overlay_outside_workspace_is_refused(
    repo: Path, scratch_base: Path, bad: str
) -> None:
    with pytest.raises(ReviewError):
        await ScratchWorkspace.create(repo, overlays={bad: "x"}, base_dir=scratch_base)
    assert list(scratch_base.iterdir()) == []


async def test_scratch_subdirectory_of_repository(
    repo: Path, scratch_base: Path, scratch_strategy: str
) -> None:
    (repo / "src/extra.py").write_text("untracked\n")
    async with await ScratchWorkspace.create(repo / "src", base_dir=scratch_base) as scratch:
        assert scratch.strategy == scratch_strategy
        assert sorted(tree(scratch.path)) == ["app.py", "extra.py", "util.py"]
        (scratch.path / "app.py").write_text("changed\n")
        (scratch.path.parent / "README.md").write_text("outside the workspace\n")
        changes = await scratch.changes()
        assert [(c.path, c.action) for c in changes] == [("app.py", "modify")]
        assert changes[0].diff.startswith("diff --git a/app.py b/app.py\n")


async def test_scratch_unborn_repository_falls_back_to_copy(
    tmp_path: Path, scratch_base: Path, scratch_strategy: str
) -> None:
    ws = tmp_path / "fresh"
    ws.mkdir()
    git(ws, "init", "-q")
    write_files(ws, {"a.py": "A = 1\n", ".gitignore": "*.pyc\n", "a.pyc": "x"})
    async with await ScratchWorkspace.create(ws, base_dir=scratch_base) as scratch:
        assert not scratch.is_worktree
        # A view of the directory, as for a plain one: what a copy leaves out is hidden.
        assert (scratch.strategy, sorted(tree(scratch.path))) == (
            scratch_strategy if scratch_strategy == "overlay" else "copy",
            [".gitignore", "a.py"],
        )
        write_files(scratch.path, {"a.pyc": "y", "b.py": "B = 1\n"})
        assert [c.path for c in await scratch.changes()] == ["b.py"]


async def test_scratch_missing_workspace_is_a_review_error(tmp_path: Path) -> None:
    with pytest.raises(ReviewError, match="not a directory"):
        await ScratchWorkspace.create(tmp_path / "nope")


async def test_scratch_cleanup_after_cancellation(repo: Path, scratch_base: Path) -> None:
    started = asyncio.Event()

    async def agent_run() -> None:
        async with await ScratchWorkspace.create(repo, base_dir=scratch_base) as scratch:
            (scratch.path / "src/app.py").write_text("edited\n")
            started.set()
            await asyncio.sleep(3600)

    task = asyncio.create_task(agent_run())
    await started.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert list(scratch_base.iterdir()) == []
    assert git(repo, "worktree", "list", "--porcelain").count("worktree ") == 1


async def test_scratch_cancelled_during_creation_leaves_nothing(
    tmp_path: Path, scratch_base: Path
) -> None:
    big = make_repo(
        tmp_path / "big", {f"d{i}/f{j}.txt": f"{i} {j}\n" for i in range(10) for j in range(30)}
    )
    for delay in (0.0, 0.01, 0.03, 0.08):
        task = asyncio.create_task(ScratchWorkspace.create(big, base_dir=scratch_base))
        await asyncio.sleep(delay)
        task.cancel()
        try:
            scratch = await task
        except asyncio.CancelledError:
            pass
        else:
            await scratch.aclose()  # creation won the race; still must clean up fully
        assert list(scratch_base.iterdir()) == []
        assert git(big, "worktree", "list", "--porcelain").count("worktree ") == 1


async def test_scratch_user_object_store_untouched(repo: Path, scratch_base: Path) -> None:
    before = git(repo, "count-objects", "-v")
    async with await ScratchWorkspace.create(repo, base_dir=scratch_base) as scratch:
        write_files(scratch.path, {"big/new.txt": "brand new content\n" * 50})
        assert len(await scratch.changes()) == 1
    assert git(repo, "count-objects", "-v") == before


async def test_scratch_plain_copy_skips_nested_repositories(
    tmp_path: Path, scratch_base: Path
) -> None:
    ws = tmp_path / "plain"
    write_files(ws, {"main.py": "x = 1\n"})
    make_repo(ws / "vendor/lib", {"lib.py": "LIB = 1\n"})
    async with await ScratchWorkspace.create(ws, base_dir=scratch_base) as scratch:
        if scratch.strategy == "overlay":  # seen through the view, never proposed
            assert sorted(tree(scratch.path)) == ["main.py", "vendor/lib/lib.py"]
            (scratch.path / "vendor/lib/lib.py").write_text("LIB = 2\n")
        else:
            assert sorted(tree(scratch.path)) == ["main.py"]
        (scratch.path / "main.py").write_text("x = 2\n")
        assert [c.path for c in await scratch.changes()] == ["main.py"]


async def test_scratch_worktree_skips_untracked_caches(tmp_path: Path, scratch_base: Path) -> None:
    ws = make_repo(tmp_path / "noignore", {"pkg/mod.py": "X = 1\n"})
    write_files(
        ws,
        {
            "pkg/__pycache__/mod.cpython-311.pyc": b"\x00pyc",
            "node_modules/m/index.js": "m\n",
            "notes.txt": "untracked, copied\n",
        },
    )
    async with await ScratchWorkspace.create(ws, base_dir=scratch_base) as scratch:
        seen = sorted(tree(scratch.path))
        if scratch.strategy == "overlay":
            assert seen == sorted(tree(ws))
        else:
            assert seen == ["notes.txt", "pkg/mod.py"]
        # What the agent's test run leaves behind is not part of the proposal.
        write_files(scratch.path, {".pytest_cache/v/x": "1", "pkg/__pycache__/a.pyc": b"\x00"})
        (scratch.path / "pkg/mod.py").write_text("X = 2\n")
        assert [c.path for c in await scratch.changes()] == ["pkg/mod.py"]


async def test_scratch_missing_base_dir_is_a_review_error(repo: Path, tmp_path: Path) -> None:
    with pytest.raises(ReviewError, match="cannot create a scratch directory"):
        await ScratchWorkspace.create(repo, base_dir=tmp_path / "no" / "such" / "dir")


async def test_scratch_concurrent_copies_of_one_repository(repo: Path, scratch_base: Path) -> None:
    scratches = await asyncio.gather(
        *(ScratchWorkspace.create(repo, base_dir=scratch_base) for _ in range(3))
    )
    try:
        assert len({s.path for s in scratches}) == 3
        for i, s in enumerate(scratches):
            (s.path / "src/util.py").write_text(f"X = {i + 10}\n")
        for i, s in enumerate(scratches):
            (change,) = await s.changes()
            assert change.after == f"X = {i + 10}\n"
    finally:
        await asyncio.gather(*(s.aclose() for s in scratches))
    assert git(repo, "worktree", "list", "--porcelain").count("worktree ") == 1
    assert list(scratch_base.iterdir()) == []


async def test_scratch_strategy_is_checked_and_probed(
    repo: Path, scratch_base: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from driveros.review import STRATEGIES, scratch_strategies

    with pytest.raises(ReviewError, match="unknown scratch strategy"):
        await ScratchWorkspace.create(repo, base_dir=scratch_base, strategy="zfs")
    assert list(scratch_base.iterdir()) == []
    monkeypatch.setenv("DRIVEROS_SCRATCH_STRATEGY", "bogus")  # ignored (logged): auto
    auto = "overlay" if scratch_strategies()["overlay"] is None else "worktree"
    async with await ScratchWorkspace.create(repo, base_dir=scratch_base) as scratch:
        assert scratch.strategy == auto
    monkeypatch.setenv("DRIVEROS_SCRATCH_STRATEGY", " COPY ")
    async with await ScratchWorkspace.create(repo, base_dir=scratch_base) as scratch:
        assert scratch.strategy == "copy"
    assert set(STRATEGIES) == {"auto", "overlay", "worktree", "copy"}
    probe = scratch_strategies()
    assert probe["worktree"] is None and probe["copy"] is None
    assert probe["overlay"] is None or isinstance(probe["overlay"], str)
