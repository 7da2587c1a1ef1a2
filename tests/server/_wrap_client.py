"""A raw JSON-RPC client for the --wrap tests and bench: it keeps every message's bytes, so a
test can check that a message went through unchanged."""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

from driveros_lsp.wrap._inner import frame, read_frames

Answer = Callable[[dict[str, Any]], Any]


class RawClient:
    """``async with RawClient.start(argv) as c``: requests, notifications, server requests."""

    def __init__(self, proc: asyncio.subprocess.Process) -> None:
        self.proc = proc
        self.received: list[tuple[bytes, dict[str, Any]]] = []
        self.answers: dict[str, Answer] = {}
        self._ids = 0
        self._waiting: dict[Any, asyncio.Future[dict[str, Any]]] = {}
        self._changed = asyncio.Event()
        self._reader: asyncio.Task[None] | None = None
        self.stderr = b""

    @classmethod
    @contextlib.asynccontextmanager
    async def start(
        cls, argv: list[str], *, env: dict[str, str] | None = None, cwd: Path | None = None
    ) -> AsyncIterator[RawClient]:
        proc = await asyncio.create_subprocess_exec(
            *argv,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            env=env,
            cwd=cwd,
            limit=2**24,
        )
        client = cls(proc)
        client._reader = asyncio.ensure_future(client._read())
        try:
            yield client
        finally:
            if proc.returncode is None:
                with contextlib.suppress(ProcessLookupError):
                    proc.kill()
            await proc.wait()
            client._reader.cancel()
            await asyncio.gather(client._reader, return_exceptions=True)

    async def _read(self) -> None:
        assert self.proc.stdout is not None
        async for body in read_frames(self.proc.stdout):
            message: dict[str, Any] = json.loads(body)
            self.received.append((body, message))
            self._changed.set()
            if "method" not in message:
                future = self._waiting.pop(message.get("id"), None)
                if future is not None and not future.done():
                    future.set_result(message)
            elif "id" in message:
                answer_with: Answer = self.answers.get(str(message["method"]), _no_answer)
                answer = answer_with(message)
                self.send_raw(_dumps({"jsonrpc": "2.0", "id": message["id"], "result": answer}))

    def send_raw(self, body: bytes) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(frame(body))

    def notify(self, method: str, params: Any) -> None:
        self.send_raw(_dumps({"jsonrpc": "2.0", "method": method, "params": params}))

    def request_raw(self, mid: Any, body: bytes) -> asyncio.Future[dict[str, Any]]:
        future: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        self._waiting[mid] = future
        self.send_raw(body)
        return future

    async def request(self, method: str, params: Any = None, timeout: float = 30) -> Any:
        """The whole answer (``result`` or ``error``)."""
        self._ids += 1
        body = _dumps({"jsonrpc": "2.0", "id": self._ids, "method": method, "params": params})
        return await asyncio.wait_for(self.request_raw(self._ids, body), timeout)

    def notifications(self, method: str) -> list[dict[str, Any]]:
        return [m["params"] for _, m in self.received if m.get("method") == method]

    async def wait_for(
        self, method: str, pred: Callable[[Any], bool] = lambda _p: True, timeout: float = 30
    ) -> Any:
        async def found() -> Any:
            while True:
                for params in self.notifications(method):
                    if pred(params):
                        return params
                self._changed.clear()
                await self._changed.wait()

        return await asyncio.wait_for(found(), timeout)

    async def exit_code(self, timeout: float = 20) -> int:
        assert self.proc.stderr is not None
        self.stderr = await asyncio.wait_for(self.proc.stderr.read(), timeout)
        return await asyncio.wait_for(self.proc.wait(), timeout)


def _no_answer(_message: dict[str, Any]) -> None:
    return None


def _dumps(message: Any) -> bytes:
    return json.dumps(message).encode()
