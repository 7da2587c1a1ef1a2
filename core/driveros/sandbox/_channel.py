"""A channel: one started process group with piped stdio, the same shape on every tier.

Sessions, the process host and the docker tier's ``run()`` are written once against
:class:`Channel`; :class:`LocalChannel` backs it with a host subprocess, the docker tier
with an exec in its container.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Protocol

from driveros.sandbox._contained import ContainedHost, ContainedProcess
from driveros.sandbox._hostproc import TIMEOUT_EXIT, shell_exit_code, spawn_error
from driveros.sandbox._output import CappedBuffer
from driveros.sandbox._protocol import CommandResult
from driveros.sandbox._watchdog import Watchdog, kill_group, start_group

STDOUT = 1
STDERR = 2


class Channel(Protocol):
    """A running process group: feed stdin, read tagged output, signal the whole group."""

    async def write(self, data: bytes) -> None: ...

    async def close_stdin(self) -> None: ...

    async def read(self) -> tuple[int, bytes] | None:
        """The next output chunk as ``(STDOUT|STDERR, data)``; None once both streams ended."""
        ...

    async def signal(self, signum: int) -> None:
        """Send ``signum`` to the channel's whole process group (gone already is fine)."""
        ...

    async def wait(self) -> int:
        """The exit code (shell convention: 128+N for death by signal N)."""
        ...

    async def aclose(self) -> None:
        """Kill the group if still running and release everything; idempotent."""
        ...


class LocalChannel:
    """A process in its own session: on the host (tracked by the sandbox's watchdog) or in
    the local sandbox (``ContainedProcess``: it dies with the sandbox)."""

    def __init__(
        self, proc: asyncio.subprocess.Process | ContainedProcess, watchdog: Watchdog
    ) -> None:
        self._proc = proc
        self._watchdog = watchdog
        self._queue: asyncio.Queue[tuple[int, bytes] | None] = asyncio.Queue()
        self._open_streams = 2
        self._closed = False
        assert proc.stdout is not None and proc.stderr is not None
        self._pumps = [
            asyncio.ensure_future(self._pump(proc.stdout, STDOUT)),
            asyncio.ensure_future(self._pump(proc.stderr, STDERR)),
        ]
        # A host process's group is tracked from its start (:func:`start_group`).

    @classmethod
    async def start(
        cls,
        argv: list[str],
        *,
        cwd: Path,
        env: Mapping[str, str],
        watchdog: Watchdog,
        host: ContainedHost | None = None,
    ) -> LocalChannel:
        """Start ``argv``; with ``host`` inside that local sandbox."""
        try:
            if host is not None:
                return cls(await host.spawn(argv, cwd=cwd, env=env, stdin_pipe=True), watchdog)
            proc = await start_group(
                watchdog,
                *argv,
                cwd=cwd,
                env=dict(env),
                stdin=asyncio.subprocess.PIPE,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE,
            )
        except OSError as exc:
            raise spawn_error(argv, exc) from exc
        return cls(proc, watchdog)

    @property
    def pid(self) -> int:
        return self._proc.pid

    async def _pump(self, reader: asyncio.StreamReader, tag: int) -> None:
        try:
            while chunk := await reader.read(64 * 1024):
                self._queue.put_nowait((tag, chunk))
        finally:
            self._open_streams -= 1
            if self._open_streams == 0:
                self._queue.put_nowait(None)

    async def write(self, data: bytes) -> None:
        stdin = self._proc.stdin
        assert stdin is not None
        stdin.write(data)
        await stdin.drain()

    async def close_stdin(self) -> None:
        stdin = self._proc.stdin
        if stdin is not None and not stdin.is_closing():
            stdin.close()

    async def read(self) -> tuple[int, bytes] | None:
        item = await self._queue.get()
        if item is None:
            self._queue.put_nowait(None)  # later readers see the end too
        return item

    async def signal(self, signum: int) -> None:
        if self._closed:
            return
        if isinstance(self._proc, ContainedProcess):
            self._proc.signal_group(signum)
            return
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self._proc.pid, signum)

    async def wait(self) -> int:
        return shell_exit_code(await self._proc.wait())

    async def aclose(self) -> None:
        if self._closed:
            return
        proc = self._proc
        if isinstance(proc, ContainedProcess):
            proc.kill_group()
        else:
            kill_group(proc.pid)
        self._closed = True
        if not isinstance(proc, ContainedProcess):
            with contextlib.suppress(ProcessLookupError):
                proc.kill()
        await proc.wait()
        for task in self._pumps:
            task.cancel()
        await asyncio.gather(*self._pumps, return_exceptions=True)
        if proc.stdin is not None:
            proc.stdin.close()
        if isinstance(proc, ContainedProcess):
            proc.finish()
        else:
            self._watchdog.untrack_group(proc.pid)


async def stop_gracefully(channel: Channel, grace: float) -> int:
    """SIGTERM the group, SIGKILL it after ``grace`` seconds; the exit code."""
    await channel.signal(signal.SIGTERM)
    try:
        async with asyncio.timeout(grace):
            return await channel.wait()
    except TimeoutError:
        await channel.signal(signal.SIGKILL)
        return await channel.wait()


async def run_on_channel(
    channel: Channel, *, stdin: bytes | None, timeout: float | None, cap: int
) -> CommandResult:
    """Feed ``stdin``, collect capped output until the channel ends; kill it on timeout.

    The channel is closed (its group killed) when this returns or raises.
    """
    started = time.monotonic()
    out, err = CappedBuffer(cap), CappedBuffer(cap)

    async def feed() -> None:
        with contextlib.suppress(OSError):
            if stdin:
                await channel.write(stdin)
            await channel.close_stdin()

    async def collect() -> None:
        while (item := await channel.read()) is not None:
            tag, data = item
            (out if tag == STDOUT else err).write(data)

    timed_out = False
    feeder = asyncio.ensure_future(feed())
    try:
        try:
            async with asyncio.timeout(timeout):
                await collect()
        except TimeoutError:
            timed_out = True
            await channel.signal(signal.SIGKILL)
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(5):
                    await collect()
        code = await channel.wait()
    finally:
        feeder.cancel()
        await asyncio.gather(feeder, return_exceptions=True)
        await channel.aclose()
    return CommandResult(
        stdout=out.text(),
        stderr=err.text(),
        exit_code=TIMEOUT_EXIT if timed_out else code,
        duration_ms=(time.monotonic() - started) * 1000,
        timed_out=timed_out,
        stdout_truncated=out.truncated,
        stderr_truncated=err.truncated,
        output_cap=cap,
    )
