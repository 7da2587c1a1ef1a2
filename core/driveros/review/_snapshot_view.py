"""A scratch copy as an overlay view: mounting it (of a repository, or of a plain directory)
and recording its baseline from the user's tree, never through the view."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from driveros._finish import thread_to_the_end
from driveros._git import run_git, split_z
from driveros._together import both
from driveros.review._hiding import hidden_of, mount_view, untracked_environments
from driveros.review._layout import Layout
from driveros.review._private import dirty_paths, init_private, too_big, user_excludes, user_status
from driveros.review._stage import stage
from driveros.review._user_repo import EXCLUDES_TEXT, Listings


async def populate_overlay(
    lay: Layout, top: Path, listings: Listings, max_file_size: int, hide: list[str]
) -> tuple[str | None, list[str]]:
    """Mount the view (nothing is checked out or copied) and take the untracked files from
    ``listings``, those over the size limit in ``lay.left_out``; (None, or why it cannot
    mount; the untracked files the baseline takes). The rest of the baseline is recorded
    afterwards, by :func:`overlay_baseline`: the mount waits for neither the status nor the
    private repository."""

    async def view() -> str | None:
        # The listing of ignored paths refreshes nothing (unlike the status): the mount does
        # not wait for a stat of every tracked file.
        ignored = await listings.ignored
        keep = await untracked_environments(lay, top, ignored)
        hidden = await thread_to_the_end(hidden_of, lay, top, ignored, keep=keep)
        return await mount_view(lay, top, [*hide, *hidden])

    # Cleanup never races a mount still being made (both finish first).
    why, listed = await both(view(), listings.untracked)
    return why, await taken(lay, top, listed, max_file_size)


async def overlay_baseline(
    lay: Layout, top: Path, common: Path, head: str, untracked: list[str]
) -> None:
    """The baseline of a view of a repository: ``HEAD`` plus the user's changed tracked files
    and ``untracked`` (listed before the mount), hashed from the user's tree itself (the
    lower layer), so a file written in the view meanwhile never enters it. The status of the
    tracked files and the private repository with ``HEAD`` read into its index run
    concurrently."""

    async def private() -> None:
        text = await thread_to_the_end(user_excludes, common)
        await init_private(lay.git_dir, excludes=text, alternates=common / "objects")
        # The baseline starts as HEAD (the user's dirty files are added below); read from
        # the private repository alone, it needs neither the status nor the mount.
        private = lay.private_store
        await run_git(["read-tree", head], cwd=lay.git_dir, repo=private)

    async def changed() -> list[str]:
        _, status, _ = await user_status(top, untracked=False)
        return await dirty_paths(lay, top, status, 0)

    paths, _ = await both(changed(), private())
    await stage(lay, top, [*paths, *untracked])


async def populate_overlay_plain(
    lay: Layout, max_file_size: int, hide: list[str]
) -> tuple[str | None, list[str]]:
    """A view of a directory that is not a repository; (None, or why it cannot mount; the
    files its baseline takes). The baseline is what ``copy`` would copy (``.gitignore`` and
    :data:`DEFAULT_EXCLUDES` honoured, big files left out in ``lay.left_out``), hashed later
    (:func:`build`'s settle) from the user's directory itself, never through the view;
    nothing is copied or checked out. What ``copy`` leaves out (ignored paths) and untracked
    deny-listed secret files are hidden, and never hashed."""
    await init_private(lay.git_dir, excludes=EXCLUDES_TEXT, alternates=None)
    _, status, _ = await user_status(lay.workspace, ignored=True, git_dir=lay.git_dir)
    entries = [e for e in split_z(status) if len(e) > 3]
    ignored = [e[3:] for e in entries if e.startswith("!!")]
    untracked = [e[3:] for e in entries if e.startswith("??")]
    hidden = await thread_to_the_end(hidden_of, lay, lay.workspace, ignored, untracked)
    why = await mount_view(lay, lay.workspace, [*hide, *hidden])
    if why is not None:
        return why, []
    return None, await taken(lay, lay.workspace, untracked, max_file_size, lay.hidden)


async def taken(
    lay: Layout, root: Path, untracked: list[str], max_file_size: int, hidden: Sequence[str] = ()
) -> list[str]:
    """The ``untracked`` files (of ``root``) a view's baseline takes: not those over
    ``max_file_size`` (set as ``lay.left_out``; 0: no limit), nor the ``hidden`` ones."""
    limit = max_file_size
    lay.left_out = await thread_to_the_end(too_big, root, untracked, limit) if limit else []
    skip = {*lay.left_out, *hidden}
    return [p for p in untracked if p not in skip]
