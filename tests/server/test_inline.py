"""textDocument/inlineCompletion end to end: driveros-lsp over stdio, a scripted FIM endpoint.

The scripted model speaks the real ``/v1/completions`` wire format over loopback; the server
reaches it through the same provider configuration the agent uses (OPENAI_BASE_URL/KEY).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import json
from pathlib import Path
from typing import Any

from lsprotocol import types as lsp

from driveros.testing import ScriptedModelServer, Turn
from driveros_lsp import protocol
from tests.server._lsp import Editor, editor_session
from tests.server.conftest import model_env

SOURCE = "def add(a, b):\n    \n\n\nprint(add(1, 2))\n"
CURSOR = lsp.Position(line=1, character=4)


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


def _params(editor: Editor, rel: str, pos: lsp.Position = CURSOR) -> lsp.InlineCompletionParams:
    return lsp.InlineCompletionParams(
        text_document=lsp.TextDocumentIdentifier(uri=editor.uri(rel)),
        position=pos,
        context=lsp.InlineCompletionContext(trigger_kind=lsp.InlineCompletionTriggerKind.Automatic),
    )


async def _complete(editor: Editor, rel: str, pos: lsp.Position = CURSOR) -> list[Any]:
    result = await editor.client.text_document_inline_completion_async(_params(editor, rel, pos))
    if result is None:
        return []
    return list(result.items if isinstance(result, lsp.InlineCompletionList) else result)


def _send(editor: Editor, rel: str, msg_id: str, pos: lsp.Position = CURSOR) -> Any:
    return editor.client.protocol.send_request(
        lsp.TEXT_DOCUMENT_INLINE_COMPLETION, _params(editor, rel, pos), msg_id=msg_id
    )


async def test_inline_completion_returns_the_fim_text_at_the_cursor(workspace: Path) -> None:
    (workspace / "add.py").write_text(SOURCE)
    async with (
        ScriptedModelServer([Turn(text="return a + b")]) as model,
        editor_session(workspace, env=model_env(model), settings=_settings()) as editor,
    ):
        assert editor.initialize_result.capabilities.inline_completion_provider
        editor.open("add.py")
        items = await _complete(editor, "add.py")
    (item,) = items
    assert item.insert_text == "return a + b"
    assert item.range == lsp.Range(start=CURSOR, end=CURSOR)
    assert item.command.command == protocol.CMD_INLINE_ACCEPTED
    (received,) = model.received
    assert received.path == "/v1/completions"
    assert received.body["prompt"].endswith("def add(a, b):\n    ")
    assert received.body["suffix"] == "\n\n\nprint(add(1, 2))\n"
    assert "# Path: add.py" in received.body["prompt"]


async def test_inline_typing_through_a_suggestion_reuses_it(workspace: Path) -> None:
    (workspace / "add.py").write_text(SOURCE)
    async with (
        ScriptedModelServer([Turn(text="return a + b")]) as model,
        editor_session(workspace, env=model_env(model), settings=_settings()) as editor,
    ):
        editor.open("add.py")
        (first,) = await _complete(editor, "add.py")
        editor.type_text("add.py", SOURCE.replace("    \n", "    ret\n", 1))
        (second,) = await _complete(editor, "add.py", lsp.Position(line=1, character=7))
    assert first.insert_text == "return a + b"
    assert second.insert_text == "urn a + b"
    assert len(model.received) == 1


async def test_inline_superseded_request_closes_the_model_stream(workspace: Path) -> None:
    (workspace / "add.py").write_text(SOURCE)
    slow = Turn(text="return " + "a + " * 100 + "b", interval_s=0.05)
    async with (
        ScriptedModelServer([slow, Turn(text="return b + a")], chunk=4) as model,
        editor_session(workspace, env=model_env(model), settings=_settings()) as editor,
    ):
        editor.open("add.py")
        first = _send(editor, "add.py", "inline-1")
        async with asyncio.timeout(20):
            while not model.received:
                await asyncio.sleep(0.02)
        (item,) = await _complete(editor, "add.py")
        old = await asyncio.wrap_future(first)
        async with asyncio.timeout(20):
            while not model.cut:
                await asyncio.sleep(0.02)
    assert item.insert_text == "return b + a"
    assert old is None or not old.items
    assert model.cut == [0]


async def test_inline_cancel_request_closes_the_model_stream(workspace: Path) -> None:
    (workspace / "add.py").write_text(SOURCE)
    slow = Turn(text="return " + "a + " * 100 + "b", interval_s=0.05)
    async with (
        ScriptedModelServer([slow], chunk=4) as model,
        editor_session(workspace, env=model_env(model), settings=_settings()) as editor,
    ):
        editor.open("add.py")
        pending = _send(editor, "add.py", "inline-cancel")
        async with asyncio.timeout(20):
            while not model.received:
                await asyncio.sleep(0.02)
        editor.client.protocol.notify(lsp.CANCEL_REQUEST, lsp.CancelParams(id="inline-cancel"))
        async with asyncio.timeout(20):
            while not model.cut:
                await asyncio.sleep(0.02)
        try:
            await asyncio.wait_for(asyncio.wrap_future(pending), 10)
        except (Exception, concurrent.futures.CancelledError) as exc:
            assert "cancel" in str(exc).lower() or isinstance(exc, asyncio.CancelledError)
    assert model.cut == [0]


async def test_inline_secret_file_is_never_sent(workspace: Path) -> None:
    (workspace / ".env").write_text("API_TOKEN=abc123secretvalue\n")
    (workspace / "deploy.pem").write_text("def add_pem_secret(a, b):\n    return a\n")
    (workspace / "util.py").write_text("def add_numbers(a, b):\n    return a + b\n")
    (workspace / "add.py").write_text(SOURCE)
    async with (
        ScriptedModelServer([Turn(text="return a + b")], repeat_last=True) as model,
        editor_session(workspace, env=model_env(model), settings=_settings()) as editor,
    ):
        editor.open(".env")
        editor.open("deploy.pem")
        editor.open("util.py")
        editor.open("add.py")
        assert await _complete(editor, ".env", lsp.Position(line=0, character=4)) == []
        assert not model.received
        (item,) = await _complete(editor, "add.py")
    assert item.insert_text == "return a + b"
    (received,) = model.received
    sent = json.dumps(received.body)
    assert "abc123secretvalue" not in sent
    assert "add_pem_secret" not in sent
    assert "util.py" in sent  # an ordinary open file is context


async def test_inline_keystroke_burst_makes_at_most_two_model_requests(workspace: Path) -> None:
    (workspace / "add.py").write_text(SOURCE)
    async with (
        ScriptedModelServer([Turn(text="x")], repeat_last=True) as model,
        editor_session(
            workspace, env=model_env(model), settings=_settings(debounceMs=75)
        ) as editor,
    ):
        editor.open("add.py")
        pending = []
        line = "    "
        for index in range(20):
            line += "abcdefghijklmnopqrstuvwxyz"[index]
            editor.type_text("add.py", SOURCE.replace("    \n", line + "\n", 1))
            pending.append(
                _send(editor, "add.py", f"burst-{index}", lsp.Position(line=1, character=len(line)))
            )
            await asyncio.sleep(0.03)
        answers = [await asyncio.wrap_future(p) for p in pending]
    assert len(model.received) <= 2
    assert answers[-1] is not None and answers[-1].items


async def test_inline_acceptance_is_counted_in_the_state_directory(
    workspace: Path, private_state: Path
) -> None:
    (workspace / "add.py").write_text(SOURCE)
    async with (
        ScriptedModelServer([Turn(text="return a + b")]) as model,
        editor_session(workspace, env=model_env(model), settings=_settings()) as editor,
    ):
        editor.open("add.py")
        (item,) = await _complete(editor, "add.py")
        answer = await editor.command(item.command.command, *item.command.arguments)
        assert answer == {"counted": True}
        path = private_state / "inline-acceptance.json"
        async with asyncio.timeout(10):
            while not path.exists():
                await asyncio.sleep(0.02)
    counts = json.loads(path.read_text())
    assert counts == {"openai/scripted-model": {"accepted": 1, "shown": 1}}


async def test_inline_disabled_asks_nothing(workspace: Path) -> None:
    (workspace / "add.py").write_text(SOURCE)
    async with (
        ScriptedModelServer([Turn(text="return a + b")]) as model,
        editor_session(workspace, env=model_env(model), settings=_settings(enabled=False)) as ed,
    ):
        ed.open("add.py")
        assert await _complete(ed, "add.py") == []
    assert not model.received


async def test_inline_chat_fallback_sends_infill_prompt(workspace: Path) -> None:
    (workspace / "add.py").write_text(SOURCE)
    settings = {"provider": "openai", "inlineCompletion": {"api": "chat", "debounceMs": 0}}
    async with (
        ScriptedModelServer([Turn(text="```python\nreturn a + b\n```")]) as model,
        editor_session(workspace, env=model_env(model), settings=settings) as editor,
    ):
        editor.open("add.py")
        (item,) = await _complete(editor, "add.py")
    assert item.insert_text == "return a + b"
    (received,) = model.received
    assert received.path == "/v1/chat/completions"
    assert "def add(a, b):\n    <|CURSOR|>\n" in received.body["messages"][-1]["content"]
