"""Text edits between two versions of a document, in the negotiated position encoding.

Edits are whole-line hunks (from :mod:`difflib`), so a position's character is 0 except at
the very end of a document without a final newline, where it is the length of the last line
counted in the encoding's code units (utf-16 by default, utf-8 for Neovim, utf-32).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

Encoding = Literal["utf-8", "utf-16", "utf-32"]


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


def code_units(text: str, encoding: Encoding) -> int:
    """Length of ``text`` in the encoding's code units."""
    if encoding == "utf-8":
        return len(text.encode("utf-8"))
    if encoding == "utf-16":
        return len(text.encode("utf-16-le")) // 2
    return len(text)


def _end_of(lines: list[str], index: int, encoding: Encoding) -> Pos:
    """The position just before line ``index`` (or the document's end)."""
    if index < len(lines) or not lines or lines[-1].endswith(("\n", "\r")):
        return Pos(index, 0)
    last = lines[-1]
    return Pos(len(lines) - 1, code_units(last, encoding))


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

    def offset(pos: Pos) -> int:
        if pos.line >= len(lines):
            return len(text)
        base = sum(len(line) for line in lines[: pos.line])
        units = 0
        for i, ch in enumerate(lines[pos.line]):
            if units >= pos.character:
                return base + i
            units += code_units(ch, encoding)
        return base + len(lines[pos.line])

    spans = sorted(((offset(h.start), offset(h.end), h.new_text) for h in hunks), reverse=True)
    for start, end, new_text in spans:
        text = text[:start] + new_text + text[end:]
    return text
