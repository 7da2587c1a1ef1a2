"""The agent's own event loop, on a worker thread.

Runs stream model output, parse it, redact and number events, drive tools: CPU work that
would otherwise queue in front of the editor's requests. The LSP loop only speaks the
protocol; each run's coroutine is a task on this second loop. Started with the first run.

Both threads share the interpreter lock: every system call of the LSP loop (reading a
request, writing its answer) gives it up and waits to get it back from a busy agent thread,
up to the switch interval each time. Once the agent loop starts, the interval is
:data:`SWITCH_INTERVAL_S` instead of Python's 5 ms, so an editor request waits for runs
that work in the background by at most that much per call.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import logging
import sys
import threading
from collections.abc import Callable, Coroutine
from typing import Any

logger = logging.getLogger(__name__)

#: The interpreter's switch interval while agent runs share the process with the LSP loop.
SWITCH_INTERVAL_S = 0.0005


class AgentLoop:
    """A daemon thread running an asyncio loop for agent runs."""

    def __init__(self) -> None:
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()

    def _ensure(self) -> asyncio.AbstractEventLoop:
        with self._lock:
            if self._loop is None:
                sys.setswitchinterval(min(SWITCH_INTERVAL_S, sys.getswitchinterval()))
                ready = threading.Event()
                loop = asyncio.new_event_loop()

                def main() -> None:
                    asyncio.set_event_loop(loop)
                    ready.set()
                    loop.run_forever()
                    loop.close()

                self._thread = threading.Thread(target=main, name="driveros-agent", daemon=True)
                self._thread.start()
                ready.wait()
                self._loop = loop
            return self._loop

    def call(self, fn: Callable[..., Any], *args: Any) -> None:
        """Run ``fn(*args)`` on the agent loop (thread-safe, in submission order)."""
        self._ensure().call_soon_threadsafe(fn, *args)

    def spawn(self, coro: Coroutine[Any, Any, None], holder: dict[str, asyncio.Task[None]]) -> None:
        """Start ``coro`` as a task on the agent loop; ``holder["task"]`` is set before any
        later :meth:`call` runs, so a cancel scheduled right after always finds the task."""
        loop = self._ensure()

        def create() -> None:
            holder["task"] = loop.create_task(coro)

        loop.call_soon_threadsafe(create)

    async def run(self, coro: Coroutine[Any, Any, Any]) -> Any:
        """Await ``coro`` on the agent loop from another loop."""
        return await asyncio.wrap_future(self.submit(coro))

    def submit(self, coro: Coroutine[Any, Any, Any]) -> concurrent.futures.Future[Any]:
        """Start ``coro`` on the agent loop; its future (thread-safe)."""
        return asyncio.run_coroutine_threadsafe(coro, self._ensure())

    async def aclose(self, *, grace: float = 10.0) -> None:
        """Stop the loop: cancel what still runs on it, wait up to ``grace`` seconds for those
        tasks to finish their cleanup, then stop the thread (idempotent)."""
        with self._lock:
            loop, thread, self._loop, self._thread = self._loop, self._thread, None, None
        if loop is None or thread is None:
            return

        async def drain() -> None:
            tasks = asyncio.all_tasks() - {asyncio.current_task()}
            for task in tasks:
                task.cancel()
            if tasks:
                _, late = await asyncio.wait(tasks, timeout=grace)
                if late:
                    logger.warning("%d agent tasks did not finish at exit", len(late))

        with contextlib.suppress(Exception):
            await asyncio.wrap_future(asyncio.run_coroutine_threadsafe(drain(), loop))
        loop.call_soon_threadsafe(loop.stop)
        await asyncio.to_thread(thread.join, 10)
