"""A bare LSP client over TCP for ``driveros-lsp --tcp`` tests: starts the server, reads its
token file and listening line from stderr, and speaks framed JSON-RPC on a socket."""

from __future__ import annotations

import asyncio
import contextlib
import json
import re
import sys
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

LSP = [sys.executable, "-m", "driveros_lsp"]


@dataclass
class TcpServer:
    proc: asyncio.subprocess.Process
    host: str
    port: int
    said: str
    token_file: Path | None

    @property
    def token(self) -> str:
        assert self.token_file is not None
        return self.token_file.read_text().strip()


async def start(*args: str) -> asyncio.subprocess.Process:
    return await asyncio.create_subprocess_exec(
        *LSP,
        *args,
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )


async def listening(proc: asyncio.subprocess.Process) -> TcpServer:
    """Wait for the listening line; the server, with what stderr said up to it."""
    assert proc.stderr is not None
    said = ""
    token_file: Path | None = None
    while True:
        line = (await asyncio.wait_for(proc.stderr.readline(), 30)).decode()
        assert line, f"the server exited before listening: {said}"
        said += line
        if found := re.search(r"token file: (.+)$", line.strip()):
            token_file = Path(found[1])
        if match := re.search(r"listening on (.+):(\d+)$", line.strip()):
            return TcpServer(proc, match[1], int(match[2]), said, token_file)


@contextlib.asynccontextmanager
async def tcp_server(*args: str) -> AsyncIterator[TcpServer]:
    proc = await start("--tcp", "127.0.0.1:0", *args)
    try:
        yield await listening(proc)
    finally:
        if proc.returncode is None:
            proc.kill()
        await proc.communicate()


@dataclass
class Conn:
    reader: asyncio.StreamReader
    writer: asyncio.StreamWriter
    next_id: int = 0
    notes: list[dict[str, Any]] = field(default_factory=list)

    def send(self, message: dict[str, Any]) -> None:
        body = json.dumps({"jsonrpc": "2.0", **message}).encode()
        self.writer.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)

    async def read(self, timeout: float = 30) -> dict[str, Any] | None:
        """The next message, or None at EOF."""

        async def one() -> dict[str, Any] | None:
            length = 0
            while True:
                line = await self.reader.readline()
                if not line:
                    return None
                if not line.strip():
                    break
                if line.lower().startswith(b"content-length:"):
                    length = int(line.split(b":", 1)[1])
            message: dict[str, Any] = json.loads(await self.reader.readexactly(length))
            return message

        return await asyncio.wait_for(one(), timeout)

    async def request(self, method: str, params: Any, timeout: float = 30) -> dict[str, Any]:
        """Send a request; its response (notifications and server requests are kept aside,
        a server request answered with null)."""
        self.next_id += 1
        mine = self.next_id
        self.send({"id": mine, "method": method, "params": params})
        while True:
            message = await self.read(timeout)
            assert message is not None, f"the server closed the connection during {method}"
            if message.get("id") == mine and "method" not in message:
                return message
            if "method" in message and "id" in message:
                self.send({"id": message["id"], "result": None})
            self.notes.append(message)

    async def initialize(self, options: Any, root: Path | None = None) -> dict[str, Any]:
        params = {
            "processId": None,
            "rootUri": root.as_uri() if root else None,
            "capabilities": {},
            "initializationOptions": options,
        }
        return await self.request("initialize", params)

    async def closed(self, timeout: float = 30) -> bool:
        """Whether the server closes the connection (EOF) without another message."""
        message = await self.read(timeout)
        return message is None

    async def aclose(self) -> None:
        self.writer.close()
        with contextlib.suppress(ConnectionError):
            await self.writer.wait_closed()


async def connect(server: TcpServer) -> Conn:
    reader, writer = await asyncio.open_connection(server.host, server.port)
    return Conn(reader, writer)
