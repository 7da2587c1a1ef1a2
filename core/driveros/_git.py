"""One way to run ``git`` from async code: no stdin, captured output, killed when abandoned."""

from __future__ import annotations

import asyncio
from pathlib import Path


async def run_git(cwd: Path, *args: str, timeout: float | None = None) -> tuple[int, str, str]:
    """Run ``git -C cwd args``; returns ``(exit code, stdout, stderr)`` decoded as UTF-8.

    Never inherits our stdin or stdout. Raises ``OSError`` when git cannot be started and
    ``TimeoutError`` after ``timeout`` seconds; on a timeout or cancellation git is killed
    and reaped before the exception propagates.
    """
    proc = await asyncio.create_subprocess_exec(
        "git",
        "-C",
        str(cwd),
        *args,
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    try:
        async with asyncio.timeout(timeout):
            out, err = await proc.communicate()
    except (asyncio.CancelledError, TimeoutError):
        if proc.returncode is None:
            proc.kill()
            await proc.wait()
        raise
    assert proc.returncode is not None
    return proc.returncode, out.decode("utf-8", "replace"), err.decode("utf-8", "replace")
