"""The LSP client's framing and a WorkspaceEdit's application, on hostile input; positions in
every encoding."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from driveros.sandbox import LocalSandbox
from driveros.semantic import LanguageServerError
from driveros.semantic._client import FrameReader, frame
from driveros.semantic._edits import apply_text_edits, apply_workspace_edit
from driveros.semantic._positions import to_chars, to_units, uri_path


def test_semantic_frames_split_across_reads_and_multibyte_text() -> None:
    data = frame({"id": 1, "result": "é🙂"}) + frame({"method": "x"})
    reader = FrameReader()
    got = []
    for i in range(len(data)):  # one byte at a time: a character straddles reads
        got += reader.feed(data[i : i + 1])
    assert got == [{"id": 1, "result": "é🙂"}, {"method": "x"}]


@pytest.mark.parametrize(
    "data",
    [
        b"Content-Length: nope\r\n\r\n{}",
        b"Content-Length: 99999999999\r\n\r\n",
        b"Content-Length: 2\r\n\r\n{x",
        b"x" * 70_000,
    ],
)
def test_semantic_malformed_frames_end_the_client(data: bytes) -> None:
    with pytest.raises(LanguageServerError):
        FrameReader().feed(data)


def test_semantic_non_object_messages_are_dropped() -> None:
    body = json.dumps([1, 2]).encode()
    assert FrameReader().feed(b"Content-Length: %d\r\n\r\n" % len(body) + body) == []


def test_semantic_positions_convert_between_encodings() -> None:
    line = 'x = "🙂é"; total'
    char = line.index("total")
    assert to_units(line, char, "utf-16") == char + 1  # the emoji is two UTF-16 units
    assert to_units(line, char, "utf-8") == char + 3 + 1
    assert to_units(line, char, "utf-32") == char
    for enc in ("utf-8", "utf-16", "utf-32"):
        assert to_chars(line, to_units(line, char, enc), enc) == char
    assert uri_path("/w", "file:///w/a%20b.py") == ("a b.py", True)
    assert uri_path("/w", "file:///usr/lib/x.pyi") == ("/usr/lib/x.pyi", False)


def _edit(line: int, start: int, end: int, new: str) -> dict[str, object]:
    rng = {"start": {"line": line, "character": start}, "end": {"line": line, "character": end}}
    return {"range": rng, "newText": new}


def test_semantic_text_edits_apply_from_the_end_and_refuse_overlaps() -> None:
    text = "a = f()\nb = f()\n"
    new, starts = apply_text_edits(text, [_edit(0, 4, 5, "g"), _edit(1, 4, 5, "g")], "utf-16")
    assert (new, starts) == ("a = g()\nb = g()\n", [(1, 5), (2, 5)])  # line, column
    with pytest.raises(LanguageServerError, match="overlap"):
        apply_text_edits(text, [_edit(0, 0, 5, "x"), _edit(0, 4, 6, "y")], "utf-16")


class _Session:
    root = ""
    encoding = "utf-16"


@pytest.mark.parametrize(
    ("edit", "error"),
    [
        ({"changes": {"file:///etc/passwd": [_edit(0, 0, 1, "x")]}}, "outside the workspace"),
        ({"documentChanges": [{"kind": "delete", "uri": "file:///w/a.py"}]}, "creates, renames"),
        ([], "not a WorkspaceEdit"),
    ],
)
async def test_semantic_a_hostile_workspace_edit_writes_nothing(
    tmp_path: Path, edit: object, error: str
) -> None:
    (tmp_path / "a.py").write_text("a = f()\n")
    session = _Session()
    session.root = str(tmp_path)
    if isinstance(edit, dict) and "changes" in edit:
        edit["changes"][(tmp_path / "a.py").as_uri()] = [_edit(0, 4, 5, "g")]
    async with LocalSandbox(tmp_path) as sandbox:
        with pytest.raises(LanguageServerError, match=error):
            await apply_workspace_edit(sandbox, session, edit)  # type: ignore[arg-type]
    assert (tmp_path / "a.py").read_text() == "a = f()\n"


async def test_semantic_a_path_the_fence_refuses_starts_no_server(tmp_path: Path) -> None:
    from driveros.agent._tools import ToolBox

    (tmp_path / "ws").mkdir()
    (tmp_path / "secret.py").write_text("x = 1\n")
    async with LocalSandbox(tmp_path / "ws") as sandbox:
        box = ToolBox(sandbox)
        out = await box.call("hover", {"path": "../secret.py", "line": 1, "column": 1}, None)
        assert not out.ok and out.output.startswith("refused by the sandbox")
        missing = await box.call("definition", {"path": "nope.py", "line": 1, "column": 1}, None)
        assert not missing.ok and "does not exist" in missing.output
        assert box.semantic.sessions == {}


async def test_semantic_an_editors_buffer_hook_runs_for_every_file_tool(tmp_path: Path) -> None:
    from driveros.agent._tools import ToolBox

    (tmp_path / "a.py").write_text("x = 1\n")
    seen: list[str] = []

    async def before(path: str) -> None:
        seen.append(path)

    async with LocalSandbox(tmp_path) as sandbox:
        box = ToolBox(sandbox, before_file=before)
        assert (await box.call("read_file", {"path": "a.py"}, None)).ok
        await box.call("hover", {"path": "gone.py", "line": 1, "column": 1}, None)
        await box.call("symbols", {"query": "x"}, None)  # no path: no hook
    assert seen == ["a.py", "gone.py"]
