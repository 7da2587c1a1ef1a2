"""Typing does not grow the server: every keystroke is a didChange notification (and an inline
request), and neither may leave anything behind in the protocol (the RSS row of
bench/bench_inline.py)."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from driveros.testing import ScriptedModelServer, Turn
from driveros_lsp._app import create_server

HEAD = "def area(radius):\n"
TAIL = "\n\nprint(area(2.0))\n"


class _Writer:
    def __init__(self) -> None:
        self.answers = 0
        self.event = asyncio.Event()

    def write(self, data: bytes) -> None:
        if b'"result"' in data:
            self.answers += 1
            self.event.set()


async def test_inline_typing_leaves_no_request_future_behind(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "area.py").write_text(HEAD + "    " + TAIL)
    async with ScriptedModelServer([Turn(text="x")], repeat_last=True) as model:
        monkeypatch.setenv("OPENAI_BASE_URL", model.openai_base_url)
        monkeypatch.setenv("OPENAI_API_KEY", "test-key")
        server = create_server()
        protocol = server.protocol
        writer = _Writer()
        protocol.set_writer(writer)

        def send(message: dict[str, Any]) -> None:
            protocol.handle_message(protocol.structure_message({"jsonrpc": "2.0", **message}))

        async def answered(count: int) -> None:
            async with asyncio.timeout(30):
                while writer.answers < count:
                    writer.event.clear()
                    await writer.event.wait()

        settings = {
            "provider": "openai",
            "inlineCompletion": {"api": "completions", "model": "m", "debounceMs": 0},
        }
        send(
            {
                "id": "init",
                "method": "initialize",
                "params": {
                    "capabilities": {},
                    "rootUri": tmp_path.as_uri(),
                    "initializationOptions": settings,
                },
            }
        )
        await answered(1)
        send({"method": "initialized", "params": {}})
        uri = (tmp_path / "area.py").as_uri()
        doc = {"uri": uri, "languageId": "python", "version": 1, "text": HEAD + "    " + TAIL}
        send({"method": "textDocument/didOpen", "params": {"textDocument": doc}})
        for i in range(200):
            line = f"    r{i}"
            send(
                {
                    "method": "textDocument/didChange",
                    "params": {
                        "textDocument": {"uri": uri, "version": i + 2},
                        "contentChanges": [{"text": HEAD + line + TAIL}],
                    },
                }
            )
            send(
                {
                    "id": i,
                    "method": "textDocument/inlineCompletion",
                    "params": {
                        "textDocument": {"uri": uri},
                        "position": {"line": 1, "character": len(line)},
                        "context": {"triggerKind": 2},
                    },
                }
            )
            await answered(i + 2)
        await asyncio.sleep(0.05)
        assert len(model.received) == 200
        assert protocol._request_futures == {}
