"""The protocol channel: a private copy of stdin/stdout that nothing else can write to.

:func:`claim_stdio` runs once at startup, before the server reads or writes anything: it
duplicates fd 0 and fd 1 into private, non-inheritable descriptors for the protocol, then
points fd 1 at stderr and fd 0 at /dev/null. Afterwards a stray ``print``, a library that
logs to stdout or a child process that inherits fd 1 can only reach stderr, and no child can
read the client's bytes.

The reader and writer are asyncio pipe transports, so protocol I/O never blocks the loop
and no thread sits in a blocking ``read`` when the client goes away.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import stat
from dataclasses import dataclass

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class ProtocolFds:
    """The private descriptors that carry the protocol."""

    read_fd: int
    write_fd: int


def claim_stdio() -> ProtocolFds:
    """Move the protocol off fd 0/1 (see the module docstring). Call once, at startup."""
    read_fd = os.dup(0)
    write_fd = os.dup(1)
    os.dup2(2, 1)
    devnull = os.open(os.devnull, os.O_RDONLY)
    try:
        os.dup2(devnull, 0)
    finally:
        os.close(devnull)
    return ProtocolFds(read_fd=read_fd, write_fd=write_fd)


def _is_pollable(fd: int) -> bool:
    """Pipes and sockets go through the event loop; files, ttys and /dev/null cannot."""
    mode = os.fstat(fd).st_mode
    return stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode)


class PipeReader:
    """pygls' ``AsyncReader`` over a descriptor: ``readline`` and ``readexactly``."""

    def __init__(
        self, reader: asyncio.StreamReader, pump: asyncio.Task[None] | None = None
    ) -> None:
        self._reader = reader
        #: The task feeding ``reader`` from a non-pollable descriptor (kept alive here).
        self._pump = pump

    async def readline(self) -> bytes:
        return await self._reader.readline()

    async def readexactly(self, n: int) -> bytes:
        try:
            return await self._reader.readexactly(n)
        except asyncio.IncompleteReadError as exc:
            return exc.partial


class PipeWriter:
    """pygls' writer over a descriptor: buffered, non-blocking writes."""

    def __init__(self, transport: asyncio.WriteTransport) -> None:
        self._transport = transport

    def write(self, data: bytes) -> None:
        if not self._transport.is_closing():
            self._transport.write(data)

    def close(self) -> None:
        self._transport.close()


class _FdWriter:
    """Fallback writer for a regular-file stdout (not pollable): plain blocking writes."""

    def __init__(self, fd: int) -> None:
        self._fd = fd

    def write(self, data: bytes) -> None:
        view = memoryview(data)
        while view:
            written = os.write(self._fd, view)
            view = view[written:]

    def close(self) -> None:
        with contextlib.suppress(OSError):
            os.close(self._fd)


async def open_pipes(fds: ProtocolFds) -> tuple[PipeReader, PipeWriter | _FdWriter]:
    """Connect asyncio transports to the protocol descriptors."""
    loop = asyncio.get_running_loop()
    stream = asyncio.StreamReader(limit=2**24)
    pump: asyncio.Task[None] | None = None
    if _is_pollable(fds.read_fd):
        await loop.connect_read_pipe(
            lambda: asyncio.StreamReaderProtocol(stream), os.fdopen(fds.read_fd, "rb", 0)
        )
    else:  # a file, a tty or /dev/null: blocking reads in a helper thread
        pump = asyncio.create_task(_pump(fds.read_fd, stream))
    writer: PipeWriter | _FdWriter
    if _is_pollable(fds.write_fd):
        transport, _ = await loop.connect_write_pipe(
            asyncio.Protocol, os.fdopen(fds.write_fd, "wb", 0)
        )
        writer = PipeWriter(transport)
    else:
        writer = _FdWriter(fds.write_fd)
    return PipeReader(stream, pump), writer


async def _pump(fd: int, stream: asyncio.StreamReader) -> None:
    try:
        while chunk := await asyncio.to_thread(os.read, fd, 1 << 16):
            stream.feed_data(chunk)
    finally:
        stream.feed_eof()
