"""Small async git helpers for the dogfood commands (over :func:`driveros._git.run_git`)."""

from __future__ import annotations

from pathlib import Path

from driveros._git import run_git


async def git(repo: Path, *args: str, check: bool = True) -> str:
    """Run ``git -C repo args``; returns stdout. :class:`driveros.GitError` when it fails."""
    return (await run_git(args, cwd=repo, check=check)).text


async def repo_root(path: Path) -> Path:
    out = await git(path, "rev-parse", "--show-toplevel")
    return Path(out.strip())


async def git_dir(path: Path) -> Path:
    out = await git(path, "rev-parse", "--absolute-git-dir")
    return Path(out.strip())
