"""The fix path reads only the lines it needs of a file on disk (issue 35 row 3):
:func:`read_lines` streams up to the last line wanted, keeps no line over its limit, reads no
more than its byte limit, and splits exactly where :func:`split_lines` splits."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from driveros_lsp import _text
from driveros_lsp._text import read_lines, split_lines

_PIECES = st.lists(
    st.sampled_from(["a", "é", "😀", "\r", "\n", "\r\n", "\t", "x\x00"]), max_size=40
)


@settings(max_examples=200, deadline=None)
@given(pieces=_PIECES, chunk=st.integers(1, 7), wanted=st.sets(st.integers(0, 30), max_size=6))
def test_read_lines_agrees_with_split_lines(
    tmp_path_factory: pytest.TempPathFactory, pieces: list[str], chunk: int, wanted: set[int]
) -> None:
    text = "".join(pieces)
    path = tmp_path_factory.mktemp("lines") / "f.txt"
    path.write_bytes(text.encode("utf-8"))
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(_text, "_CHUNK", chunk)
        got = read_lines(path, wanted)
    lines = split_lines(text)
    assert got == {i: lines[i] for i in wanted if i < len(lines)}


def test_read_lines_leaves_out_long_undecodable_and_far_lines(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "mixed.txt"
    path.write_bytes(b"short\n" + b"y" * 50 + b"\n" + b"\xff\xfe bad\n" + b"ok\n" + b"z" * 100)
    monkeypatch.setattr(_text, "LINE_LIMIT", 40)
    assert read_lines(path, {0, 1, 2, 3, 9}) == {0: "short\n", 3: "ok\n"}
    assert read_lines(path, {3}, limit=60) == {}  # line 3 starts past the first 60 bytes
    assert read_lines(path, set()) == {}


def test_read_lines_of_a_huge_sparse_file_reads_a_bounded_prefix(tmp_path: Path) -> None:
    path = tmp_path / "sparse.bin"
    with open(path, "wb") as fh:
        fh.write(b"first line\n")
        fh.truncate(600 * 1024 * 1024)
    before = _read_bytes()
    assert read_lines(path, {0, 5}) == {0: "first line\n"}
    assert _read_bytes() - before <= _text.READ_LIMIT + 1024 * 1024


def _read_bytes() -> int:
    """Bytes this process has read so far (``rchar`` of /proc/self/io)."""
    text = Path("/proc/self/io").read_text()
    return int(next(x for x in text.splitlines() if x.startswith("rchar:")).split()[1])


def test_read_lines_never_follows_a_link_nor_opens_a_fifo_or_device(tmp_path: Path) -> None:
    target = tmp_path / "target.txt"
    target.write_text("secret\n")
    (tmp_path / "link.txt").symlink_to(target)
    os.mkfifo(tmp_path / "fifo")
    (tmp_path / "zero").symlink_to("/dev/zero")
    for name in ("link.txt", "fifo", "zero", "missing", "."):
        assert read_lines(tmp_path / name, {0}) == {}, name
