"""A fault-injecting HTTP/1.1 server on 127.0.0.1 for retry, timeout and cancel tests.

Each request consumes the next scripted :class:`Fault` (the last one repeats). The server
counts requests and notes when each connection is closed by the client, so tests can prove
that cancelling a call closes the socket at once and that nothing leaks.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import socket
import struct
from dataclasses import dataclass, field
from typing import Any

OPENAI_STREAM = (
    b'data: {"id":"c1","model":"m","choices":[{"index":0,"delta":{"content":"Hel"}}]}\n\n'
    b'data: {"id":"c1","model":"m","choices":[{"index":0,"delta":{"content":"lo"},'
    b'"finish_reason":"stop"}]}\n\n'
    b'data: {"id":"c1","model":"m","choices":[],"usage":{"prompt_tokens":3,"completion_tokens":2,'
    b'"total_tokens":5}}\n\n'
    b"data: [DONE]\n\n"
)

OPENAI_JSON = json.dumps(
    {
        "id": "c1",
        "model": "m",
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": "Hello"},
                "finish_reason": "stop",
            }
        ],
        "usage": {"prompt_tokens": 3, "completion_tokens": 2, "total_tokens": 5},
    }
).encode()


@dataclass
class Fault:
    """What to do with one request.

    ``kind``: "ok" (answer ``body``), "status" (an error answer), "reset" (reset the TCP
    connection: an RST, as a crashed peer or a middlebox sends), "truncate" (send headers and
    ``body``, then close mid-response), "hang" (send headers and ``body``, then keep the
    connection open silently), "stall" (accept the request and send nothing at all, not even
    headers, until the client leaves), "drip" (send headers, then each of ``parts`` after
    ``delay`` seconds of silence), "reset_after" (send headers and ``body``, then reset).
    """

    kind: str = "ok"
    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)
    body: bytes = b""
    delay: float = 0.0
    content_type: str = "application/json"
    parts: list[bytes] = field(default_factory=list)


class FaultServer:
    def __init__(self, faults: list[Fault]) -> None:
        self.faults = faults
        self.requests: list[dict[str, Any]] = []
        self.open_connections = 0
        self.peak_open = 0
        self.connections = 0
        self.closed = asyncio.Event()
        self._server: asyncio.Server | None = None
        self._tasks: set[asyncio.Task[None]] = set()
        self._writers: set[asyncio.StreamWriter] = set()

    @property
    def url(self) -> str:
        assert self._server is not None
        port = self._server.sockets[0].getsockname()[1]
        return f"http://127.0.0.1:{port}"

    async def __aenter__(self) -> FaultServer:
        self._server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        return self

    async def __aexit__(self, *exc: object) -> None:
        assert self._server is not None
        self._server.close()
        for writer in list(self._writers):
            writer.transport.abort()
        for task in list(self._tasks):
            with contextlib.suppress(Exception):
                await task
        await self._server.wait_closed()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._tasks.add(task)
        self._writers.add(writer)
        self.open_connections += 1
        self.peak_open = max(self.peak_open, self.open_connections)
        self.connections += 1
        try:
            while await self._one(reader, writer):
                pass
        except (ConnectionError, asyncio.IncompleteReadError):
            pass
        finally:
            self.open_connections -= 1
            self.closed.set()
            self._tasks.discard(task)
            self._writers.discard(writer)
            writer.close()
            with contextlib.suppress(Exception):
                await writer.wait_closed()

    async def _one(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> bool:
        head = await reader.readuntil(b"\r\n\r\n")
        lines = head.decode("latin-1").split("\r\n")
        headers = {}
        for line in lines[1:]:
            if ":" in line:
                key, value = line.split(":", 1)
                headers[key.strip().lower()] = value.strip()
        body = await reader.readexactly(int(headers.get("content-length", "0")))
        self.requests.append({"line": lines[0], "headers": headers, "body": body})
        fault = self.faults[min(len(self.requests) - 1, len(self.faults) - 1)]
        if fault.kind == "stall":
            await reader.read()
            return False
        if fault.delay and fault.kind != "drip":
            # Sleep, but notice a client that gives up meanwhile.
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(reader.read(), fault.delay)
                return False
        if fault.kind == "auto":
            streaming = b'"stream":true' in body
            fault = ok_stream() if streaming else ok_json()
        if fault.kind == "reset":
            _reset(writer)
            return False
        status_line = f"HTTP/1.1 {fault.status} X\r\n"
        extra = "".join(f"{k}: {v}\r\n" for k, v in fault.headers.items())
        if fault.kind in ("truncate", "hang", "drip", "reset_after"):
            writer.write(
                (
                    status_line
                    + "content-type: text/event-stream\r\ntransfer-encoding: chunked\r\n"
                    + extra
                    + "\r\n"
                ).encode()
            )
            if fault.body:
                writer.write(f"{len(fault.body):x}\r\n".encode() + fault.body + b"\r\n")
            await writer.drain()
            if fault.kind == "drip":
                for part in fault.parts:
                    await asyncio.sleep(fault.delay)
                    writer.write(f"{len(part):x}\r\n".encode() + part + b"\r\n")
                    await writer.drain()
                writer.write(b"0\r\n\r\n")
                await writer.drain()
                return True
            if fault.kind == "reset_after":
                await asyncio.sleep(0.05)  # let the client read what was sent
                _reset(writer)
                return False
            if fault.kind == "truncate":
                writer.transport.abort()
                return False
            # Hang: wait until the client goes away.
            await reader.read()
            return False
        writer.write(
            (
                status_line
                + f"content-type: {fault.content_type}\r\ncontent-length: {len(fault.body)}\r\n"
                + extra
                + "\r\n"
            ).encode()
            + fault.body
        )
        await writer.drain()
        return True


def _reset(writer: asyncio.StreamWriter) -> None:
    """Close with an RST instead of a FIN (SO_LINGER with a zero timeout)."""
    sock = writer.get_extra_info("socket")
    if sock is not None:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    writer.transport.abort()


def ok() -> Fault:
    """Answer like a healthy server: SSE for a streaming request, JSON otherwise."""
    return Fault(kind="auto")


def ok_json() -> Fault:
    return Fault(body=OPENAI_JSON)


def ok_stream() -> Fault:
    return Fault(body=OPENAI_STREAM, content_type="text/event-stream")


def error(status: int, message: str = "nope", **headers: str) -> Fault:
    body = json.dumps({"error": {"message": message, "type": "x", "code": None}}).encode()
    return Fault(kind="status", status=status, headers=headers, body=body)
