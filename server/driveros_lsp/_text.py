"""Positions in the negotiated encoding, and text edits between two versions of a document.

The server counts a line's characters in code points (Python ``str`` indices, the unit of
``driveros.diagnostics`` items); the client counts them in the code units of the position
encoding negotiated at ``initialize`` (``utf-16`` by default, ``utf-8``, ``utf-32``). Every
position the server puts on the wire or reads from it goes through :class:`PositionCodec`,
which converts on the text of the line it points into, with lines split only where LSP splits
them (``\n``, ``\r\n``, ``\r``; not at ``\f`` or U+2028 as ``str.splitlines`` does).

Edits are whole-line hunks (from :mod:`difflib`), so a position's character is 0 except at
the very end of a document without a final newline, where it is the length of the last line
counted in the encoding's code units.
"""

from __future__ import annotations

import contextlib
import os
import re
import stat
from collections.abc import Collection
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO, Literal

from driveros.diagnostics import code_point_index, code_units

Encoding = Literal["utf-8", "utf-16", "utf-32"]
#: A document's lines with their ends, as :func:`split_lines` returns them.
Lines = list[str]
#: Some of a document's lines, by 0-based index, as :func:`read_lines` returns them.
SomeLines = dict[int, str]


@dataclass(frozen=True)
class Pos:
    line: int
    character: int


@dataclass(frozen=True)
class Hunk:
    """Replace the text between ``start`` and ``end`` by ``new_text``."""

    start: Pos
    end: Pos
    new_text: str


_LINE = re.compile(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+\Z")
_LINE_END = re.compile(rb"\r\n|\r|\n")


def split_lines(text: str) -> list[str]:
    """Lines with their ends, split only where LSP splits (``\\n``, ``\\r\\n``, ``\\r``)."""
    return _LINE.findall(text)


@dataclass(frozen=True)
class PositionCodec:
    """Characters of a line between the server's code points and the client's code units.

    A character past the line's end is the line's end (LSP: "defaults back to the line
    length"); one that falls inside a character (half a surrogate pair, a byte inside a
    UTF-8 sequence) is that character's end. Without the line's text (``None``: a file the
    server cannot read) the number is passed through unchanged, which is exact for ASCII.
    """

    encoding: Encoding = "utf-16"

    def to_client(self, line: str | None, character: int) -> int:
        """Code points -> code units."""
        if line is None or self.encoding == "utf-32":
            return character
        return code_units(line[: max(character, 0)], self.encoding)

    def from_client(self, line: str | None, units: int) -> int:
        """Code units -> code points."""
        if line is None:
            return units
        return code_point_index(line, units, self.encoding)

    def range_to_client(
        self, lines: Lines | SomeLines | None, start: Pos, end: Pos
    ) -> tuple[Pos, Pos]:
        """A code-point range in a document (its :func:`split_lines`) as the client counts
        it."""
        return (
            Pos(start.line, self.to_client(_content(lines, start.line), start.character)),
            Pos(end.line, self.to_client(_content(lines, end.line), end.character)),
        )

    def range_from_client(
        self, lines: Lines | SomeLines | None, start: Pos, end: Pos
    ) -> tuple[Pos, Pos]:
        """A client's range in a document (its :func:`split_lines`) in code points."""
        return (
            Pos(start.line, self.from_client(_content(lines, start.line), start.character)),
            Pos(end.line, self.from_client(_content(lines, end.line), end.character)),
        )


def _content(lines: Lines | SomeLines | None, line: int) -> str | None:
    """Line ``line`` without its line end; None when unknown (no text, past the end, or a
    line :func:`read_lines` did not keep)."""
    if lines is None:
        return None
    if isinstance(lines, dict):
        text = lines.get(line)
    else:
        text = lines[line] if 0 <= line < len(lines) else None
    return None if text is None else text.rstrip("\r\n")


#: Bytes of a file :func:`read_lines` reads at most, looking for the lines it wants.
READ_LIMIT = 32 * 1024 * 1024
#: The longest line :func:`read_lines` keeps (a longer one is not kept: positions on it pass
#: through unconverted, which is exact for ASCII).
LINE_LIMIT = 1024 * 1024
_CHUNK = 256 * 1024


def read_lines(path: Path, wanted: Collection[int], *, limit: int = READ_LIMIT) -> SomeLines:
    """The lines ``wanted`` (0-based) of the file at ``path``, split as :func:`split_lines`
    splits, each with its line end, as ``{index: line}``; a line is left out when it is past
    the end, longer than :data:`LINE_LIMIT`, not UTF-8, or starts after the first ``limit``
    bytes. Streams the file from its start up to the last line wanted: memory stays bounded
    by a chunk and :data:`LINE_LIMIT` whatever the file's size. {} for anything but a
    regular file (never follows a final symbolic link, never blocks on a FIFO). Blocking."""
    want = {i for i in wanted if i >= 0}
    if not want:
        return {}
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK)
    except OSError:
        return {}
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        return {}
    with os.fdopen(fd, "rb", buffering=0) as fh:
        return _scan(fh, want, limit)


def _scan(fh: BinaryIO, want: set[int], limit: int) -> SomeLines:
    out: SomeLines = {}
    last = max(want)
    index, read = 0, 0
    line, too_long = bytearray(), False
    carry = b""  # a chunk's final "\r": its "\n" may start the next chunk

    def keep(text: bytes) -> None:
        if index in want and not too_long:
            with contextlib.suppress(UnicodeDecodeError):
                out[index] = text.decode("utf-8")

    while index <= last:
        chunk = fh.read(min(_CHUNK, limit - read)) if read < limit else b""
        read += len(chunk)
        ended = not chunk  # the file's end, or the limit
        data, carry = carry + chunk, b""
        if not ended and data.endswith(b"\r"):
            data, carry = data[:-1], b"\r"
        ends = data.count(b"\n") + data.count(b"\r") - data.count(b"\r\n")
        if not ended and not any(index <= i <= index + ends for i in want):
            index += ends  # no line wanted here: count the line ends, keep nothing
            continue
        at = 0
        while index <= last:
            m = _LINE_END.search(data, at)
            piece = data[at : m.start() if m else len(data)]
            if index in want and not too_long:
                if len(line) + len(piece) > LINE_LIMIT:
                    too_long = True
                    line.clear()
                else:
                    line += piece
            if m is None:
                break
            keep(bytes(line) + m.group())
            index, line, too_long, at = index + 1, bytearray(), False, m.end()
        if ended:
            if line and read < limit:  # the last line, without an end
                keep(bytes(line))
            break
    return out


def _end_of(lines: list[str], index: int, encoding: Encoding) -> Pos:
    """The position just before line ``index`` (or the document's end)."""
    if index < len(lines) or not lines or lines[-1].endswith(("\n", "\r")):
        return Pos(index, 0)
    last = len(lines) - 1
    return Pos(last, PositionCodec(encoding).to_client(lines[last], len(lines[last])))


def line_hunks(before: str, after: str, encoding: Encoding) -> list[Hunk]:
    """Minimal whole-line hunks that turn ``before`` into ``after``."""
    import difflib  # lazily: the server imports this module at startup

    old = split_lines(before)
    new = split_lines(after)
    hunks: list[Hunk] = []
    matcher = difflib.SequenceMatcher(a=old, b=new, autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            continue
        start = _end_of(old, i1, encoding)
        end = _end_of(old, i2, encoding)
        # (An insertion after a last line without newline cannot occur: that line would
        # differ from its counterpart in ``new``, which must then end with a newline.)
        hunks.append(Hunk(start, end, "".join(new[j1:j2])))
    return hunks


def apply_hunks(text: str, hunks: list[Hunk], encoding: Encoding) -> str:
    """Apply non-overlapping hunks (any order) to ``text``; the inverse of :func:`line_hunks`."""
    lines = split_lines(text)

    codec = PositionCodec(encoding)

    def offset(pos: Pos) -> int:
        if pos.line >= len(lines):
            return len(text)
        base = sum(len(line) for line in lines[: pos.line])
        return base + codec.from_client(_content(lines, pos.line), pos.character)

    spans = sorted(((offset(h.start), offset(h.end), h.new_text) for h in hunks), reverse=True)
    for start, end, new_text in spans:
        text = text[:start] + new_text + text[end:]
    return text
