"""``publishDiagnostics`` (issue 29, row 1, optional part): after a save driveros publishes the
build feed's errors for the workspace (ruff's undefined name, a failing test at its assert
line), computed in the local sandbox; off by default; behind --wrap the client gets them
together with the inner server's (one union per document)."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path
from typing import Any

import pytest

from driveros_lsp.protocol import DIAGNOSTIC_SOURCE
from tests.server._lsp import server_env
from tests.server._wrap_client import RawClient

INNER = Path(__file__).resolve().parent / "_wrap_inner.py"
CALC = "def add(a, b):\n    return a + c  # BAD\n"
VENV_BIN = str(Path(sys.executable).parent)


@pytest.fixture
def project(workspace: Path) -> Path:
    (workspace / "calc.py").write_text(CALC)
    return workspace


def _env() -> dict[str, str]:
    """The checks' tools (ruff) come from this environment, as from an activated venv."""
    env = server_env()
    env["PATH"] = f"{VENV_BIN}:{env.get('PATH', '/usr/bin:/bin')}"
    return env


def _init(root: Path, options: Any) -> dict[str, Any]:
    return {
        "processId": None,
        "rootUri": root.as_uri(),
        "capabilities": {},
        "initializationOptions": options,
    }


async def _save(client: RawClient, root: Path) -> str:
    uri = (root / "calc.py").as_uri()
    doc = {"uri": uri, "languageId": "python", "version": 1, "text": CALC}
    client.notify("textDocument/didOpen", {"textDocument": doc})
    client.notify("textDocument/didSave", {"textDocument": {"uri": uri}})
    return uri


def _ours(params: dict[str, Any]) -> list[dict[str, Any]]:
    return [d for d in params["diagnostics"] if d.get("source") == DIAGNOSTIC_SOURCE]


async def _stop(client: RawClient) -> int:
    await client.request("shutdown")
    client.notify("exit", None)
    return await client.exit_code()


async def test_publish_diagnostics_after_save(project: Path) -> None:
    argv = [sys.executable, "-m", "driveros_lsp", "--stdio"]
    async with RawClient.start(argv, env=_env()) as client:
        answer = await client.request("initialize", _init(project, {"publishDiagnostics": True}))
        assert answer["result"]["capabilities"]["textDocumentSync"]["save"] is not None
        client.notify("initialized", {})
        uri = await _save(client, project)
        published = await client.wait_for(
            "textDocument/publishDiagnostics",
            lambda p: p["uri"] == uri and bool(_ours(p)),
            timeout=120,
        )
        failing = _ours(published)
        assert [d["range"]["start"]["line"] for d in failing] == [1]
        assert "c" in failing[0]["message"]
        assert failing[0]["data"] == {"runId": "workspace"}
        assert await _stop(client) == 0


async def test_publish_diagnostics_puts_a_failing_test_at_its_assert(workspace: Path) -> None:
    (workspace / "calc.py").write_text("def add(a, b):\n    return a - b\n")
    test = "from calc import add\n\n\ndef test_add():\n    assert add(1, 2) == 3\n"
    (workspace / "test_calc.py").write_text(test)
    argv = [sys.executable, "-m", "driveros_lsp", "--stdio"]
    async with RawClient.start(argv, env=_env()) as client:
        await client.request("initialize", _init(workspace, {"publishDiagnostics": True}))
        client.notify("initialized", {})
        uri = (workspace / "test_calc.py").as_uri()
        client.notify("textDocument/didSave", {"textDocument": {"uri": uri}})
        published = await client.wait_for(
            "textDocument/publishDiagnostics",
            lambda p: p["uri"] == uri and bool(_ours(p)),
            timeout=120,
        )
        failing = _ours(published)
        assert [d["range"]["start"]["line"] for d in failing] == [4]  # the assert line
        assert "assert -1 == 3" in failing[0]["message"]
        assert await _stop(client) == 0


async def test_publish_diagnostics_is_off_by_default(project: Path) -> None:
    argv = [sys.executable, "-m", "driveros_lsp", "--stdio"]
    async with RawClient.start(argv, env=_env()) as client:
        await client.request("initialize", _init(project, None))
        client.notify("initialized", {})
        await _save(client, project)
        await asyncio.sleep(3)  # three debounce periods: a computation would have started
        listed = await client.request(
            "workspace/executeCommand", {"command": "driveros.agent.list", "arguments": []}
        )
        assert listed["result"]["runs"] == []
        assert client.notifications("textDocument/publishDiagnostics") == []
        assert await _stop(client) == 0


async def test_wrap_publishes_the_union_with_the_inner_server(project: Path) -> None:
    argv = [sys.executable, "-m", "driveros_lsp", "--wrap", "--", sys.executable, str(INNER)]
    async with RawClient.start(argv, env=_env()) as client:
        options = {"driveros": {"publishDiagnostics": True}}
        await client.request("initialize", _init(project, options))
        client.notify("initialized", {})
        uri = await _save(client, project)
        published = await client.wait_for(
            "textDocument/publishDiagnostics",
            lambda p: p["uri"] == uri and bool(_ours(p)),
            timeout=120,
        )
        sources = sorted(d.get("source") for d in published["diagnostics"])
        assert sources == [DIAGNOSTIC_SOURCE, "inner"]  # neither hides the other
        assert await _stop(client) == 0
