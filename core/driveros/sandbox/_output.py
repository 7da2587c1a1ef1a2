"""Captured output with a byte cap: the head is kept, the rest is drained and counted."""

from __future__ import annotations

import asyncio


class CappedBuffer:
    """Keeps the first ``cap`` bytes written to it; remembers whether more arrived."""

    def __init__(self, cap: int) -> None:
        self.cap = cap
        self._chunks: list[bytes] = []
        self._kept = 0
        self.total = 0

    def write(self, data: bytes) -> None:
        self.total += len(data)
        room = self.cap - self._kept
        if room > 0:
            piece = data[:room]
            self._chunks.append(piece)
            self._kept += len(piece)

    @property
    def truncated(self) -> bool:
        return self.total > self.cap

    def getvalue(self) -> bytes:
        return b"".join(self._chunks)

    def text(self) -> str:
        return self.getvalue().decode("utf-8", "replace")


async def pump(reader: asyncio.StreamReader, sink: CappedBuffer) -> None:
    """Copy ``reader`` into ``sink`` until EOF (draining past the cap so writers never block)."""
    while chunk := await reader.read(64 * 1024):
        sink.write(chunk)
