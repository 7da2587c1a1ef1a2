"""ScriptedModelServer: a loopback model that plays scripted turns over the real wire formats.

It answers OpenAI Chat Completions at ``/v1/chat/completions`` and Anthropic Messages at
``/v1/messages``, streaming (SSE) or not, exactly as the real services frame them, so the
whole provider stack (HTTP client, SSE parser, adapters) runs for real in tests. Fill-in-the-
middle requests are answered at ``/v1/completions`` (OpenAI-compatible, ``prompt`` + ``suffix``)
and ``/v1/fim/completions`` (Mistral); a streamed answer the client stops reading is recorded in
:attr:`ScriptedModelServer.cut`.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from types import TracebackType
from typing import Any

from driveros.testing import _anthropic_wire, _completions_wire, _openai_wire
from driveros.testing._http import HttpRequest, HttpResponder, serve_connection
from driveros.testing._script import EXHAUSTED_TEXT, ScriptedError, Turn, TurnUsage

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class ReceivedRequest:
    """One model request as the server saw it."""

    path: str
    headers: dict[str, str]
    body: Any


class ScriptedModelServer:
    """Serve ``turns`` in order on a free loopback port (``async with`` starts and stops it).

    When the turns run out, the model answers the text ``"script exhausted"``; with
    ``repeat_last=True`` it repeats the last turn instead. ``chunk`` is the fragment size used
    to split streamed text, reasoning and tool-call arguments.
    """

    def __init__(
        self,
        turns: Sequence[Turn],
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        repeat_last: bool = False,
        model: str = "scripted-model",
        chunk: int = 7,
    ) -> None:
        self._turns = list(turns)
        self._host = host
        self._port = port
        self._repeat_last = repeat_last
        self._model = model
        self._chunk = max(1, chunk)
        self._next = 0
        self._ids = 0
        self._server: asyncio.Server | None = None
        self._connections: set[asyncio.Task[None]] = set()
        self.received: list[ReceivedRequest] = []
        #: Indexes (into :attr:`received`) of streamed answers the client closed before the end.
        self.cut: list[int] = []

    # ------------------------------------------------------------------ lifecycle

    async def start(self) -> None:
        self._server = await asyncio.start_server(self._accept, self._host, self._port)
        self._port = self._server.sockets[0].getsockname()[1]

    async def aclose(self) -> None:
        server, self._server = self._server, None
        if server is None:
            return
        server.close()
        for task in list(self._connections):
            task.cancel()
        if self._connections:
            await asyncio.gather(*self._connections, return_exceptions=True)
        await server.wait_closed()

    async def __aenter__(self) -> ScriptedModelServer:
        await self.start()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()

    # ------------------------------------------------------------------ properties

    @property
    def port(self) -> int:
        return self._port

    @property
    def openai_base_url(self) -> str:
        return f"http://{self._host}:{self._port}/v1"

    @property
    def anthropic_base_url(self) -> str:
        return f"http://{self._host}:{self._port}"

    @property
    def requests(self) -> list[Any]:
        """The JSON bodies of every model request received, in order."""
        return [r.body for r in self.received]

    @property
    def turns_served(self) -> int:
        return self._next

    @property
    def remaining(self) -> int:
        return max(len(self._turns) - self._next, 0)

    def add_turns(self, *turns: Turn) -> None:
        """Append turns to the script (e.g. a follow-up after feedback)."""
        self._turns.extend(turns)

    # ------------------------------------------------------------------ serving

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._connections.add(task)
        try:
            await serve_connection(reader, writer, self._handle)
        except asyncio.CancelledError:
            pass
        finally:
            self._connections.discard(task)

    def _take(self) -> Turn:
        if self._next < len(self._turns):
            turn = self._turns[self._next]
            self._next += 1
            return turn
        if self._repeat_last and self._turns:
            return self._turns[-1]
        return Turn(text=EXHAUSTED_TEXT)

    def _call_ids(self, turn: Turn, prefix: str) -> list[str]:
        ids = []
        for call in turn.tool_calls:
            self._ids += 1
            ids.append(call.id or f"{prefix}{self._ids:04d}")
        return ids

    async def _handle(self, req: HttpRequest, out: HttpResponder) -> None:
        if req.method == "GET" and req.path in ("/v1/models", "/models"):
            await out.send_json(200, {"object": "list", "data": [{"id": self._model}]})
            return
        fim = req.path in (_completions_wire.COMPLETIONS_PATH, _completions_wire.MISTRAL_FIM_PATH)
        if req.path not in ("/v1/chat/completions", "/v1/messages") and not fim:
            await out.send_json(404, {"error": {"message": f"no route {req.path}"}})
            return
        if req.method != "POST":
            await out.send_json(405, {"error": {"message": "POST only"}})
            return
        try:
            body = req.json()
        except ValueError:
            await out.send_json(400, {"error": {"message": "request body is not JSON"}})
            return
        self.received.append(ReceivedRequest(req.path, dict(req.headers), body))
        turn = self._take()
        if turn.delay_s > 0:
            await asyncio.sleep(turn.delay_s)
        anthropic = req.path == "/v1/messages"
        if turn.error is not None:
            await self._send_error(out, turn.error, anthropic=anthropic)
            return
        model = (body.get("model") or self._model) if isinstance(body, dict) else self._model
        usage = turn.usage or TurnUsage()
        stream = isinstance(body, dict) and bool(body.get("stream"))
        if fim:
            await self._fim(out, req.path, turn, model=model, usage=usage, stream=stream)
            return
        if anthropic:
            rid = f"msg_{self._next:04d}"
            ids = self._call_ids(turn, "toolu_")
            if stream:
                frames = _anthropic_wire.stream_events(
                    turn, ids=ids, model=model, rid=rid, usage=usage, chunk=self._chunk
                )
                await self._stream(out, frames, turn.interval_s)
            else:
                msg = _anthropic_wire.message(turn, ids=ids, model=model, rid=rid, usage=usage)
                await out.send_json(200, msg)
            return
        rid = f"chatcmpl-{self._next:04d}"
        ids = self._call_ids(turn, "call_")
        if stream:
            options = body.get("stream_options") or {}
            frames = _openai_wire.stream_chunks(
                turn,
                ids=ids,
                model=model,
                rid=rid,
                usage=usage,
                include_usage=bool(options.get("include_usage")),
                chunk=self._chunk,
            )
            await self._stream(out, frames, turn.interval_s)
        else:
            comp = _openai_wire.completion(turn, ids=ids, model=model, rid=rid, usage=usage)
            await out.send_json(200, comp)

    async def _fim(
        self,
        out: HttpResponder,
        path: str,
        turn: Turn,
        *,
        model: str,
        usage: TurnUsage,
        stream: bool,
    ) -> None:
        rid = f"cmpl-{self._next:04d}"
        if not stream:
            answer = _completions_wire.answer(turn, path=path, model=model, rid=rid, usage=usage)
            await out.send_json(200, answer)
            return
        index = len(self.received) - 1
        frames = _completions_wire.stream_frames(
            turn, path=path, model=model, rid=rid, usage=usage, chunk=self._chunk
        )
        try:
            await self._stream(out, frames, turn.interval_s)
        except (ConnectionError, OSError):
            self.cut.append(index)
            raise

    async def _stream(
        self, out: HttpResponder, frames: Iterator[bytes], interval: float = 0.0
    ) -> None:
        await out.start_stream()
        for index, frame in enumerate(frames):
            if interval > 0 and index:
                await asyncio.sleep(interval)
            await out.write_chunk(frame)
        await out.end_stream()

    async def _send_error(
        self, out: HttpResponder, error: ScriptedError, *, anthropic: bool
    ) -> None:
        wire = _anthropic_wire if anthropic else _openai_wire
        body = wire.error_body(error)
        raw = body.encode() if isinstance(body, str) else json.dumps(body).encode()
        ctype = "text/plain" if isinstance(body, str) else "application/json"
        await out.send(error.status, raw, content_type=ctype, headers=dict(error.headers))
