"""--wrap in process: driveros sees the buffer the user sees, whatever sync the inner server
asked the client for (incremental changes are applied on LSP's lines, in the session's
encoding), and the pure merge rules."""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path
from typing import Any

from driveros_lsp._app import create_server
from driveros_lsp.wrap import InnerServer, Wrapper
from driveros_lsp.wrap._inner import frame
from driveros_lsp.wrap._merge import apply_changes, diagnostics_at, merge_capabilities

INNER = Path(__file__).resolve().parent / "_wrap_inner.py"


class _Collector:
    def __init__(self) -> None:
        self.messages: list[dict[str, Any]] = []
        self._buffer = b""

    def write(self, data: bytes) -> None:
        self._buffer += data
        while (end := self._buffer.find(b"\r\n\r\n")) >= 0:
            length = int(self._buffer[:end].split(b":")[1])
            if len(self._buffer) < end + 4 + length:
                return
            self.messages.append(json.loads(self._buffer[end + 4 : end + 4 + length]))
            self._buffer = self._buffer[end + 4 + length :]

    async def answer(self, mid: int) -> dict[str, Any]:
        while True:
            for m in self.messages:
                if m.get("id") == mid and "method" not in m:
                    return m
            await asyncio.sleep(0.01)


def _send(reader: asyncio.StreamReader, message: dict[str, Any]) -> None:
    reader.feed_data(frame(json.dumps({"jsonrpc": "2.0", **message}).encode()))


async def test_wrap_applies_incremental_changes_on_lsp_lines(workspace: Path) -> None:
    server = create_server()
    inner = InnerServer([sys.executable, str(INNER)])
    await inner.start()
    client = _Collector()
    reader = asyncio.StreamReader()
    session = asyncio.ensure_future(Wrapper(server, inner, client).serve(reader))
    try:
        _send(
            reader,
            {
                "id": 1,
                "method": "initialize",
                "params": {"processId": None, "rootUri": workspace.as_uri(), "capabilities": {}},
            },
        )
        answer = await asyncio.wait_for(client.answer(1), 30)
        assert answer["result"]["capabilities"]["textDocumentSync"]["change"] == 2  # incremental
        uri = (workspace / "calc.py").as_uri()
        text = "a = 1\fb = 2\nc = '\u2028'\nd = \U0001f600x\n"
        _send(
            reader,
            {
                "method": "textDocument/didOpen",
                "params": {
                    "textDocument": {"uri": uri, "languageId": "python", "version": 1, "text": text}
                },
            },
        )

        def at(line: int, start: int, end: int, new: str) -> dict[str, Any]:
            span = {
                "start": {"line": line, "character": start},
                "end": {"line": line, "character": end},
            }
            return {"range": span, "text": new}

        # LSP's line 2 comes after one \n and one \n: \f and U+2028 end no line; the emoji
        # counts two UTF-16 units
        _send(
            reader,
            {
                "method": "textDocument/didChange",
                "params": {
                    "textDocument": {"uri": uri, "version": 2},
                    "contentChanges": [at(1, 0, 1, "C"), at(2, 6, 7, "y")],
                },
            },
        )
        _send(
            reader,
            {
                "id": 2,
                "method": "workspace/executeCommand",
                "params": {"command": "driveros.agent.list", "arguments": []},
            },
        )
        await asyncio.wait_for(client.answer(2), 30)
        doc = server.workspace.get_text_document(uri)
        assert doc.source == "a = 1\fb = 2\nC = '\u2028'\nd = \U0001f600y\n"
        assert doc.version == 2
        _send(reader, {"id": 3, "method": "shutdown"})
        await asyncio.wait_for(client.answer(3), 30)
        _send(reader, {"method": "exit"})
        await asyncio.wait_for(session, 30)
    finally:
        if not session.done():
            reader.feed_eof()
            await asyncio.wait_for(session, 30)
        await inner.stop()


def test_apply_changes_counts_in_the_session_encoding() -> None:
    text = "é\U0001f600z\n"
    span = {"start": {"line": 0, "character": 6}, "end": {"line": 0, "character": 7}}
    assert apply_changes(text, [{"range": span, "text": "Z"}], "utf-8") == "é\U0001f600Z\n"
    span = {"start": {"line": 0, "character": 2}, "end": {"line": 0, "character": 3}}
    assert apply_changes(text, [{"range": span, "text": "Z"}], "utf-32") == "é\U0001f600Z\n"
    assert apply_changes(text, [{"text": "whole"}], "utf-16") == "whole"
    assert apply_changes(text, [{"range": "bad", "text": "x"}], "utf-16") is None


def test_merge_capabilities_unions_kinds_and_commands() -> None:
    inner = {
        "codeActionProvider": {"codeActionKinds": ["refactor"], "resolveProvider": True},
        "executeCommandProvider": {"commands": ["inner.a"]},
        "positionEncoding": "utf-8",
        "textDocumentSync": 2,
    }
    own = {
        "codeActionProvider": {"codeActionKinds": ["quickfix"]},
        "executeCommandProvider": {"commands": ["driveros.agent.fix"]},
        "positionEncoding": "utf-8",
        "textDocumentSync": {"change": 1},
    }
    assert merge_capabilities(inner, own) == {
        "codeActionProvider": {
            "codeActionKinds": ["refactor", "quickfix"],
            "resolveProvider": True,
        },
        "executeCommandProvider": {"commands": ["inner.a", "driveros.agent.fix"]},
        "positionEncoding": "utf-8",
        "textDocumentSync": 2,
    }
    # an inner server that serves every kind (true) keeps doing so; none at all gets ours
    assert merge_capabilities({"codeActionProvider": True}, own)["codeActionProvider"] is True
    assert merge_capabilities({}, own)["codeActionProvider"] == {"codeActionKinds": ["quickfix"]}


def test_diagnostics_at_touching_ranges() -> None:
    def diag(line: int, start: int, end: int) -> dict[str, Any]:
        return {
            "range": {
                "start": {"line": line, "character": start},
                "end": {"line": line, "character": end},
            },
            "message": f"{line}:{start}",
        }

    diags = [diag(0, 0, 3), diag(1, 4, 8), diag(3, 0, 1)]
    cursor = {"start": {"line": 1, "character": 8}, "end": {"line": 1, "character": 8}}
    assert [d["message"] for d in diagnostics_at(diags, cursor)] == ["1:4"]
    lines = {"start": {"line": 0, "character": 0}, "end": {"line": 2, "character": 0}}
    assert [d["message"] for d in diagnostics_at(diags, lines)] == ["0:0", "1:4"]
    assert diagnostics_at(diags, None) == []
