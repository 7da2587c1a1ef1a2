"""Removing what a lease registered: files and directories, and git worktree entries."""

from __future__ import annotations

import asyncio
import os
import shutil
from collections.abc import Sequence
from pathlib import Path

from driveros._errors import GitError
from driveros._git import run_git
from driveros.state._lock import repo_lock
from driveros.state._mounts import unmount_under

#: Every path a lease may remove has a base name with this prefix (a guard against a record
#: that names anything else, e.g. one edited by hand).
OWNED_PREFIX = "driveros-"


def removable(path: str) -> bool:
    """Whether ``path`` is something a lease may own (absolute, named ``driveros-*``)."""
    p = Path(path)
    return p.is_absolute() and p.name.startswith(OWNED_PREFIX) and ".." not in p.parts


async def remove_tree(root: Path) -> None:
    """``rm -rf root`` off the loop; finishes even when the caller is canceled.

    Whatever is mounted below ``root`` (a copy-on-write scratch view) is unmounted first, and
    ``rm`` never crosses into another file system: removing a copy never reaches through a
    mount into the user's files. Raises OSError when a mount cannot be removed.
    """
    await unmount_under(root)
    # `rm -rf` is several times faster than shutil.rmtree on large trees; fall back to it.
    rm = shutil.which("rm")
    if rm is not None:
        proc = await asyncio.create_subprocess_exec(
            rm,
            "-rf",
            "--one-file-system",
            "--",
            str(root),
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.DEVNULL,
            stderr=asyncio.subprocess.DEVNULL,
        )
        try:
            await proc.wait()
        except BaseException:
            await asyncio.shield(proc.wait())  # let it finish: a half-removed copy helps no one
            raise

    def rest() -> None:
        if root.is_symlink() or (os.path.lexists(root) and not root.is_dir()):
            root.unlink(missing_ok=True)
        else:
            shutil.rmtree(root, ignore_errors=True)

    await asyncio.to_thread(rest)


async def _worktrees_under(repo_top: Path, roots: Sequence[Path]) -> list[str]:
    listed = await run_git(["worktree", "list", "--porcelain"], cwd=repo_top, check=False)
    if listed.returncode != 0:
        return []
    lines = listed.text.splitlines()
    paths = [line[len("worktree ") :] for line in lines if line.startswith("worktree ")]
    return [p for p in paths if any(Path(p) == r or r in Path(p).parents for r in roots)]


async def unregister_worktrees(
    repo_top: Path, roots: Sequence[Path], *, lock_key: str | Path, state: Path | None = None
) -> None:
    """Drop the worktree entries of ``repo_top`` whose directory lies in one of ``roots``.

    Call after the directories are gone. Also undoes a ``git worktree add`` that was killed
    half-way: such an entry is still locked ("initializing"), which ``prune`` alone leaves.
    """
    try:
        async with repo_lock(lock_key, state=state):
            for path in await _worktrees_under(repo_top, roots):
                await run_git(["worktree", "unlock", path], cwd=repo_top, check=False)
            await run_git(["worktree", "prune"], cwd=repo_top, check=False)
    except (GitError, OSError):
        pass  # git is gone, or the repository: nothing is registered anywhere then


async def remove_paths(
    paths: Sequence[str],
    *,
    repo_top: str | None = None,
    lock_key: str | None = None,
    state: Path | None = None,
) -> list[str]:
    """Remove ``paths`` (only :func:`removable` ones), then their worktree entries in
    ``repo_top``. Returns the paths refused as not ours."""
    ours = [Path(p) for p in paths if removable(p)]
    refused = [p for p in paths if not removable(p)]
    for path in ours:
        await remove_tree(path)
    if repo_top is not None and await asyncio.to_thread(Path(repo_top).is_dir):
        await unregister_worktrees(Path(repo_top), ours, lock_key=lock_key or repo_top, state=state)
    return refused
