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

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from driveros.diagnostics import code_point_index, code_units

Encoding = Literal["utf-8", "utf-16", "utf-32"]
#: A document's lines with their ends, as :func:`split_lines` returns them.
Lines = list[str]


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

    def range_to_client(self, lines: Lines | None, start: Pos, end: Pos) -> tuple[Pos, Pos]:
        """A code-point range in a document (its :func:`split_lines`) as the client counts
        it."""
        return (
            Pos(start.line, self.to_client(_content(lines, start.line), start.character)),
            Pos(end.line, self.to_client(_content(lines, end.line), end.character)),
        )

    def range_from_client(self, lines: Lines | None, start: Pos, end: Pos) -> tuple[Pos, Pos]:
        """A client's range in a document (its :func:`split_lines`) in code points."""
        return (
            Pos(start.line, self.from_client(_content(lines, start.line), start.character)),
            Pos(end.line, self.from_client(_content(lines, end.line), end.character)),
        )


def _content(lines: Lines | None, line: int) -> str | None:
    """Line ``line`` without its line end; None when unknown (no text, or past the end)."""
    if lines is None or not 0 <= line < len(lines):
        return None
    return lines[line].rstrip("\r\n")


def read_lines(path: Path) -> Lines | None:
    """The file's lines (:func:`split_lines`), None when it cannot be read as text.
    Blocking."""
    from driveros.review import read_text

    try:
        text = read_text(path)
    except (OSError, UnicodeDecodeError):
        return None
    return None if text is None else split_lines(text)


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
