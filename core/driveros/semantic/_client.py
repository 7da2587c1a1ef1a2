"""A small async LSP client over a process the run's sandbox started.

It speaks JSON-RPC with ``Content-Length`` framing on the process's stdin/stdout, answers the
few requests servers make of a client (configuration, progress tokens, capability
registration; ``workspace/applyEdit`` is refused: edits go through the agent's fence), tracks
``$/progress`` so a caller can wait for the initial indexing, and sends ``$/cancelRequest``
for a request whose caller was cancelled. Everything the server writes is hostile input: a
malformed frame ends the client, never the run.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from collections.abc import Callable
from typing import Any

from driveros._errors import ToolError
from driveros.sandbox import BackgroundProcess

_log = logging.getLogger(__name__)

#: A frame larger than this ends the client (the server is broken or hostile).
MAX_FRAME = 64 * 1024 * 1024
#: How much of the server's stderr is kept to explain its end.
_STDERR_KEPT = 4000


class LanguageServerError(ToolError):
    """A language server is missing, refused a request, failed or ended; the message (shown
    to the model) says which server and what to do."""


def frame(message: dict[str, Any]) -> bytes:
    body = json.dumps(message, ensure_ascii=False).encode("utf-8")
    return b"Content-Length: %d\r\n\r\n" % len(body) + body


class FrameReader:
    """Splits a byte stream into JSON-RPC messages."""

    def __init__(self) -> None:
        self._buf = bytearray()

    def feed(self, data: bytes) -> list[dict[str, Any]]:
        self._buf += data
        out: list[dict[str, Any]] = []
        while True:
            end = self._buf.find(b"\r\n\r\n")
            if end < 0:
                if len(self._buf) > 64 * 1024 and b"\r\n\r\n" not in self._buf:
                    raise LanguageServerError("the language server wrote no LSP header")
                return out
            length = None
            for line in bytes(self._buf[:end]).split(b"\r\n"):
                key, _, value = line.partition(b":")
                if key.strip().lower() == b"content-length":
                    try:
                        length = int(value.strip())
                    except ValueError:
                        length = None
            if length is None or not 0 <= length <= MAX_FRAME:
                raise LanguageServerError("the language server wrote a malformed LSP header")
            start = end + 4
            if len(self._buf) < start + length:
                return out
            body = bytes(self._buf[start : start + length])
            del self._buf[: start + length]
            try:
                message = json.loads(body)
            except (UnicodeDecodeError, ValueError) as exc:
                raise LanguageServerError(
                    f"the language server wrote invalid JSON: {exc}"
                ) from None
            if isinstance(message, dict):
                out.append(message)


class LspClient:
    """One language server's connection. ``name`` labels its errors."""

    def __init__(self, proc: BackgroundProcess, name: str) -> None:
        self.name = name
        self._proc = proc
        self._ids = 0
        self._pending: dict[int, asyncio.Future[Any]] = {}
        self._frames = FrameReader()
        self._stderr = b""
        self._progress: set[str] = set()
        self._progress_seen = asyncio.Event()
        self._idle = asyncio.Event()
        self._idle.set()
        self._closed: LanguageServerError | None = None
        #: Called with each ``textDocument/publishDiagnostics`` params.
        self.on_diagnostics: Callable[[dict[str, Any]], None] | None = None
        self._reader = asyncio.ensure_future(self._read_loop())

    @property
    def alive(self) -> bool:
        return self._closed is None and self._proc.running

    @property
    def failure(self) -> LanguageServerError | None:
        return self._closed

    async def _read_loop(self) -> None:
        try:
            while True:
                out, err, dropped = await self._proc.read_raw(wait=0.5)
                if err:
                    self._stderr = (self._stderr + err)[-_STDERR_KEPT:]
                if dropped:
                    raise LanguageServerError(f"{self.name} wrote faster than it was read")
                if out:
                    for message in self._frames.feed(out):
                        await self._handle(message)
                elif not self._proc.running:
                    code = self._proc.exit_code
                    tail = self._stderr.decode("utf-8", "replace").strip()[-600:]
                    said = f": {tail}" if tail else ""
                    raise LanguageServerError(f"{self.name} ended (exit code {code}){said}")
        except LanguageServerError as exc:
            self._fail(exc)
        except Exception as exc:  # a bug here must end the client, not hang its callers
            _log.exception("language server reader")
            self._fail(LanguageServerError(f"{self.name}: {exc}"))

    def _fail(self, exc: LanguageServerError) -> None:
        if self._closed is None:
            self._closed = exc
        for fut in self._pending.values():
            if not fut.done():
                fut.set_exception(exc)
        self._pending.clear()
        self._idle.set()

    async def _handle(self, message: dict[str, Any]) -> None:
        method = message.get("method")
        if method is None:  # a response
            fut = self._pending.pop(message.get("id"), None)  # type: ignore[arg-type]
            if fut is None or fut.done():
                return
            error = message.get("error")
            if isinstance(error, dict):
                text = str(error.get("message", error))[:1000]
                fut.set_exception(LanguageServerError(text, code=error.get("code")))
            else:
                fut.set_result(message.get("result"))
            return
        params = message.get("params")
        if "id" in message:
            await self._answer(message["id"], str(method), params)
        elif method == "$/progress" and isinstance(params, dict):
            self._on_progress(params)
        elif (
            method == "textDocument/publishDiagnostics"
            and isinstance(params, dict)
            and self.on_diagnostics is not None
        ):
            self.on_diagnostics(params)

    def _on_progress(self, params: dict[str, Any]) -> None:
        token = str(params.get("token"))
        value = params.get("value")
        kind = value.get("kind") if isinstance(value, dict) else None
        if kind == "begin":
            self._progress.add(token)
            self._progress_seen.set()
            self._idle.clear()
        elif kind == "end":
            self._progress.discard(token)
            if not self._progress:
                self._idle.set()

    async def _answer(self, msg_id: Any, method: str, params: Any) -> None:
        result: Any = None
        error: dict[str, Any] | None = None
        if method == "workspace/configuration":
            items = params.get("items", []) if isinstance(params, dict) else []
            result = [None for _ in items] if isinstance(items, list) else []
        elif method == "workspace/workspaceFolders":
            result = None
        elif method == "workspace/applyEdit":
            result = {"applied": False, "failureReason": "edits go through the agent's tools"}
        elif method not in (
            "window/workDoneProgress/create",
            "client/registerCapability",
            "client/unregisterCapability",
            "window/showMessageRequest",
            "window/showDocument",
        ):
            error = {"code": -32601, "message": f"unsupported: {method}"}
        reply: dict[str, Any] = {"jsonrpc": "2.0", "id": msg_id}
        if error is not None:
            reply["error"] = error
        else:
            reply["result"] = result
        await self._send(reply)

    async def _send(self, message: dict[str, Any]) -> None:
        if self._closed is not None:
            raise self._closed
        try:
            await self._proc.write(frame(message))
        except (OSError, ValueError, RuntimeError) as exc:
            self._fail(LanguageServerError(f"{self.name} cannot be written to: {exc}"))
            raise self._closed from None  # type: ignore[misc]

    async def notify(self, method: str, params: Any) -> None:
        await self._send({"jsonrpc": "2.0", "method": method, "params": params})

    async def request(self, method: str, params: Any, *, timeout: float = 60.0) -> Any:
        """The server's result; :class:`LanguageServerError` for its error, its end, or no
        answer within ``timeout``. A cancelled caller cancels the request on the server."""
        self._ids += 1
        msg_id = self._ids
        fut: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self._pending[msg_id] = fut
        try:
            # Inside the try: a caller cancelled while the request is being written (a slow
            # pipe, docker's exec stream) still takes its entry out of the pending ones.
            await self._send({"jsonrpc": "2.0", "id": msg_id, "method": method, "params": params})
            async with asyncio.timeout(timeout):
                return await fut
        except TimeoutError:
            await self._cancel(msg_id)
            raise LanguageServerError(
                f"{self.name} did not answer {method} within {timeout:g}s"
            ) from None
        except asyncio.CancelledError:
            await self._cancel(msg_id)
            raise
        except BaseException:
            self._pending.pop(msg_id, None)
            raise

    async def _cancel(self, msg_id: int) -> None:
        self._pending.pop(msg_id, None)
        with contextlib.suppress(LanguageServerError):
            await asyncio.shield(self.notify("$/cancelRequest", {"id": msg_id}))

    async def wait_ready(self, *, settle: float, bound: float) -> bool:
        """Wait for the server's work-done progress (initial indexing) to end: up to
        ``settle`` seconds for one to begin, then up to ``bound`` for all to end. False:
        still busy at the bound (answers may be partial)."""
        if not self._progress_seen.is_set():
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(settle):
                    await self._progress_seen.wait()
        try:
            async with asyncio.timeout(bound):
                await self._idle.wait()
        except TimeoutError:
            return False
        return True

    async def aclose(self, *, grace: float = 2.0) -> None:
        """``shutdown`` and ``exit`` when the server still runs, then stop the process."""
        if self.alive:
            with contextlib.suppress(LanguageServerError, TimeoutError):
                async with asyncio.timeout(grace):
                    await self.request("shutdown", None, timeout=grace)
                    await self.notify("exit", None)
                    await self._proc.wait(grace)
        self._fail(LanguageServerError(f"{self.name} was shut down"))
        await self._proc.stop(grace=0.5)
        self._reader.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await self._reader
