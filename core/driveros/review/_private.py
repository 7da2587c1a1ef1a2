"""The private repository of a scratch copy and the reads of the user's tree it starts from:
its excludes and bare repository, the user's ``git status``, the changed paths it lists and
the untracked files too big to copy or hash."""

from __future__ import annotations

import stat
from pathlib import Path

from driveros._finish import thread_to_the_end
from driveros._git import GitRepo, GitResult, run_git, split_z
from driveros.review._layout import Layout
from driveros.review._user_repo import EXCLUDES_TEXT, untracked_excluded


def user_excludes(common: Path) -> str:
    """The private repository's excludes for a copy of the user's repository: the user's own
    ``info/exclude`` and :data:`DEFAULT_EXCLUDES`."""
    user_exclude = common / "info" / "exclude"
    own = user_exclude.read_text("utf-8", "replace") if user_exclude.is_file() else ""
    return f"{own}\n{EXCLUDES_TEXT}"


async def init_private(git_dir: Path, *, excludes: str, alternates: Path | None) -> None:
    await run_git(
        ["init", "--bare", "-q", str(git_dir)], cwd=git_dir.parent, repo=GitRepo(scratch=True)
    )

    def write() -> None:
        info = git_dir / "info"
        info.mkdir(exist_ok=True)
        (info / "exclude").write_text(excludes, encoding="utf-8")
        if alternates is not None:
            (git_dir / "objects" / "info" / "alternates").write_text(
                f"{alternates}\n", encoding="utf-8"
            )

    await thread_to_the_end(write)


async def user_status(
    top: Path, *, ignored: bool = False, untracked: bool = True, git_dir: Path | None = None
) -> GitResult:
    """``git status`` of the user's tree (every untracked file, no renames): what differs from
    ``HEAD``, read the same way by every strategy. ``ignored``: the ignored paths too (``!!``
    entries; an ignored directory once, not its contents, unless it holds a tracked file).
    ``untracked=False``: the tracked files only (the untracked ones listed apart).
    ``git_dir``: a private repository whose work tree ``top`` is (a plain directory)."""
    return await run_git(
        [
            "--no-optional-locks",
            "status",
            "--porcelain=v1",
            "-z",
            f"--untracked-files={'all' if untracked else 'no'}",
            *(["--ignored=matching"] if ignored else []),
            "--no-renames",
            "--ignore-submodules=all",
        ],
        cwd=top,
        repo=GitRepo(
            git_dir=git_dir,
            work_tree=top if git_dir is not None else None,
            scratch=git_dir is not None,
        ),
    )


async def dirty_paths(lay: Layout, top: Path, status: bytes, max_file_size: int) -> list[str]:
    """The paths ``git status -z`` lists as changed or untracked (not ignored ones), less the
    untracked files over ``max_file_size`` (recorded in ``lay.left_out``)."""
    entries = [
        e
        for e in split_z(status)
        if len(e) > 3 and not e.startswith("!!") and not untracked_excluded(e)
    ]
    if max_file_size:
        untracked = [e[3:] for e in entries if e.startswith("??")]
        lay.left_out = await thread_to_the_end(too_big, top, untracked, max_file_size)
    skip = set(lay.left_out)
    return [e[3:] for e in entries if e[3:] not in skip]


def too_big(root: Path, relpaths: list[str], limit: int) -> list[str]:
    """The regular files among ``relpaths`` (under ``root``) larger than ``limit`` bytes."""
    out: list[str] = []
    for rel in relpaths:
        try:
            st = (root / rel).lstat()
        except OSError:
            continue
        if stat.S_ISREG(st.st_mode) and st.st_size > limit:
            out.append(rel)
    return out
