"""The position convention: items 1-based (0 unknown), editors 0-based; one conversion."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from driveros.diagnostics import (
    DiagnosticItem,
    ZeroBasedRange,
    to_one_based,
    to_zero_based,
)


@st.composite
def ranges(draw: st.DrawFn) -> ZeroBasedRange:
    start_line = draw(st.integers(0, 10_000))
    start_character = draw(st.integers(0, 500))
    end_line = draw(st.integers(start_line, start_line + 50))
    low = start_character if end_line == start_line else 0
    return ZeroBasedRange(start_line, start_character, end_line, draw(st.integers(low, 600)))


@given(ranges())
def test_an_editor_range_survives_the_round_trip(r: ZeroBasedRange) -> None:
    span = to_one_based(*r)
    item = DiagnosticItem(path="a.py", message="m", **span._asdict())
    assert item.line == r.start_line + 1 and item.column == r.start_character + 1
    assert to_zero_based(item) == r


def test_unknown_positions() -> None:
    unknown = DiagnosticItem(path="a.py", message="m")  # line 0, column 0: unknown
    assert to_zero_based(unknown) == ZeroBasedRange(0, 0, 0, 1)  # the file's first character
    assert to_one_based(-1, 4) == (0, 0, None, None)
    line_only = DiagnosticItem(path="a.py", line=7, message="m")
    assert to_zero_based(line_only) == ZeroBasedRange(6, 0, 6, 1)


@given(
    st.integers(-5, 50), st.integers(-5, 50), st.integers(-5, 50) | st.none(), st.integers(-5, 50)
)
def test_an_editor_range_never_runs_backwards(
    line: int, column: int, end_line: int | None, end_column: int
) -> None:
    """Tools report odd spans (an end before the start, negative columns): the editor always
    gets a range that starts at or before its end."""
    item = DiagnosticItem(
        path="a.py",
        line=max(line, 0),
        column=max(column, 0),
        end_line=end_line,
        end_column=end_column,
        message="m",
    )
    r = to_zero_based(item)
    assert min(r) >= 0
    assert (r.start_line, r.start_character) <= (r.end_line, r.end_character)
