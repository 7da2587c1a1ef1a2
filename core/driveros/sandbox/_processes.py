"""The process host: long-lived processes (dev servers, watchers) read incrementally."""

from __future__ import annotations

import asyncio
import contextlib
import itertools
from collections.abc import Awaitable, Callable

from pydantic import BaseModel, ConfigDict

from driveros.sandbox._channel import STDOUT, Channel, stop_gracefully
from driveros.sandbox._protocol import DEFAULT_OUTPUT_CAP, ProcessNotFoundError

#: Opens a channel running ``command`` in a workspace-relative cwd with extra env.
ChannelOpener = Callable[[str, str, dict[str, str] | None], Awaitable[Channel]]


class ProcessOutput(BaseModel):
    """What a background process wrote since the previous ``read()``."""

    model_config = ConfigDict(frozen=True)

    stdout: str
    stderr: str
    running: bool
    exit_code: int | None = None
    #: Bytes dropped because nobody read them before the unread buffer filled up.
    dropped: int = 0


class _Unread:
    """Unread bytes of one stream; the oldest are dropped past ``cap``."""

    def __init__(self, cap: int) -> None:
        self.cap = cap
        self.data = bytearray()
        self.dropped = 0

    def add(self, chunk: bytes) -> None:
        self.data += chunk
        if len(self.data) > self.cap:
            extra = len(self.data) - self.cap
            del self.data[:extra]
            self.dropped += extra

    def take(self) -> tuple[bytes, int]:
        data, dropped = bytes(self.data), self.dropped
        self.data.clear()
        self.dropped = 0
        return data, dropped


class BackgroundProcess:
    """One process started by the host; its output is buffered until read."""

    def __init__(self, process_id: str, command: str, channel: Channel, cap: int) -> None:
        self.id = process_id
        self.command = command
        self._channel = channel
        self._out = _Unread(cap)
        self._err = _Unread(cap)
        self._changed = asyncio.Event()
        self._exit_code: int | None = None
        self._pump = asyncio.ensure_future(self._run())

    async def _run(self) -> None:
        while (item := await self._channel.read()) is not None:
            tag, data = item
            (self._out if tag == STDOUT else self._err).add(data)
            self._changed.set()
        self._exit_code = await self._channel.wait()
        self._changed.set()

    @property
    def running(self) -> bool:
        return self._exit_code is None

    @property
    def exit_code(self) -> int | None:
        return self._exit_code

    async def read(self, *, wait: float = 0.0) -> ProcessOutput:
        """Output since the last read; with ``wait``, block up to that long for something new."""
        out, err, dropped = await self.read_raw(wait=wait)
        return ProcessOutput(
            stdout=out.decode("utf-8", "replace"),
            stderr=err.decode("utf-8", "replace"),
            running=self.running,
            exit_code=self._exit_code,
            dropped=dropped,
        )

    async def read_raw(self, *, wait: float = 0.0) -> tuple[bytes, bytes, int]:
        """Like :meth:`read`, undecoded (a framed protocol counts bytes, and a multi-byte
        character may straddle two reads): ``(stdout, stderr, bytes dropped)``."""
        if wait > 0 and not self._out.data and not self._err.data and self.running:
            self._changed.clear()
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(wait):
                    await self._changed.wait()
        out, dropped_out = self._out.take()
        err, dropped_err = self._err.take()
        return out, err, dropped_out + dropped_err

    async def wait(self, timeout: float | None = None) -> int | None:
        """The exit code once the process ended; None if ``timeout`` passed first."""
        try:
            async with asyncio.timeout(timeout):
                await asyncio.shield(self._pump)
        except TimeoutError:
            return None
        return self._exit_code

    async def write(self, data: bytes) -> None:
        """Feed the process's stdin."""
        await self._channel.write(data)

    async def close_stdin(self) -> None:
        await self._channel.close_stdin()

    async def stop(self, *, grace: float = 2.0) -> int | None:
        """SIGTERM the whole group, SIGKILL after ``grace`` seconds; the exit code."""
        if self.running:
            with contextlib.suppress(OSError):
                await stop_gracefully(self._channel, grace)
        await self._channel.aclose()
        with contextlib.suppress(asyncio.CancelledError):
            async with asyncio.timeout(grace + 5):
                await asyncio.shield(self._pump)
        if not self._pump.done():
            self._pump.cancel()
        return self._exit_code


class ProcessHost:
    """Starts and tracks background processes for one sandbox; ``aclose()`` stops them all."""

    def __init__(self, opener: ChannelOpener, *, output_cap: int = DEFAULT_OUTPUT_CAP) -> None:
        self._opener = opener
        self._cap = output_cap
        self._procs: dict[str, BackgroundProcess] = {}
        self._ids = itertools.count(1)

    async def start(
        self, command: str, *, cwd: str = ".", env: dict[str, str] | None = None
    ) -> BackgroundProcess:
        channel = await self._opener(command, cwd, env)
        proc = BackgroundProcess(f"p{next(self._ids)}", command, channel, self._cap)
        self._procs[proc.id] = proc
        return proc

    def get(self, process_id: str) -> BackgroundProcess:
        try:
            return self._procs[process_id]
        except KeyError:
            raise ProcessNotFoundError(
                f"no background process {process_id!r}", process_id=process_id
            ) from None

    def list(self) -> list[BackgroundProcess]:
        return list(self._procs.values())

    async def aclose(self) -> None:
        procs, self._procs = list(self._procs.values()), {}
        await asyncio.gather(*(p.stop(grace=0.5) for p in procs), return_exceptions=True)
