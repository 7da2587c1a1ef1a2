"""How a container sees a scratch worktree's repository (mounts + GIT_DIR/GIT_WORK_TREE)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from driveros.review import ScratchWorkspace
from tests.review._repo import write_files


async def test_container_git_maps_the_worktree_git_dir(repo: Path, scratch_base: Path) -> None:
    async with await ScratchWorkspace.create(
        repo, base_dir=scratch_base, strategy="worktree"
    ) as scratch:
        git = scratch.container_git(git_at="/driveros/git", work_tree="/workspace")
        assert git is not None
        common = (repo / ".git").resolve()
        assert git.mounts == {str(common): "/driveros/git"}
        assert git.env["GIT_WORK_TREE"] == "/workspace"
        rel = git.env["GIT_DIR"].removeprefix("/driveros/git/")
        assert rel.startswith("worktrees/")
        # The same variables, pointed at the host paths, give a working git in the copy.
        (scratch.path / "README.md").write_text("# changed\n")
        env = {**os.environ, "GIT_DIR": str(common / rel), "GIT_WORK_TREE": str(scratch.path)}
        out = subprocess.run(
            ["git", "status", "--short"],
            cwd="/",
            env=env,
            check=True,
            capture_output=True,
            text=True,
        ).stdout
        assert out.splitlines() == [" M README.md"]


async def test_container_git_none_for_plain_copy_and_subdirectory(
    repo: Path, tmp_path: Path, scratch_base: Path
) -> None:
    plain = tmp_path / "plain"
    write_files(plain, {"a.txt": "a\n"})
    async with await ScratchWorkspace.create(plain, base_dir=scratch_base) as scratch:
        assert scratch.container_git(git_at="/g", work_tree="/workspace") is None
    # An overlay view needs none: its .git is the repository's own (read-only in docker).
    async with await ScratchWorkspace.create(repo, base_dir=scratch_base) as scratch:
        if scratch.strategy == "overlay":
            assert scratch.container_git(git_at="/g", work_tree="/workspace") is None
            assert scratch.git_dir is None
    async with await ScratchWorkspace.create(
        repo / "src", base_dir=scratch_base, strategy="worktree"
    ) as scratch:
        assert scratch.is_worktree
        assert scratch.container_git(git_at="/g", work_tree="/workspace") is None
