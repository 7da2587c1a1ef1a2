"""Small async git helpers for the dogfood commands."""

from __future__ import annotations

from pathlib import Path

from driveros._errors import DriverosError
from driveros._git import run_git


class GitError(DriverosError):
    """A git command failed (not a repository, nothing staged, ...)."""


async def git(repo: Path, *args: str, check: bool = True) -> str:
    """Run ``git -C repo args``; returns stdout. Never inherits our stdout."""
    try:
        code, out, err = await run_git(repo, *args)
    except FileNotFoundError as exc:
        raise GitError("git is not installed") from exc
    if check and code != 0:
        raise GitError(f"git {' '.join(args)} failed: {err.strip()}", exit_code=code)
    return out


async def repo_root(path: Path) -> Path:
    out = await git(path, "rev-parse", "--show-toplevel")
    return Path(out.strip())


async def git_dir(path: Path) -> Path:
    out = await git(path, "rev-parse", "--absolute-git-dir")
    return Path(out.strip())
