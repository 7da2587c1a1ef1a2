"""The position convention, and the one place positions change base.

A :class:`DiagnosticItem` counts as the tools print: ``line`` and ``column`` are **1-based**,
``0`` means unknown; ``end_line``/``end_column`` are 1-based too, the end exclusive, ``None``
when unknown. LSP (and pyright's JSON, which speaks LSP) counts **0-based** with an exclusive
end. Converting between the two happens here and nowhere else.

Columns count code points (characters). A tool or an editor counting in another unit
(UTF-16 code units, UTF-8 bytes) is converted on the text of the line with
:func:`code_units` (code points -> units) and :func:`code_point_index` (units -> code points).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal, NamedTuple

if TYPE_CHECKING:
    from driveros.diagnostics._item import DiagnosticItem

ColumnUnit = Literal["utf-8", "utf-16", "utf-32"]
"""What a column counts: UTF-8 bytes, UTF-16 code units, or code points (``utf-32``)."""


def code_units(text: str, unit: ColumnUnit) -> int:
    """Length of ``text`` in ``unit`` (a lone surrogate, which a JSON string can carry,
    counts as one UTF-16 unit and three UTF-8 bytes)."""
    if unit == "utf-8":
        return len(text.encode("utf-8", "surrogatepass"))
    if unit == "utf-16":
        return len(text.encode("utf-16-le", "surrogatepass")) // 2
    return len(text)


def code_point_index(line: str, units: int, unit: ColumnUnit) -> int:
    """The code point index ``units`` (counted in ``unit``) points at in ``line``: past the
    end it is the line's end; inside a character (half a surrogate pair, a byte inside a
    UTF-8 sequence) it is that character's end."""
    if unit == "utf-32" or line.isascii():
        return max(min(units, len(line)), 0)
    seen = 0
    for index, ch in enumerate(line):
        if seen >= units:
            return index
        seen += code_units(ch, unit)
    return len(line)


class ZeroBasedRange(NamedTuple):
    """An LSP-style range: 0-based lines and characters, end exclusive."""

    start_line: int
    start_character: int
    end_line: int
    end_character: int


class OneBasedSpan(NamedTuple):
    """The position fields of a :class:`DiagnosticItem` (1-based; 0/None unknown)."""

    line: int = 0
    column: int = 0
    end_line: int | None = None
    end_column: int | None = None


def to_zero_based(item: DiagnosticItem) -> ZeroBasedRange:
    """The item's range for an editor. Unknown positions become the file's start; an unknown
    end is one character past the start; an end is never before its start."""
    line = max(item.line - 1, 0)
    col = max(item.column - 1, 0)
    end_line = max(item.end_line - 1, line) if item.end_line else line
    end_col = max(item.end_column - 1, 0) if item.end_column else col + 1
    if end_line == line:
        end_col = max(end_col, col)
    return ZeroBasedRange(line, col, end_line, end_col)


def to_one_based(
    start_line: int,
    start_character: int,
    end_line: int | None = None,
    end_character: int | None = None,
) -> OneBasedSpan:
    """Item positions from 0-based ones (negative values mean unknown)."""
    has_end = end_line is not None and end_line >= 0
    return OneBasedSpan(
        line=start_line + 1 if start_line >= 0 else 0,
        column=start_character + 1 if start_line >= 0 and start_character >= 0 else 0,
        end_line=end_line + 1 if has_end and end_line is not None else None,
        end_column=(
            end_character + 1
            if has_end and end_character is not None and end_character >= 0
            else None
        ),
    )
