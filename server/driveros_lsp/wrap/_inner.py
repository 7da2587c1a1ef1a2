"""The wrapped language server: a child process spoken to in ``Content-Length`` frames.

It is the user's own server, started as the user asked (``driveros-lsp --wrap -- CMD…``), with
the environment and working directory driveros-lsp has, as the editor would have started it.
Its stderr is copied to driveros-lsp's stderr line by line, and the last lines are kept for
the report when it exits on its own.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import logging
import os
import re
import shlex
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

logger = logging.getLogger(__name__)

#: Lines of the inner server's stderr kept for the report of its exit.
STDERR_TAIL = 12
#: Seconds the inner server gets to exit after ``exit`` (or end of input), then SIGTERM, then
#: as long again before SIGKILL.
STOP_GRACE_S = 2.0
_LIMIT = 2**24
_NAME_LIMIT = 120
_HEADER = re.compile(rb"^content-length\s*:\s*(\d+)\s*$", re.IGNORECASE)


def frame(body: bytes) -> bytes:
    """``body`` as one framed message."""
    return b"Content-Length: %d\r\n\r\n" % len(body) + body


async def read_frames(reader: Any) -> AsyncIterator[bytes]:
    """The bodies of the framed messages ``reader`` carries, until it ends (a truncated last
    message is dropped). ``reader`` has ``readline`` and ``readexactly``."""
    length: int | None = None
    while True:
        line: bytes = await reader.readline()
        if not line:
            return
        if line.strip():
            found = _HEADER.match(line.strip())
            if found:
                length = int(found.group(1))
            continue
        if length is None:
            continue
        try:
            body: bytes = await reader.readexactly(length)
        except asyncio.IncompleteReadError:
            return
        if len(body) < length:
            return
        length = None
        yield body


class FrameWriter:
    """A writer (pygls' shape) that hands on the body of every framed message written to it."""

    def __init__(self, deliver: Callable[[bytes], None]) -> None:
        self._deliver = deliver
        self._buffer = b""

    def write(self, data: bytes) -> None:
        self._buffer += data
        while (end := self._buffer.find(b"\r\n\r\n")) >= 0:
            header = self._buffer[:end].decode("ascii", "replace")
            length = next(
                (
                    int(v)
                    for k, _, v in (h.partition(":") for h in header.split("\r\n"))
                    if k.strip().lower() == "content-length"
                ),
                0,
            )
            if len(self._buffer) < end + 4 + length:
                return
            body = self._buffer[end + 4 : end + 4 + length]
            self._buffer = self._buffer[end + 4 + length :]
            self._deliver(body)

    def close(self) -> None:
        pass


class InnerServer:
    """The child process; :meth:`start` then :meth:`frames`, :meth:`send`, :meth:`stop`."""

    def __init__(self, argv: list[str]) -> None:
        self.argv = argv
        self._proc: asyncio.subprocess.Process | None = None
        self._tail: collections.deque[str] = collections.deque(maxlen=STDERR_TAIL)
        self._stderr_task: asyncio.Task[None] | None = None

    @property
    def name(self) -> str:
        """The command, for messages: its program's name and arguments, in one short line."""
        line = shlex.join([Path(self.argv[0]).name, *self.argv[1:]])
        return line if len(line) <= _NAME_LIMIT else line[: _NAME_LIMIT - 1] + "…"

    async def start(self) -> None:
        """Start the process; OSError when it cannot be (not found, not executable)."""
        self._proc = await asyncio.create_subprocess_exec(
            *self.argv,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            limit=_LIMIT,
        )
        self._stderr_task = asyncio.ensure_future(self._copy_stderr())

    def _process(self) -> asyncio.subprocess.Process:
        assert self._proc is not None, "start() first"
        return self._proc

    def frames(self) -> AsyncIterator[bytes]:
        stdout = self._process().stdout
        assert stdout is not None
        return read_frames(stdout)

    def send(self, body: bytes) -> None:
        """Write one framed message (dropped once the process's input is closed)."""
        stdin = self._process().stdin
        if stdin is None or stdin.is_closing():
            return
        stdin.write(frame(body))

    async def _copy_stderr(self) -> None:
        stderr = self._process().stderr
        assert stderr is not None
        prefix = f"[{Path(self.argv[0]).name}] "
        while line := await stderr.readline():
            text = line.decode("utf-8", "replace").rstrip("\n")
            self._tail.append(text)
            with contextlib.suppress(OSError):
                os.write(2, (prefix + text + "\n").encode("utf-8", "replace"))

    def stderr_tail(self) -> list[str]:
        return list(self._tail)

    async def returncode(self) -> int | None:
        """The exit status, once the process has ended (waits up to :data:`STOP_GRACE_S`)."""
        proc = self._process()
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(proc.wait(), STOP_GRACE_S)
        if self._stderr_task is not None:  # the last lines, for the report
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(asyncio.shield(self._stderr_task), 0.5)
        return proc.returncode

    async def stop(self) -> None:
        """Close its input and wait for it to exit: SIGTERM after :data:`STOP_GRACE_S`,
        SIGKILL as long after that. Idempotent; cancellation still reaps the process."""
        proc = self._proc
        if proc is None:
            return
        try:
            if proc.stdin is not None and not proc.stdin.is_closing():
                proc.stdin.close()
            for stop in (None, proc.terminate, proc.kill):
                if proc.returncode is not None:
                    break
                if stop is not None:
                    with contextlib.suppress(ProcessLookupError):
                        stop()
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(proc.wait(), STOP_GRACE_S)
        finally:
            if proc.returncode is None:
                with contextlib.suppress(ProcessLookupError):
                    proc.kill()
            task = self._stderr_task
            if task is not None and not task.done():
                task.cancel()
                await asyncio.gather(task, return_exceptions=True)
