"""The user's repository as a scratch copy starts: what it is (:func:`repo_info`, its
configuration read once for every call at start) and, for a view, what its tree holds besides
the tracked files (:class:`Listings`, listed while the copy's directory is being made)."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import NamedTuple

from driveros._finish import thread_to_the_end
from driveros._git import GitRepo, GitResult, read_config, run_git, split_z
from driveros.review._hiding import user_ignored

#: Directories skipped even without a .gitignore saying so: never copied unless tracked by
#: git, and never reported as changes (tool caches and environments, not source).
DEFAULT_EXCLUDES: tuple[str, ...] = (
    ".git/",
    ".hg/",
    ".svn/",
    ".venv/",
    "node_modules/",
    "__pycache__/",
    ".pytest_cache/",
    ".mypy_cache/",
    ".ruff_cache/",
)
EXCLUDED_DIRS = frozenset(e.rstrip("/") for e in DEFAULT_EXCLUDES)
EXCLUDES_TEXT = "".join(f"{e}\n" for e in DEFAULT_EXCLUDES)


def untracked_excluded(entry: str) -> bool:
    """An untracked status entry inside a directory of DEFAULT_EXCLUDES (not copied)."""
    return entry.startswith("??") and not EXCLUDED_DIRS.isdisjoint(entry[3:].split("/")[:-1])


class Repo(NamedTuple):
    """The user's repository around a workspace."""

    top: Path  #: its top level
    prefix: str  #: the workspace's path in it ("" or "sub/dir/")
    common: Path  #: its common git directory
    head: str  #: the HEAD commit
    config: GitResult  #: its configuration, read once for the calls at start (see run_git)


async def repo_info(workspace: Path) -> Repo | None:
    """The repository ``workspace`` is in, when it has a HEAD: one ``git rev-parse`` (it exits
    1 on an unborn branch, which has nothing to check out: copy instead)."""
    config = await read_config(workspace)
    code, out, _ = await run_git(
        [
            "rev-parse",
            "--show-toplevel",
            "--show-prefix",
            "--git-common-dir",
            "--verify",
            "-q",
            "HEAD^{commit}",
        ],
        cwd=workspace,
        repo=GitRepo(config=config),
        check=False,
    )
    if code != 0:
        return None
    lines = out.decode("utf-8", "surrogateescape").splitlines()
    if len(lines) != 4 or not lines[0] or not lines[3]:
        return None
    common = Path(lines[2])
    if not common.is_absolute():
        common = workspace / common
    resolved = await thread_to_the_end(common.resolve)
    return Repo(Path(lines[0]), lines[1], resolved, lines[3], config)


async def user_untracked(repo: Repo) -> list[str]:
    """The untracked files of the user's tree that a copy would take."""
    _, out, _ = await run_git(
        ["ls-files", "-z", "--others", "--exclude-standard"],
        cwd=repo.top,
        repo=GitRepo(config=repo.config),
    )
    return [p for p in split_z(out) if not untracked_excluded(f"?? {p}")]


class Listings:
    """The ignored and the untracked files of the user's tree (for a view of its repository),
    listed from the moment the repository is known, while the scratch directory is made."""

    def __init__(self, repo: Repo) -> None:
        self.ignored = asyncio.ensure_future(user_ignored(repo.top, config=repo.config))
        self.untracked = asyncio.ensure_future(user_untracked(repo))

    async def close(self) -> None:
        """Cancel what still runs and wait for it (its git is killed and reaped)."""
        for task in (self.ignored, self.untracked):
            task.cancel()
        await asyncio.gather(self.ignored, self.untracked, return_exceptions=True)
