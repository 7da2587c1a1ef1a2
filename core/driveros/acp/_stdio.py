"""Serving ACP on stdin/stdout, with stdin/stdout claimed for the protocol (driveros.stdio, as
driveros-lsp does)."""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import threading
from collections.abc import Awaitable, Callable
from typing import Any, cast

from acp import RequestError, run_agent

from driveros._unicode import printable
from driveros.acp._server import DriverosAgent
from driveros.acp._settings import Settings
from driveros.stdio import claim_stdio, open_protocol_streams

log = logging.getLogger(__name__)

#: The largest message accepted from the client (prompts may embed whole files).
LINE_LIMIT = 50 * 1024 * 1024
#: How long requests still being handled at the end of stdin may take to answer (a canceled
#: prompt stops its tools and closes its sandbox first).
EOF_GRACE_S = 30.0


class OneLineErrors(logging.Filter):
    """Folds the exception of a log record into its message as one line (the exception's
    type and the first line of its text): the SDK logs a traceback for what goes wrong
    inside it, and no traceback reaches the user's editor log unless it was asked for
    (``keep_tracebacks``, ``-vv``)."""

    def __init__(self, *, keep_tracebacks: bool = False) -> None:
        super().__init__()
        self._keep = keep_tracebacks

    def filter(self, record: logging.LogRecord) -> bool:
        if self._keep:
            return True
        if record.exc_info:
            exc = record.exc_info[1] if isinstance(record.exc_info, tuple) else None
            if exc is not None:
                lines = str(exc).strip().splitlines()
                detail = type(exc).__name__ + (f": {lines[0]}" if lines else "")
                record.msg = f"{record.getMessage()} ({printable(detail)[:300]})"
                record.args = None
            record.exc_info = None
            record.exc_text = None
        record.stack_info = None
        return True


def _thread_failure(args: threading.ExceptHookArgs) -> None:
    name = args.thread.name if args.thread is not None else "a thread"
    log.error("%s failed: %s: %s", name, args.exc_type.__name__, args.exc_value)


def _valid_id(value: Any) -> bool:
    return (
        value is None
        or isinstance(value, str)
        or (isinstance(value, int) and not isinstance(value, bool))
    )


def _envelope_problem(message: Any) -> str | None:
    """Why ``message`` is not a JSON-RPC 2.0 request, notification or response the SDK can
    take (it assumes the shapes); None when it is one."""
    if not isinstance(message, dict):
        return "a message must be a JSON object"
    if message.get("jsonrpc") != "2.0":
        return 'the "jsonrpc" member must be "2.0"'
    if "id" in message and not _valid_id(message["id"]):
        return 'the "id" must be a string, an integer or null'
    if "method" in message:
        if not isinstance(message["method"], str):
            return 'the "method" must be a string'
        if "params" in message and not isinstance(message["params"], dict | list):
            return 'the "params" must be an object or an array'
        return None
    if "id" not in message:
        return 'a message needs a "method" or an "id"'
    if ("result" in message) == ("error" in message):
        return 'a response has exactly one of "result" and "error"'
    error = message.get("error")
    if "error" in message and not (
        isinstance(error, dict)
        and isinstance(error.get("code"), int)
        and isinstance(error.get("message"), str)
    ):
        return 'an "error" needs an integer "code" and a string "message"'
    return None


class GuardedTransport:
    """The SDK's message transport over the protocol's byte streams, answering what is not
    JSON-RPC itself: a line that is not JSON is a ``Parse error`` (id null), a message that
    is not a request, notification or response an ``Invalid request`` (its id when it has a
    usable one); a response that cannot be matched is dropped. Each costs one log line; the
    SDK only ever sees well-formed messages. A client that stops reading ends the session as
    closing stdin does.

    The end of stdin is passed on only once every request read so far is answered: the SDK
    cancels what is still being handled when its input ends, which left a prompt sent just
    before EOF (``printf ... | driveros acp``) without an answer. At EOF ``on_eof`` runs (the
    agent cancels its prompts, which then answer ``cancelled``) and the answers are waited
    for, at most :data:`EOF_GRACE_S`."""

    def __init__(
        self,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
        *,
        on_eof: Callable[[], Awaitable[None]] | None = None,
    ) -> None:
        self._reader = reader
        self._writer = writer
        self._lock = asyncio.Lock()
        self._gone = False
        self._on_eof = on_eof
        #: Requests read and not answered yet (their ids, with the type: 1 is not "1").
        self._unanswered: set[tuple[str, object]] = set()
        self._answered = asyncio.Event()

    @staticmethod
    def _key(rid: object) -> tuple[str, object]:
        return type(rid).__name__, rid

    async def send(self, message: dict[str, Any]) -> None:
        if self._gone:
            raise ConnectionError("the client is gone")
        data = (json.dumps(message, separators=(",", ":")) + "\n").encode("utf-8")
        async with self._lock:
            try:
                self._writer.write(data)
                await self._writer.drain()
            except (OSError, RuntimeError) as exc:  # the client closed its end (EPIPE, reset)
                if not self._gone:
                    self._gone = True
                    self._answered.set()  # nobody to answer any more
                    log.info("the client stopped reading (%s); closing the session", exc)
                    self._reader.feed_eof()
                raise ConnectionError("the client is gone") from exc
        if "method" not in message and "id" in message:
            self._unanswered.discard(self._key(message["id"]))
            if not self._unanswered:
                self._answered.set()

    async def _end_of_input(self) -> None:
        """Let the requests being handled answer before the SDK hears of the end of input."""
        if not self._unanswered or self._gone:
            return
        self._answered.clear()
        if self._on_eof is not None:
            await self._on_eof()
        try:
            async with asyncio.timeout(EOF_GRACE_S):
                while self._unanswered and not self._gone:
                    await self._answered.wait()
                    self._answered.clear()
        except TimeoutError:
            log.warning(
                "stdin closed; %d request(s) still unanswered after %.0f s",
                len(self._unanswered),
                EOF_GRACE_S,
            )

    async def _answer_error(self, message: Any, error: RequestError) -> None:
        rid = message.get("id") if isinstance(message, dict) else None
        if not _valid_id(rid):
            rid = None
        try:
            await self.send({"jsonrpc": "2.0", "id": rid, "error": error.to_error_obj()})
        except ConnectionError:
            pass

    async def _line(self) -> bytes | None:
        """The next line (b"" at the end of input), None for one longer than LINE_LIMIT (its
        bytes are skipped)."""
        skipped = False
        while True:
            try:
                line = await self._reader.readuntil(b"\n")
            except asyncio.IncompleteReadError as exc:
                return None if skipped else exc.partial
            except asyncio.LimitOverrunError as exc:
                await self._reader.readexactly(exc.consumed)
                skipped = True
                continue
            return None if skipped else line

    async def receive(self) -> dict[str, Any] | None:
        while True:
            line = await self._line()
            if line is None:
                log.warning("ignored a message over %d bytes", LINE_LIMIT)
                await self._answer_error(
                    None, RequestError.invalid_request({"details": "message too large"})
                )
                continue
            if not line:
                await self._end_of_input()
                return None
            if not line.strip():
                continue
            try:
                message = json.loads(line)
            except (ValueError, RecursionError) as exc:  # not UTF-8, not JSON, too deep
                log.warning("a line from the client is not JSON (%s)", printable(str(exc))[:200])
                await self._answer_error(None, RequestError.parse_error())
                continue
            problem = _envelope_problem(message)
            if problem is None:
                if "method" in message and "id" in message:
                    self._unanswered.add(self._key(message["id"]))
                return cast(dict[str, Any], message)
            log.warning("ignored an invalid JSON-RPC message: %s", problem)
            if not (isinstance(message, dict) and "method" not in message and "id" in message):
                error = RequestError.invalid_request({"details": problem})
                await self._answer_error(message, error)

    async def close(self) -> None:
        self._gone = True
        with contextlib.suppress(OSError, RuntimeError):
            self._writer.close()


async def serve(settings: Settings | None = None) -> None:
    """Serve one client on stdin/stdout until it closes stdin."""
    threading.excepthook = _thread_failure
    reader, writer = await open_protocol_streams(claim_stdio(), limit=LINE_LIMIT)
    try:
        # The SDK routes only the methods the agent has (no list/fork/resume here); its Agent
        # protocol lists every optional one, hence the cast.
        agent = DriverosAgent(settings)
        guarded = GuardedTransport(reader, writer, on_eof=agent.input_closed)
        try:
            await run_agent(cast(Any, agent), guarded)
        finally:
            await agent.aclose()  # the last prompts' held copies
    finally:
        writer.close()
