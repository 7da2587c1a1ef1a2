"""A watchdog process per sandbox: it outlives its owner just long enough to clean up.

The owner keeps a pipe to the watchdog's stdin and tells it, line by line, which process
groups, containers and scratch directories the sandbox currently holds. When the pipe reaches
EOF (``aclose()``, or the owner died, even by SIGKILL) the watchdog kills every group, removes
every container and deletes every directory still listed, then exits.

Protocol lines: ``+pg <pgid>``, ``-pg <pgid>``, ``+ct <container id>``, ``-ct <id>``,
``+dir <path>``, ``-dir <path>``, ``docker <base_url>`` (how to reach the daemon for ``+ct``).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import sys
from pathlib import Path
from typing import Any

from driveros._finish import finish_then_reraise

#: The watchdog program itself: stdlib only, so it starts in milliseconds.
_SCRIPT = Path(__file__).with_name("_watchdog_proc.py")


def kill_group(pgid: int) -> None:
    """SIGKILL a whole process group; a group already gone is fine."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signal.SIGKILL)


async def start_group(
    watchdog: Watchdog | None, *argv: str, **options: Any
) -> asyncio.subprocess.Process:
    """``create_subprocess_exec(*argv, **options)`` as the leader of a new session, whose
    group ``watchdog`` tracks from the moment it exists.

    A cancellation while it starts never cuts the start short: asyncio would then kill the
    leader alone, and what it had already forked stays (bubblewrap's first process, cloned
    into its namespaces and waiting for bubblewrap to set them up, then waits forever with
    ppid 1). The start finishes, the whole group is killed and reaped, then the cancellation
    is raised. ``OSError`` when the program cannot be started.
    """
    started: list[asyncio.subprocess.Process] = []

    async def spawn() -> asyncio.subprocess.Process:
        proc = await asyncio.create_subprocess_exec(*argv, start_new_session=True, **options)
        started.append(proc)
        return proc

    try:
        proc = await finish_then_reraise(spawn())
    except asyncio.CancelledError:
        for leader in started:
            kill_group(leader.pid)
            with contextlib.suppress(ProcessLookupError):
                leader.kill()
            await asyncio.shield(leader.wait())
        raise
    if watchdog is not None:
        watchdog.track_group(proc.pid)
    return proc


class Watchdog:
    """The owner's side: spawn the watchdog and keep it informed."""

    def __init__(self) -> None:
        self._proc: asyncio.subprocess.Process | None = None

    @property
    def pid(self) -> int | None:
        return self._proc.pid if self._proc else None

    async def start(self) -> None:
        if self._proc is not None:
            return
        # Run as a plain script in isolated mode (-I): stdlib only, nothing of ours imported,
        # so it is up in milliseconds and immune to the caller's PYTHON* variables.
        self._proc = await asyncio.create_subprocess_exec(
            sys.executable,
            "-I",
            str(_SCRIPT),
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.DEVNULL,
            stderr=None,  # inherited: only a failure to clean up would print anything
            env={"PATH": "/usr/bin:/bin"},
            start_new_session=True,
        )

    def _send(self, line: str) -> None:
        if self._proc is None or self._proc.stdin is None or self._proc.stdin.is_closing():
            return
        self._proc.stdin.write(line.encode() + b"\n")

    def track_group(self, pgid: int) -> None:
        self._send(f"+pg {pgid}")

    def untrack_group(self, pgid: int) -> None:
        self._send(f"-pg {pgid}")

    def track_container(self, container_id: str, base_url: str) -> None:
        self._send(f"docker {base_url}")
        self._send(f"+ct {container_id}")

    def untrack_container(self, container_id: str) -> None:
        self._send(f"-ct {container_id}")

    def track_dir(self, path: str) -> None:
        """A scratch directory to delete if the owner dies before removing it."""
        self._send(f"+dir {path}")

    def untrack_dir(self, path: str) -> None:
        self._send(f"-dir {path}")

    async def aclose(self) -> None:
        proc, self._proc = self._proc, None
        if proc is None:
            return
        if proc.stdin is not None:
            proc.stdin.close()
            with contextlib.suppress(ConnectionError):
                await proc.stdin.wait_closed()
        try:
            async with asyncio.timeout(10):
                await proc.wait()
        except TimeoutError:
            with contextlib.suppress(ProcessLookupError):
                proc.kill()
            await proc.wait()
