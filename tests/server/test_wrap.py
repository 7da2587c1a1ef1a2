"""``driveros-lsp --wrap -- CMD…`` (issue 29, row 1): a real inner server (pygls) behind the
real driveros-lsp process, driven over raw JSON-RPC so that bytes can be compared."""

from __future__ import annotations

import asyncio
import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from driveros import __version__
from driveros_lsp.protocol import ACTION_FIX_PREFIX, CMD_AGENT_FIX
from driveros_lsp.wrap._proxy import SHUTDOWN_GRACE_S
from tests.server._lsp import server_env
from tests.server._wrap_client import RawClient

INNER = Path(__file__).resolve().parent / "_wrap_inner.py"
SOURCE = "x = 1\ny = BAD\n"


def wrapped(*inner: str) -> list[str]:
    return [sys.executable, "-m", "driveros_lsp", "--wrap", "--", *inner]


def init_params(root: Path, encodings: list[str] | None = None, **extra: Any) -> dict[str, Any]:
    caps: dict[str, Any] = {
        "window": {"showMessage": {"messageActionItem": {"additionalPropertiesSupport": False}}},
        "workspace": {"configuration": True},
    }
    if encodings is not None:
        caps["general"] = {"positionEncodings": encodings}
    return {
        "processId": None,
        "rootUri": root.as_uri(),
        "capabilities": caps,
        **extra,
    }


async def started(client: RawClient, root: Path, **kwargs: Any) -> Any:
    answer = await client.request("initialize", init_params(root, **kwargs))
    client.notify("initialized", {})
    return answer


def open_doc(client: RawClient, uri: str, text: str = SOURCE) -> None:
    params = {"textDocument": {"uri": uri, "languageId": "python", "version": 1, "text": text}}
    client.notify("textDocument/didOpen", params)


async def stop(client: RawClient) -> int:
    assert (await client.request("shutdown"))["result"] is None
    client.notify("exit", None)
    return await client.exit_code()


async def test_wrap_merges_capabilities_and_encoding(workspace: Path) -> None:
    async with RawClient.start(wrapped(sys.executable, str(INNER)), env=server_env()) as client:
        answer = await started(client, workspace, encodings=["utf-32", "utf-8", "utf-16"])
        caps = answer["result"]["capabilities"]
        # the inner server chose the encoding; it is the one encoding of the session
        assert caps["positionEncoding"] == "utf-32"
        assert caps["codeActionProvider"]["codeActionKinds"] == ["quickfix", "refactor"]
        commands = caps["executeCommandProvider"]["commands"]
        assert {"inner.echo", "inner.crash", CMD_AGENT_FIX} <= set(commands)
        assert caps["hoverProvider"] is True  # the inner server's own
        assert answer["result"]["serverInfo"]["name"] == "wrap-inner"
        assert await stop(client) == 0


async def test_wrap_gives_driveros_only_its_own_settings(workspace: Path) -> None:
    async with RawClient.start(wrapped(sys.executable, str(INNER)), env=server_env()) as client:
        options = {"python": {"analysis": {}}, "driveros": {"maxIterations": 0}}
        await started(client, workspace, initializationOptions=options)
        shown = await client.wait_for("window/showMessage", lambda p: "settings" in p["message"])
        assert "maxIterations" in shown["message"]
        assert "python" not in shown["message"]  # the inner server's part is not driveros'
        assert await stop(client) == 0


async def test_wrap_adds_fix_actions_for_inner_diagnostics(workspace: Path) -> None:
    async with RawClient.start(wrapped(sys.executable, str(INNER)), env=server_env()) as client:
        await started(client, workspace)
        uri = (workspace / "calc.py").as_uri()
        open_doc(client, uri)
        published = await client.wait_for(
            "textDocument/publishDiagnostics", lambda p: p["uri"] == uri and p["diagnostics"]
        )
        assert [d["message"] for d in published["diagnostics"]] == ["inner: BAD here"]
        at = {"start": {"line": 1, "character": 5}, "end": {"line": 1, "character": 5}}
        # eglot's request for a range flymake has no diagnostic in: `diagnostics: []`
        answer = await client.request(
            "textDocument/codeAction",
            {"textDocument": {"uri": uri}, "range": at, "context": {"diagnostics": []}},
        )
        titles = [a["title"] for a in answer["result"]]
        assert titles[0] == "Inner refactor"  # the inner server's actions come first
        assert ACTION_FIX_PREFIX + "inner: BAD here" in titles
        fix = next(a for a in answer["result"] if a["title"].startswith(ACTION_FIX_PREFIX))
        assert fix["command"]["command"] == CMD_AGENT_FIX
        assert fix["command"]["arguments"][0]["diagnostics"][0]["source"] == "inner"
        # a client that sends the diagnostics gets both servers' actions on them
        answer = await client.request(
            "textDocument/codeAction",
            {
                "textDocument": {"uri": uri},
                "range": published["diagnostics"][0]["range"],
                "context": {"diagnostics": published["diagnostics"]},
            },
        )
        titles = [a["title"] for a in answer["result"]]
        assert "Inner fix: inner: BAD here" in titles
        assert ACTION_FIX_PREFIX + "inner: BAD here" in titles
        # away from the diagnostic: no agent fix
        away = {"start": {"line": 0, "character": 0}, "end": {"line": 0, "character": 1}}
        answer = await client.request(
            "textDocument/codeAction",
            {"textDocument": {"uri": uri}, "range": away, "context": {"diagnostics": []}},
        )
        assert [a["title"] for a in answer["result"]] == ["Inner refactor"]
        # resolving driveros' own action is answered without the inner server
        resolved = await client.request("codeAction/resolve", fix)
        assert resolved["result"] == fix
        assert await stop(client) == 0


async def test_wrap_forwards_bytes_unchanged_and_routes_commands(workspace: Path) -> None:
    async with RawClient.start(wrapped(sys.executable, str(INNER)), env=server_env()) as client:
        await started(client, workspace)
        uri = (workspace / "calc.py").as_uri()
        open_doc(client, uri)
        # an odd but valid spelling (key order, spaces, escapes) reaches the inner server as is:
        # the answer's bytes are exactly the inner server's
        body = (
            b'{ "params" : {"position": {"character": 2, "line": 0},'
            b' "textDocument": {"uri": "' + uri.encode() + b'"}}, "id": 77,'
            b' "jsonrpc": "2.0", "method": "textDocument/hover"}'
        )
        hover = await asyncio.wait_for(client.request_raw(77, body), 30)
        assert "inner hover at 0:2" in json.dumps(hover["result"])
        raw = next(b for b, m in client.received if m.get("id") == 77)
        assert raw == json.dumps(hover).encode()  # pygls' spelling, not a re-serialization
        echoed = await client.request(
            "workspace/executeCommand", {"command": "inner.echo", "arguments": ["é", 1]}
        )
        assert echoed["result"] == {"echo": ["é", 1]}
        listed = await client.request(
            "workspace/executeCommand", {"command": "driveros.agent.list", "arguments": []}
        )
        assert listed["result"]["runs"] == []
        # the inner server's question reaches the client and the answer reaches it back,
        # while driveros asks the client for its settings (its own request ids)
        client.answers["window/showMessageRequest"] = lambda m: {"title": "Yes"}
        client.answers["workspace/configuration"] = lambda m: [{"maxIterations": 7}]
        # another server's settings (eglot sends {} on connect) leave driveros' alone
        client.notify("workspace/didChangeConfiguration", {"settings": {"python": {}}})
        client.notify("workspace/didChangeConfiguration", {"settings": {}})
        # no settings at all: driveros asks for its section
        client.notify("workspace/didChangeConfiguration", {"settings": None})
        asked = await client.request(
            "workspace/executeCommand", {"command": "inner.ask", "arguments": []}
        )
        assert asked["result"] == {"answer": "Yes"}
        config_requests = [
            m for _, m in client.received if m.get("method") == "workspace/configuration"
        ]
        assert len(config_requests) == 1
        # driveros' ids are its own and unguessable: an inner server cannot forge one
        assert re.fullmatch(r"driveros-wrap/[0-9a-f]{16}/\d+", config_requests[0]["id"])
        assert config_requests[0]["params"]["items"] == [{"section": "driveros"}]
        assert await stop(client) == 0


ECHO_SERVER = r"""
import json, os, sys
from driveros_lsp.wrap._inner import frame

def frames():
    while True:
        length = None
        while (line := sys.stdin.buffer.readline().strip()):
            if line.lower().startswith(b"content-length:"):
                length = int(line.split(b":")[1])
        if length is None:
            return
        yield sys.stdin.buffer.read(length)

for body in frames():
    message = json.loads(body)
    if "id" not in message or "method" not in message:
        continue
    if message["method"] == "shutdown" and os.environ.get("ECHO_NO_SHUTDOWN"):
        continue  # a server that hangs on shutdown
    result = {"capabilities": {}} if message["method"] == "initialize" else body.decode()
    if message["method"] == "echo/notify":
        note = b'{"method":"echo/note", "params":{"z":1,"a":"\\u00e9"},"jsonrpc":"2.0"}'
        sys.stdout.buffer.write(frame(note))
    answer = json.dumps({"jsonrpc": "2.0", "id": message["id"], "result": result})
    sys.stdout.buffer.write(frame(answer.encode()))
    sys.stdout.buffer.flush()
"""


async def test_wrap_passes_bytes_through_both_ways(workspace: Path, tmp_path: Path) -> None:
    echo = tmp_path / "echo_server.py"
    echo.write_text(ECHO_SERVER)
    async with RawClient.start(wrapped(sys.executable, str(echo)), env=server_env()) as client:
        await started(client, workspace)
        body = (
            b'{"id":"x-1" ,  "method":"echo/raw",'
            b'"jsonrpc":"2.0","params":{"b":[1,2.50],"a":"\\u00e9"}}'
        )
        answer = await asyncio.wait_for(client.request_raw("x-1", body), 30)
        assert answer["result"].encode() == body  # what the inner server read: the same bytes
        body = b'{"jsonrpc":"2.0","id":"x-2","method":"echo/notify"}'
        await asyncio.wait_for(client.request_raw("x-2", body), 30)
        note = next(b for b, m in client.received if m.get("method") == "echo/note")
        assert note == b'{"method":"echo/note", "params":{"z":1,"a":"\\u00e9"},"jsonrpc":"2.0"}'


async def test_wrap_answers_shutdown_when_the_inner_server_hangs(
    workspace: Path, tmp_path: Path
) -> None:
    echo = tmp_path / "echo_server.py"
    echo.write_text(ECHO_SERVER)
    env = {**server_env(), "ECHO_NO_SHUTDOWN": "1"}
    async with RawClient.start(wrapped(sys.executable, str(echo)), env=env) as client:
        await started(client, workspace)
        answer = await client.request("shutdown", timeout=SHUTDOWN_GRACE_S + 20)
        assert answer["result"] is None
        client.notify("exit", None)
        assert await client.exit_code() == 0  # the hung server was stopped, not waited for


async def test_wrap_reports_the_inner_server_exit(workspace: Path) -> None:
    async with RawClient.start(wrapped(sys.executable, str(INNER)), env=server_env()) as client:
        await started(client, workspace)
        crashed = await client.request(
            "workspace/executeCommand", {"command": "inner.crash", "arguments": []}
        )
        assert "error" in crashed
        assert "exited" in crashed["error"]["message"]
        shown = await client.wait_for("window/showMessage", lambda p: "_wrap_inner" in p["message"])
        assert shown["type"] == 1
        assert "exited with status 3" in shown["message"]
        logged = await client.wait_for("window/logMessage", lambda p: "crashing" in p["message"])
        assert "inner: crashing on purpose" in logged["message"]
        # later requests for the inner server fail at once; driveros still answers
        hover = await client.request(
            "textDocument/hover",
            {
                "textDocument": {"uri": (workspace / "calc.py").as_uri()},
                "position": {"line": 0, "character": 0},
            },
        )
        assert "error" in hover
        listed = await client.request(
            "workspace/executeCommand", {"command": "driveros.agent.list", "arguments": []}
        )
        assert listed["result"]["runs"] == []
        assert await stop(client) == 0
    assert b"crashing on purpose" in client.stderr


async def test_wrap_inner_server_that_cannot_start(workspace: Path) -> None:
    missing = str(workspace / "no-such-language-server")
    async with RawClient.start(wrapped(missing), env=server_env()) as client:
        assert await client.exit_code() == 1
    assert b"cannot start" in client.stderr
    assert missing.encode() in client.stderr


@pytest.mark.parametrize(
    ("argv", "problem"),
    [(["--wrap"], "--wrap needs"), (["--", "pylsp"], "goes with --wrap")],
)
def test_wrap_usage_errors(argv: list[str], problem: str) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "driveros_lsp", *argv],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 1
    assert problem in done.stderr


def test_version_prints_the_version() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "driveros_lsp", "--version"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0
    assert done.stdout.strip() == f"driveros-lsp {__version__}"
