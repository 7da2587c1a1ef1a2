"""The protocol channel of a stdio server: a private copy of stdin/stdout nothing else reaches.

``driveros-lsp`` and ``driveros acp`` both speak their protocol on stdin/stdout.
:func:`claim_stdio` runs once at startup, before the server reads or writes anything: it
duplicates fd 0 and fd 1 into private, non-inheritable descriptors for the protocol, then
points fd 1 at stderr and fd 0 at /dev/null. Afterwards a stray ``print``, a library that logs
to stdout or a child process that inherits fd 1 can only reach stderr, and no child can read
the client's bytes. :func:`open_protocol_streams` puts asyncio streams over those descriptors:
pipes and sockets through the event loop (protocol I/O never blocks it), anything else (a
regular file, a tty, /dev/null) with blocking reads in a daemon thread and plain writes.

A leaf: imports nothing of driveros.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import stat
import sys
import threading
from dataclasses import dataclass

__all__ = ["ProtocolFds", "claim_stdio", "open_protocol_streams"]


@dataclass(frozen=True)
class ProtocolFds:
    """The private descriptors that carry the protocol."""

    read_fd: int
    write_fd: int


def claim_stdio() -> ProtocolFds:
    """Move the protocol off fd 0/1 (see the module docstring). Call once, at startup."""
    if sys.stdout is not None:
        with contextlib.suppress(OSError, ValueError):
            sys.stdout.flush()
    read_fd = os.dup(0)  # os.dup's descriptors are not inherited by children
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


class _FileTransport(asyncio.WriteTransport):
    """Writes to a descriptor the loop cannot watch (a regular file): plain blocking writes,
    which a file never holds up for long."""

    def __init__(self, fd: int) -> None:
        super().__init__()
        self._fd = fd
        self._closing = False

    def write(self, data: bytes | bytearray | memoryview) -> None:
        view = memoryview(bytes(data))
        while view:
            view = view[os.write(self._fd, view) :]

    def is_closing(self) -> bool:
        return self._closing

    def close(self) -> None:
        if not self._closing:
            self._closing = True
            with contextlib.suppress(OSError):
                os.close(self._fd)

    def can_write_eof(self) -> bool:
        return False

    def get_write_buffer_size(self) -> int:
        return 0


def _feed_from_thread(
    fd: int, loop: asyncio.AbstractEventLoop, reader: asyncio.StreamReader
) -> None:
    """Blocking reads of ``fd`` in a daemon thread (it never holds up the process's exit)."""

    def pump() -> None:
        try:
            while chunk := os.read(fd, 1 << 16):
                loop.call_soon_threadsafe(reader.feed_data, chunk)
        except (OSError, RuntimeError):  # the descriptor or the loop is gone
            pass
        finally:
            with contextlib.suppress(RuntimeError):
                loop.call_soon_threadsafe(reader.feed_eof)

    threading.Thread(target=pump, name="protocol-stdin", daemon=True).start()


async def open_protocol_streams(
    fds: ProtocolFds, *, limit: int
) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    """asyncio streams over the protocol descriptors; ``limit`` bounds a buffered line."""
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader(limit=limit)
    if _is_pollable(fds.read_fd):
        await loop.connect_read_pipe(
            lambda: asyncio.StreamReaderProtocol(reader), os.fdopen(fds.read_fd, "rb", 0)
        )
    else:
        _feed_from_thread(fds.read_fd, loop, reader)
    flow = asyncio.streams.FlowControlMixin()
    transport: asyncio.WriteTransport
    if _is_pollable(fds.write_fd):
        transport, _ = await loop.connect_write_pipe(lambda: flow, os.fdopen(fds.write_fd, "wb", 0))
    else:
        transport = _FileTransport(fds.write_fd)
    return reader, asyncio.StreamWriter(transport, flow, None, loop)
