"""Next-edit suggestions (inlineCompletion.nextEdit): off by default, rename and model."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from lsprotocol import types as lsp

from driveros.testing import ScriptedModelServer, Turn
from driveros_lsp.inline._next_edit import EditHistory, parse_model_edit, rename_suggestion
from tests.server._lsp import Editor, editor_session
from tests.server.conftest import model_env

BEFORE = "def area(size):\n    side = size * 2\n    return side * size\n"
AFTER = BEFORE.replace("def area(size):", "def area(width):")


def _settings(**inline: Any) -> dict[str, Any]:
    return {
        "provider": "openai",
        "inlineCompletion": {
            "api": "completions",
            "model": "scripted-model",
            "debounceMs": 0,
            **inline,
        },
    }


async def _items(editor: Editor, rel: str, pos: lsp.Position) -> list[Any]:
    result = await editor.client.text_document_inline_completion_async(
        lsp.InlineCompletionParams(
            text_document=lsp.TextDocumentIdentifier(uri=editor.uri(rel)),
            position=pos,
            context=lsp.InlineCompletionContext(
                trigger_kind=lsp.InlineCompletionTriggerKind.Automatic
            ),
        )
    )
    return list(result.items) if result is not None else []


async def _rename_session(workspace: Path, model: ScriptedModelServer, **inline: Any) -> list[Any]:
    (workspace / "area.py").write_text(BEFORE)
    async with editor_session(workspace, env=model_env(model), settings=_settings(**inline)) as ed:
        ed.open("area.py")
        await _items(ed, "area.py", lsp.Position(line=0, character=9))
        ed.type_text("area.py", AFTER)
        return await _items(ed, "area.py", lsp.Position(line=0, character=14))


async def test_next_edit_is_off_by_default(workspace: Path) -> None:
    async with ScriptedModelServer([Turn(text="")], repeat_last=True) as model:
        items = await _rename_session(workspace, model)
    assert items == []
    assert all(r.path == "/v1/completions" for r in model.received)


async def test_next_edit_repeats_a_rename_on_the_next_line(workspace: Path) -> None:
    async with ScriptedModelServer([Turn(text="")], repeat_last=True) as model:
        items = await _rename_session(workspace, model, nextEdit=True)
    (item,) = items
    assert item.insert_text == "width"
    assert item.range == lsp.Range(
        start=lsp.Position(line=1, character=11), end=lsp.Position(line=1, character=15)
    )
    assert item.command.arguments[0]["nextEdit"] is True


async def test_next_edit_from_the_model_above_the_threshold(workspace: Path) -> None:
    text = "total = 0\nfor x in items:\n    total += x\nprint(totl)\n"
    answer = json.dumps({"line": 4, "old": "totl", "new": "total", "confidence": 0.95})
    (workspace / "sum.py").write_text(text)
    async with (
        ScriptedModelServer([Turn(text=""), Turn(text=answer)]) as model,
        editor_session(workspace, env=model_env(model), settings=_settings(nextEdit=True)) as ed,
    ):
        ed.open("sum.py")
        items = await _items(ed, "sum.py", lsp.Position(line=2, character=14))
    (item,) = items
    assert item.insert_text == "total"
    assert item.range == lsp.Range(
        start=lsp.Position(line=3, character=6), end=lsp.Position(line=3, character=10)
    )
    assert [r.path for r in model.received] == ["/v1/completions", "/v1/chat/completions"]


async def test_next_edit_below_the_threshold_is_not_offered(workspace: Path) -> None:
    text = "total = 0\nprint(totl)\n"
    answer = json.dumps({"line": 2, "old": "totl", "new": "total", "confidence": 0.3})
    (workspace / "sum.py").write_text(text)
    async with (
        ScriptedModelServer([Turn(text=""), Turn(text=answer)]) as model,
        editor_session(workspace, env=model_env(model), settings=_settings(nextEdit=True)) as ed,
    ):
        ed.open("sum.py")
        items = await _items(ed, "sum.py", lsp.Position(line=0, character=9))
    assert items == []


def test_next_edit_model_answer_must_match_the_line() -> None:
    lines = ["a = 1", "b = a"]
    assert (
        parse_model_edit('{"line": 2, "old": "zz", "new": "y", "confidence": 1}', lines, 0) is None
    )
    assert (
        parse_model_edit('{"line": 99, "old": "a", "new": "y", "confidence": 1}', lines, 0) is None
    )
    assert parse_model_edit("no json here", lines, 0) is None
    edit = parse_model_edit('{"line": 2, "old": "a", "new": "c", "confidence": 0.8}', lines, 0)
    assert edit is not None and (edit.line, edit.start, edit.end, edit.new_text) == (1, 4, 5, "c")


def test_next_edit_rename_needs_exactly_one_identifier_changed() -> None:
    history = EditHistory()
    history.observe("u", "x = foo + bar\ny = foo\n")
    history.observe("u", "x = baz + qux\ny = foo\n")
    assert rename_suggestion(history, "u", ["x = baz + qux", "y = foo", ""], 0) is None


def test_next_edit_model_text_loses_bidi_overrides() -> None:
    raw = '{"line": 1, "old": "a", "new": "b\u202e", "confidence": 0.9}'
    edit = parse_model_edit(raw, ["a = 1"], 0)
    assert edit is not None and edit.new_text == "b"
