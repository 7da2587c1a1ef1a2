"""Read fact rows straight from the pages of a damaged SQLite file, without SQLite.

When garbage lands on the schema's pages SQLite cannot read any table any more, though most
rows still sit intact in their own pages. This walks every page of the file (and of its WAL,
whose frames are newer copies of pages), parses each table-leaf cell by the documented file
format (https://sqlite.org/fileformat2.html) and keeps the records shaped like a row of
``facts``. A row found twice (an old copy in a free page) keeps its latest ``updated_at``.

Reads only; bounded by the file size; every malformed byte is skipped, never trusted.
"""

from __future__ import annotations

import struct
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from driveros.memory._models import Fact
from driveros.memory._rows import fact_from_row

_MAGIC = b"SQLite format 3\x00"
#: SQLite's default first, then every other size it allows.
_PAGE_SIZES = (4096, 1024, 2048, 8192, 16384, 32768, 65536, 512)
_TABLE_LEAF = 0x0D
_STATUSES = ("active", "superseded", "forgotten")
_COLUMNS = 12
_WAL_HEADER = 32
_FRAME_HEADER = 24
#: Overflow chains longer than this are treated as garbage (a fact is a sentence).
_MAX_OVERFLOW_PAGES = 64


def _varint(buf: bytes, pos: int) -> tuple[int, int]:
    """SQLite's big-endian varint at ``pos``: (value, next position). Raises IndexError."""
    value = 0
    for i in range(8):
        byte = buf[pos + i]
        value = (value << 7) | (byte & 0x7F)
        if byte < 0x80:
            return value, pos + i + 1
    return (value << 8) | buf[pos + 8], pos + 9


def _value(serial: int, data: bytes, pos: int) -> tuple[Any, int]:
    sizes = {0: 0, 1: 1, 2: 2, 3: 3, 4: 4, 5: 6, 6: 8, 7: 8, 8: 0, 9: 0}
    if serial in sizes:
        size = sizes[serial]
        raw = data[pos : pos + size]
        if len(raw) != size:
            raise IndexError("record ends early")
        if serial == 0:
            return None, pos
        if serial == 7:
            return struct.unpack(">d", raw)[0], pos + size
        if serial in (8, 9):
            return serial - 8, pos
        return int.from_bytes(raw, "big", signed=True), pos + size
    if serial < 12:
        raise ValueError("reserved serial type")
    size = (serial - 12) // 2
    raw = data[pos : pos + size]
    if len(raw) != size:
        raise IndexError("record ends early")
    if serial % 2:
        return raw.decode("utf-8"), pos + size
    return bytes(raw), pos + size


def _record(payload: bytes) -> list[Any]:
    header_size, pos = _varint(payload, 0)
    serials: list[int] = []
    while pos < header_size:
        serial, pos = _varint(payload, pos)
        serials.append(serial)
        if len(serials) > _COLUMNS:
            raise ValueError("not a facts row")
    pos = header_size
    values = []
    for serial in serials:
        value, pos = _value(serial, payload, pos)
        values.append(value)
    return values


class _File:
    def __init__(self, data: bytes, page_size: int, usable: int) -> None:
        self.data = data
        self.page_size = page_size
        self.usable = usable

    def page(self, number: int) -> bytes:
        start = (number - 1) * self.page_size
        return self.data[start : start + self.page_size]

    def payload(self, page: bytes, pos: int, total: int) -> bytes:
        """The cell payload starting at ``pos`` of ``page``, following overflow pages."""
        u = self.usable
        local_max = u - 35
        if total <= local_max:
            return page[pos : pos + total]
        least = ((u - 12) * 32 // 255) - 23
        local = least + (total - least) % (u - 4)
        if local > local_max:
            local = least
        parts = [page[pos : pos + local]]
        size = local
        next_page = int.from_bytes(page[pos + local : pos + local + 4], "big")
        hops = 0
        while size < total and next_page and hops < _MAX_OVERFLOW_PAGES:
            overflow = self.page(next_page)
            if len(overflow) < 4:
                break
            chunk = overflow[4 : 4 + min(u - 4, total - size)]
            parts.append(chunk)
            size += len(chunk)
            next_page = int.from_bytes(overflow[:4], "big")
            hops += 1
        return b"".join(parts)


def _cells(file: _File, page: bytes, first: bool) -> Iterator[tuple[int, bytes]]:
    """(rowid, payload) of every cell of a table-leaf page; nothing for other pages."""
    head = 100 if first else 0
    if len(page) < head + 8 or page[head] != _TABLE_LEAF:
        return
    count = int.from_bytes(page[head + 3 : head + 5], "big")
    for i in range(min(count, len(page) // 2)):
        at = head + 8 + 2 * i
        pointer = int.from_bytes(page[at : at + 2], "big")
        try:
            total, pos = _varint(page, pointer)
            rowid, pos = _varint(page, pos)
            if total > 64 * file.page_size * _MAX_OVERFLOW_PAGES:
                continue
            yield rowid, file.payload(page, pos, total)
        except (IndexError, ValueError):
            continue


def _fact(rowid: int, values: list[Any]) -> Fact | None:
    if len(values) != _COLUMNS or values[3] not in _STATUSES:
        return None
    if values[0] is not None and values[0] != rowid:
        return None
    if not all(isinstance(values[i], str) for i in (1, 2, 4, 5, 6, 7, 8, 9, 11)):
        return None
    if values[10] is not None and not isinstance(values[10], int):
        return None
    try:
        return fact_from_row([rowid, *values[1:]])
    except (ValidationError, TypeError, ValueError):
        return None


def _pages(path: Path, data: bytes, page_size: int) -> Iterator[tuple[bytes, bool]]:
    for start in range(0, len(data) - page_size + 1, page_size):
        yield data[start : start + page_size], start == 0
    wal = Path(f"{path}-wal")
    if wal.exists():
        frames = wal.read_bytes()
        step = _FRAME_HEADER + page_size
        for start in range(_WAL_HEADER, len(frames) - step + 1, step):
            number = int.from_bytes(frames[start : start + 4], "big")
            yield frames[start + _FRAME_HEADER : start + step], number == 1


def carve_facts(path: Path) -> list[Fact]:
    """Every fact row found in the pages of ``path`` (and its WAL), by id."""
    data = path.read_bytes()
    if len(data) < 512:
        return []
    if data.startswith(_MAGIC):
        raw_size = int.from_bytes(data[16:18], "big")
        page_size = 65536 if raw_size == 1 else raw_size
        if page_size >= 512 and not page_size & (page_size - 1) and data[20] < page_size // 2:
            return _carve(path, data, page_size, data[20])
    # A garbled header: try every page size SQLite allows and keep the best reading.
    best: list[Fact] = []
    for size in _PAGE_SIZES:
        found = _carve(path, data, size, 0)
        if len(found) > len(best):
            best = found
    return best


def _carve(path: Path, data: bytes, page_size: int, reserved: int) -> list[Fact]:
    file = _File(data, page_size, page_size - reserved)
    found: dict[int, Fact] = {}
    for page, first in _pages(path, data, page_size):
        for rowid, payload in _cells(file, page, first):
            try:
                fact = _fact(rowid, _record(payload))
            except (IndexError, ValueError, UnicodeDecodeError):
                continue
            if fact is None:
                continue
            known = found.get(fact.id)
            if known is None or fact.updated_at > known.updated_at:
                found[fact.id] = fact
    return [found[i] for i in sorted(found)]
