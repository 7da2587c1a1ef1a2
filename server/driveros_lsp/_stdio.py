"""The protocol channel over stdio, in pygls' reader and writer shapes.

Claiming stdin/stdout for the protocol is :mod:`driveros.stdio`, shared with ``driveros acp``:
:func:`~driveros.stdio.claim_stdio` at startup, then :func:`open_pipes` puts pygls' reader
and writer over the private descriptors (asyncio streams: protocol I/O never blocks the loop,
and no thread of the loop's executor sits in a blocking ``read`` when the client goes away).
"""

from __future__ import annotations

import asyncio

from driveros.stdio import ProtocolFds, open_protocol_streams

#: The largest header line or message body the reader buffers.
LINE_LIMIT = 2**24


class PipeReader:
    """pygls' ``AsyncReader`` over the protocol's input: ``readline`` and ``readexactly``."""

    def __init__(self, reader: asyncio.StreamReader) -> None:
        self._reader = reader

    async def readline(self) -> bytes:
        return await self._reader.readline()

    async def readexactly(self, n: int) -> bytes:
        try:
            return await self._reader.readexactly(n)
        except asyncio.IncompleteReadError as exc:
            return exc.partial


class PipeWriter:
    """pygls' writer over the protocol's output: buffered, non-blocking writes."""

    def __init__(self, writer: asyncio.StreamWriter) -> None:
        self._writer = writer

    def write(self, data: bytes) -> None:
        if not self._writer.transport.is_closing():
            self._writer.write(data)

    def close(self) -> None:
        self._writer.close()


async def open_pipes(fds: ProtocolFds) -> tuple[PipeReader, PipeWriter]:
    """pygls' reader and writer over the protocol descriptors."""
    reader, writer = await open_protocol_streams(fds, limit=LINE_LIMIT)
    return PipeReader(reader), PipeWriter(writer)
