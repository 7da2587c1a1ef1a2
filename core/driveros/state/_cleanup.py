"""Removing what a lease registered: files and directories, and git worktree entries."""

from __future__ import annotations

import asyncio
import os
import shutil
from collections.abc import Collection, Sequence
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


def _is_ours(entry: Path, roots: Sequence[Path], names: Collection[str]) -> bool:
    """Whether the worktree entry ``entry`` (``<common>/worktrees/<id>``) is of a worktree in
    one of ``roots``. Blocking."""
    try:
        text = (entry / "gitdir").read_text("utf-8", "surrogateescape").strip()
    except FileNotFoundError:
        text = ""
    except OSError:
        return False
    if text:  # `<worktree>/.git`
        where = Path(text).parent
        return any(where == r or r in where.parents for r in roots)
    # A `worktree add` killed before it wrote the gitdir file: git names the entry after the
    # worktree's directory (a number appended when taken).
    return any(_named_after(entry.name, n) for n in names if n)


def _named_after(entry: str, name: str) -> bool:
    return entry == name or (entry.startswith(name) and entry[len(name) :].isdigit())


def _drop_entries(common: Path, roots: Sequence[Path], names: Collection[str]) -> None:
    try:
        entries = list((common / "worktrees").iterdir())
    except OSError:
        return  # no worktrees at all, or no repository any more
    for entry in entries:
        if entry.is_dir() and not entry.is_symlink() and _is_ours(entry, roots, names):
            shutil.rmtree(entry, ignore_errors=True)


async def drop_worktree_entries(
    common: Path, roots: Sequence[Path], names: Collection[str]
) -> None:
    """Remove the administrative entries (``<common>/worktrees/<id>``) of the worktrees in
    ``roots``, whatever state a ``git worktree add`` killed half-way left them in. Call under
    :func:`repo_lock` of ``common``.

    The entries are found from their files, never through ``git worktree list``: an entry
    whose ``commondir`` file was created but not yet written makes every git command that
    reads all worktrees fail (``worktree list`` and ``add``, ``gc``, ``rev-list --all``), and
    one still locked ("initializing") is one ``git worktree prune`` leaves forever. ``names``:
    the base names the worktrees' directories had in ``roots`` (an entry killed before git
    wrote where its worktree is is known by its name only).
    """
    resolved = [*roots, *[await asyncio.to_thread(r.resolve) for r in roots]]
    await asyncio.to_thread(_drop_entries, common, resolved, names)


async def unregister_worktrees(
    repo_top: Path,
    roots: Sequence[Path],
    *,
    lock_key: str | Path,
    names: Collection[str] = (),
    state: Path | None = None,
) -> None:
    """Drop the worktree entries of ``repo_top`` whose directory lies in one of ``roots``
    (see :func:`drop_worktree_entries`, ``names`` too), then prune the stale ones.

    Call after the directories are gone.
    """
    try:
        async with repo_lock(lock_key, state=state):
            found = await run_git(
                ["rev-parse", "--path-format=absolute", "--git-common-dir"],
                cwd=repo_top,
                check=False,
            )
            if found.returncode == 0 and found.text.strip():
                await drop_worktree_entries(Path(found.text.strip()), roots, names)
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
    ``repo_top``. Returns the paths refused as not ours.

    A worktree in ``paths`` is named after ``repo_top`` (a scratch worktree is), which finds
    its entry even when a ``git worktree add`` was killed before writing where it is.
    """
    ours = [Path(p) for p in paths if removable(p)]
    refused = [p for p in paths if not removable(p)]
    for path in ours:
        await remove_tree(path)
    if repo_top is not None and await asyncio.to_thread(Path(repo_top).is_dir):
        top = Path(repo_top)
        await unregister_worktrees(
            top, ours, lock_key=lock_key or repo_top, names={top.name or "workspace"}, state=state
        )
    return refused
