"""Running git as an asyncio subprocess: never blocks the loop, killed on cancellation."""

from __future__ import annotations

import asyncio
import contextlib
import shutil
from collections.abc import Sequence
from pathlib import Path

from driveros.review._errors import GitError, GitNotFoundError

#: Added to every git call on the user's repository (``raw``): no hook and no fsmonitor daemon
#: runs on driveros' behalf. Only ``commit`` lifts the hooks part (``user_hooks``), after
#: :func:`driveros.review._hooks.refuse_hook_changes` found no hook path among its changes.
NEUTRAL_CONFIG: tuple[str, ...] = ("-c", "core.fsmonitor=false", "-c", "core.hooksPath=/dev/null")

#: Options that make our own git calls independent of user config that would change bytes or
#: start background daemons or hooks (the scratch copy never needs either).
SAFE_CONFIG: tuple[str, ...] = (
    "-c",
    "core.hooksPath=/dev/null",
    "-c",
    "core.autocrlf=false",
    "-c",
    "core.safecrlf=false",
    "-c",
    "core.fsmonitor=false",
    "-c",
    "core.quotePath=false",
    "-c",
    "gc.auto=0",
)


def git_executable() -> str:
    exe = shutil.which("git")
    if exe is None:
        raise GitNotFoundError("git is not installed or not on PATH; scratch copies need it")
    return exe


async def run_git(
    args: Sequence[str],
    *,
    cwd: Path,
    stdin: bytes | None = None,
    check: bool = True,
    git_dir: Path | None = None,
    work_tree: Path | None = None,
    raw: bool = False,
    user_hooks: bool = False,
) -> tuple[int, bytes, bytes]:
    """Run ``git args`` in ``cwd``; returns (returncode, stdout, stderr).

    With ``check`` a non-zero exit raises :class:`GitError`. Cancellation kills the process
    and waits for it, so no git process outlives its caller. ``raw`` runs with the user's own
    configuration (for commands on the user's repository: status, worktree, commit), minus
    hooks and fsmonitor (:data:`NEUTRAL_CONFIG`); ``user_hooks`` keeps the user's hooks (only
    for a commit whose changes touch no hook path, and to read where the hooks are).
    """
    # Paths we pass are file names, never patterns ("a[1].txt", ":x" are plain names).
    argv: list[str] = [git_executable(), "--literal-pathspecs"]
    if not raw:
        argv.extend(SAFE_CONFIG)
    elif user_hooks:
        argv.extend(NEUTRAL_CONFIG[:2])
    else:
        argv.extend(NEUTRAL_CONFIG)
    if git_dir is not None:
        argv.append(f"--git-dir={git_dir}")
    if work_tree is not None:
        argv.append(f"--work-tree={work_tree}")
    argv.extend(args)
    try:
        proc = await asyncio.create_subprocess_exec(
            *argv,
            cwd=cwd,
            stdin=asyncio.subprocess.PIPE if stdin is not None else asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )
    except OSError as exc:
        raise GitError(f"cannot run git: {exc}", args=list(args), cwd=str(cwd)) from exc
    try:
        out, err = await proc.communicate(stdin)
    except BaseException:
        with contextlib.suppress(ProcessLookupError):
            proc.kill()
        await asyncio.shield(proc.wait())
        raise
    code = proc.returncode if proc.returncode is not None else -1
    if check and code != 0:
        text = err.decode("utf-8", "replace").strip()
        raise GitError(
            f"git {' '.join(args[:2])} failed: {text or f'exit {code}'}",
            args=list(args),
            returncode=code,
            stderr=text,
            cwd=str(cwd),
        )
    return code, out, err


def split_z(data: bytes) -> list[str]:
    """Split NUL-separated git output into paths (decoded with surrogateescape)."""
    return [p.decode("utf-8", "surrogateescape") for p in data.split(b"\0") if p]
