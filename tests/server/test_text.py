"""Line hunks and positions in every negotiated encoding (non-BMP text at a line's end)."""

from __future__ import annotations

import itertools

import pytest

from driveros_lsp._text import Pos, apply_hunks, code_units, line_hunks
from tests.server._lsp import apply_text_edits

SAMPLES = [
    "",
    "a\n",
    "x😀y",
    "héllo\nwörld 😀",
    "one\ntwo\n\nthree😀\n",
    "\r\nwin\r\n",
    "mac\rold\r",
    "page\x0cbreak\u2028same line\n",
    "😀",
]


def test_text_code_units_per_encoding() -> None:
    assert [code_units("é😀", e) for e in ("utf-8", "utf-16", "utf-32")] == [6, 3, 2]


@pytest.mark.parametrize("encoding", ["utf-8", "utf-16", "utf-32"])
def test_text_hunks_turn_before_into_after(encoding: str) -> None:
    for before, after in itertools.product(SAMPLES, repeat=2):
        hunks = line_hunks(before, after, encoding)  # type: ignore[arg-type]
        assert apply_hunks(before, hunks, encoding) == after  # type: ignore[arg-type]

        class Edit:  # the shape an LSP client applies
            def __init__(self, h: object) -> None:
                from lsprotocol import types as lsp

                self.range = lsp.Range(
                    start=lsp.Position(line=h.start.line, character=h.start.character),  # type: ignore[attr-defined]
                    end=lsp.Position(line=h.end.line, character=h.end.character),  # type: ignore[attr-defined]
                )
                self.new_text = h.new_text  # type: ignore[attr-defined]

        assert apply_text_edits(before, [Edit(h) for h in hunks], encoding) == after


def test_text_lines_split_where_lsp_splits() -> None:
    from driveros_lsp._text import split_lines

    assert split_lines("a\x0cb\u2028c\r\nd\re\nf") == ["a\x0cb\u2028c\r\n", "d\r", "e\n", "f"]
    (hunk,) = line_hunks("a\u2028b\nc\n", "a\u2028b\nC\n", "utf-16")
    assert hunk.start == Pos(1, 0)


def test_text_end_of_a_last_line_without_newline() -> None:
    (hunk,) = line_hunks("héllo wörld 😀", "bye", "utf-16")
    assert (hunk.start, hunk.end) == (Pos(0, 0), Pos(0, 14))
