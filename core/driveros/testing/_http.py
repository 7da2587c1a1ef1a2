"""A tiny HTTP/1.1 server on asyncio streams: enough for JSON requests and SSE answers.

Keep-alive is honoured; streamed answers use chunked transfer encoding. No dependency.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

_REASONS = {
    200: "OK",
    400: "Bad Request",
    401: "Unauthorized",
    403: "Forbidden",
    404: "Not Found",
    405: "Method Not Allowed",
    413: "Payload Too Large",
    429: "Too Many Requests",
    500: "Internal Server Error",
    502: "Bad Gateway",
    503: "Service Unavailable",
    529: "Overloaded",
}


@dataclass
class HttpRequest:
    method: str
    path: str
    headers: dict[str, str]
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body or b"null")


@dataclass
class HttpResponder:
    """Writes one answer to a connection: a whole body, or a chunked stream."""

    writer: asyncio.StreamWriter
    keep_alive: bool = True
    started: bool = field(default=False)

    def _head(self, status: int, headers: dict[str, str]) -> bytes:
        lines = [f"HTTP/1.1 {status} {_REASONS.get(status, 'Status')}"]
        lines += [f"{k}: {v}" for k, v in headers.items()]
        lines.append("Connection: " + ("keep-alive" if self.keep_alive else "close"))
        return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")

    async def send(
        self,
        status: int,
        body: bytes,
        *,
        content_type: str = "application/json",
        headers: dict[str, str] | None = None,
    ) -> None:
        all_headers = {"Content-Type": content_type, "Content-Length": str(len(body))}
        all_headers.update(headers or {})
        self.started = True
        self.writer.write(self._head(status, all_headers) + body)
        await self.writer.drain()

    async def send_json(
        self, status: int, value: Any, *, headers: dict[str, str] | None = None
    ) -> None:
        await self.send(status, json.dumps(value).encode(), headers=headers)

    async def start_stream(self, *, content_type: str = "text/event-stream") -> None:
        headers = {
            "Content-Type": content_type,
            "Cache-Control": "no-cache",
            "Transfer-Encoding": "chunked",
        }
        self.started = True
        self.writer.write(self._head(200, headers))
        await self.writer.drain()

    async def write_chunk(self, data: bytes) -> None:
        if data:
            self.writer.write(b"%x\r\n%s\r\n" % (len(data), data))
            await self.writer.drain()

    async def end_stream(self) -> None:
        self.writer.write(b"0\r\n\r\n")
        await self.writer.drain()


Handler = Callable[[HttpRequest, HttpResponder], Awaitable[None]]


async def _read_body(reader: asyncio.StreamReader, headers: dict[str, str]) -> bytes:
    if "content-length" in headers:
        return await reader.readexactly(int(headers["content-length"]))
    if headers.get("transfer-encoding", "").lower() == "chunked":
        parts: list[bytes] = []
        while True:
            size = int((await reader.readline()).split(b";")[0].strip() or b"0", 16)
            if size == 0:
                await reader.readline()
                return b"".join(parts)
            parts.append(await reader.readexactly(size))
            await reader.readline()
    return b""


async def serve_connection(
    reader: asyncio.StreamReader, writer: asyncio.StreamWriter, handler: Handler
) -> None:
    """Serve requests on one connection until the peer closes it or asks to."""
    try:
        while True:
            line = await reader.readline()
            if not line:
                return
            try:
                method, target, _version = line.decode("latin-1").rstrip("\r\n").split(" ", 2)
            except ValueError:
                return
            headers: dict[str, str] = {}
            while True:
                raw = await reader.readline()
                if raw in (b"\r\n", b"\n", b""):
                    break
                key, _, value = raw.decode("latin-1").partition(":")
                headers[key.strip().lower()] = value.strip()
            body = await _read_body(reader, headers)
            keep_alive = headers.get("connection", "").lower() != "close"
            responder = HttpResponder(writer, keep_alive=keep_alive)
            await handler(HttpRequest(method, target.split("?", 1)[0], headers, body), responder)
            if not keep_alive:
                return
    except (ConnectionError, asyncio.IncompleteReadError):
        return
    finally:
        writer.close()
        try:
            await writer.wait_closed()
        except (ConnectionError, OSError):
            pass
