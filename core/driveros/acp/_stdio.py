"""Serving ACP on stdin/stdout, with stdout reserved for the protocol."""

from __future__ import annotations

import asyncio
import os
import sys
import threading
from typing import Any, cast

from acp import run_agent

from driveros.acp._server import DriverosAgent, Settings

#: The largest message accepted from the client (prompts may embed whole files).
LINE_LIMIT = 50 * 1024 * 1024


def _reserve_stdout() -> int:
    """A private descriptor for the protocol; file descriptor 1 (and ``sys.stdout``) now
    point at stderr, so nothing else (a library's print, a child process) can write into
    the protocol stream."""
    sys.stdout.flush()
    protocol = os.dup(1)
    os.dup2(2, 1)
    os.set_inheritable(protocol, False)
    return protocol


class _FileTransport(asyncio.WriteTransport):
    """Writes to a descriptor that is not a pipe (a regular file): plain blocking writes,
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
        self._closing = True

    def can_write_eof(self) -> bool:
        return False

    def get_write_buffer_size(self) -> int:
        return 0


def _feed_from_thread(loop: asyncio.AbstractEventLoop, reader: asyncio.StreamReader) -> None:
    """stdin that is not a pipe (a regular file): read it in a thread."""

    def pump() -> None:
        try:
            while chunk := os.read(0, 1 << 16):
                loop.call_soon_threadsafe(reader.feed_data, chunk)
        except OSError:
            pass
        finally:
            loop.call_soon_threadsafe(reader.feed_eof)

    threading.Thread(target=pump, name="acp-stdin", daemon=True).start()


async def serve(settings: Settings | None = None) -> None:
    """Serve one client on stdin/stdout until it closes stdin."""
    protocol = _reserve_stdout()
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader(limit=LINE_LIMIT)
    try:
        await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)
    except ValueError:  # not a pipe, socket or character device
        _feed_from_thread(loop, reader)
    out = os.fdopen(protocol, "wb", buffering=0)
    transport: asyncio.WriteTransport
    flow = asyncio.streams.FlowControlMixin()
    try:
        transport, _ = await loop.connect_write_pipe(lambda: flow, out)
    except ValueError:
        transport = _FileTransport(protocol)
    writer = asyncio.StreamWriter(transport, flow, None, loop)
    try:
        # The SDK routes only the methods the agent has (no list/fork/resume here); its Agent
        # protocol lists every optional one, hence the cast.
        await run_agent(cast(Any, DriverosAgent(settings)), writer, reader)
    finally:
        transport.close()
        out.close()
