"""Small async git helpers for the dogfood commands."""

from __future__ import annotations

import asyncio
from pathlib import Path

from driveros._errors import DriverosError


class GitError(DriverosError):
    """A git command failed (not a repository, nothing staged, ...)."""


async def git(repo: Path, *args: str, check: bool = True) -> str:
    """Run ``git -C repo args``; returns stdout. Never inherits our stdout."""
    try:
        proc = await asyncio.create_subprocess_exec(
            "git",
            "-C",
            str(repo),
            *args,
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )
    except FileNotFoundError as exc:
        raise GitError("git is not installed") from exc
    try:
        out, err = await proc.communicate()
    except asyncio.CancelledError:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()
        raise
    if check and proc.returncode != 0:
        raise GitError(
            f"git {' '.join(args)} failed: {err.decode(errors='replace').strip()}",
            exit_code=proc.returncode,
        )
    return out.decode("utf-8", errors="replace")


async def repo_root(path: Path) -> Path:
    out = await git(path, "rev-parse", "--show-toplevel")
    return Path(out.strip())


async def git_dir(path: Path) -> Path:
    out = await git(path, "rev-parse", "--absolute-git-dir")
    return Path(out.strip())
