"""A small ACP client for the tests: raw newline-delimited JSON-RPC to ``driveros acp``, and
every message the agent sends validated against the official ACP v1 JSON Schema (from the
``@agentclientprotocol/sdk`` npm package, installed once into a cache directory)."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import jsonschema

DRIVEROS = Path(sys.executable).parent / "driveros"
SDK_VERSION = "2.4.0"


def node_cache() -> Path:
    base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return Path(os.environ.get("DRIVEROS_ACP_NODE_CACHE") or base / "driveros" / "acp-sdk")


def install_sdk() -> Path:
    """The npm package's directory (installed on first use; later runs need no network)."""
    cache = node_cache()
    package = cache / "node_modules" / "@agentclientprotocol" / "sdk"
    if (package / "schema" / "v1" / "schema.json").is_file():
        return package
    npm = shutil.which("npm")
    assert npm is not None, "the ACP tests need npm (node >= 20) to install the ACP schema"
    cache.mkdir(parents=True, exist_ok=True)
    if not (cache / "package.json").exists():
        (cache / "package.json").write_text('{"private": true}\n')
    subprocess.run(
        [
            npm,
            "install",
            "--no-audit",
            "--no-fund",
            "--loglevel=error",
            f"@agentclientprotocol/sdk@{SDK_VERSION}",
        ],
        cwd=cache,
        check=True,
        timeout=240,
    )
    return package


class Schema:
    def __init__(self, path: Path) -> None:
        self.defs = json.loads(path.read_text())["$defs"]

    def validate(self, name: str, value: Any) -> None:
        jsonschema.validate(value, {"$ref": f"#/$defs/{name}", "$defs": self.defs})


#: The schema definition of each response, by the method of the request it answers.
RESPONSES = {
    "initialize": "InitializeResponse",
    "session/new": "NewSessionResponse",
    "session/load": "LoadSessionResponse",
    "session/prompt": "PromptResponse",
    "session/set_mode": "SetSessionModeResponse",
}
#: The schema definition of each request or notification the agent may send.
AGENT_MESSAGES = {
    "session/update": "SessionNotification",
    "session/request_permission": "RequestPermissionRequest",
    "fs/read_text_file": "ReadTextFileRequest",
    "fs/write_text_file": "WriteTextFileRequest",
}

Handler = Callable[[dict[str, Any]], Awaitable[Any]]


@dataclass
class AcpClient:
    """Talks to one ``driveros acp`` process. ``handlers`` answer the agent's requests."""

    proc: asyncio.subprocess.Process
    schema: Schema
    handlers: dict[str, Handler] = field(default_factory=dict)
    updates: list[dict[str, Any]] = field(default_factory=list)
    requests: list[dict[str, Any]] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    _next: int = 0
    _pending: dict[int, tuple[str, asyncio.Future[Any]]] = field(default_factory=dict)
    _reader: asyncio.Task[None] | None = None
    _answering: set[asyncio.Task[None]] = field(default_factory=set)

    def start(self) -> None:
        self._reader = asyncio.create_task(self._read())

    async def _send(self, message: dict[str, Any]) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps({"jsonrpc": "2.0", **message}).encode() + b"\n")
        await self.proc.stdin.drain()

    async def request(self, method: str, params: dict[str, Any]) -> Any:
        self._next += 1
        fut: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self._pending[self._next] = (method, fut)
        await self._send({"id": self._next, "method": method, "params": params})
        return await fut

    async def notify(self, method: str, params: dict[str, Any]) -> None:
        await self._send({"method": method, "params": params})

    async def _read(self) -> None:
        assert self.proc.stdout is not None
        while line := await self.proc.stdout.readline():
            try:
                message = json.loads(line)
            except json.JSONDecodeError:
                self.errors.append(f"not JSON on stdout: {line[:200]!r}")
                continue
            try:
                await self._dispatch(message)
            except jsonschema.ValidationError as exc:
                self.errors.append(f"schema: {exc.message} in {json.dumps(message)[:500]}")
        for _, fut in self._pending.values():
            if not fut.done():
                fut.set_exception(ConnectionError("the agent closed stdout"))

    async def _dispatch(self, message: dict[str, Any]) -> None:
        assert message.get("jsonrpc") == "2.0"
        if "method" in message:
            method = message["method"]
            name = AGENT_MESSAGES.get(method)
            if name is None:
                self.errors.append(f"unexpected method {method}")
            else:
                self.schema.validate(name, message["params"])
            if "id" not in message:
                if method == "session/update":
                    self.updates.append(message["params"]["update"])
                return
            self.requests.append(message)
            task = asyncio.create_task(self._answer(message))
            self._answering.add(task)
            task.add_done_callback(self._answering.discard)
            return
        method, fut = self._pending.pop(message["id"])
        if "error" in message:
            fut.set_exception(RuntimeError(json.dumps(message["error"])))
            return
        self.schema.validate(RESPONSES[method], message["result"])
        fut.set_result(message["result"])

    async def _answer(self, message: dict[str, Any]) -> None:
        handler = self.handlers.get(message["method"])
        if handler is None:
            await self._send(
                {"id": message["id"], "error": {"code": -32601, "message": "not handled"}}
            )
            return
        try:
            result = await handler(message["params"])
        except Exception as exc:
            await self._send({"id": message["id"], "error": {"code": -32603, "message": str(exc)}})
            return
        await self._send({"id": message["id"], "result": result})

    async def close(self) -> int:
        assert self.proc.stdin is not None
        with contextlib.suppress(ConnectionError):
            self.proc.stdin.close()
        try:
            code = await asyncio.wait_for(self.proc.wait(), 30)
        except TimeoutError:
            self.proc.kill()
            code = await self.proc.wait()
        if self._reader is not None:
            await self._reader
        return code

    def kinds(self) -> list[str]:
        return [u["sessionUpdate"] for u in self.updates]

    def text(self, kind: str = "agent_message_chunk") -> str:
        return "".join(u["content"]["text"] for u in self.updates if u["sessionUpdate"] == kind)


async def start_agent(
    schema: Schema,
    *,
    env: dict[str, str],
    cwd: Path,
    args: tuple[str, ...] = (),
    options: tuple[str, ...] = (),
    stderr: Any = None,
) -> AcpClient:
    """``options`` go before the subcommand (``-v``); ``stderr``: where the agent's log goes
    (default: the test's own stderr)."""
    proc = await asyncio.create_subprocess_exec(
        str(DRIVEROS),
        *options,
        "acp",
        *args,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=stderr,
        env=env,
        cwd=cwd,
        start_new_session=True,
    )
    client = AcpClient(proc=proc, schema=schema)
    client.start()
    return client
