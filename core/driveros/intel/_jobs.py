"""The diagnostics job queue: a bound on check batches running at once, across runs.

Every :class:`~driveros.intel.DiagnosticsFeed` holds a slot of its :class:`JobLimiter` while
one snapshot's checks run (the batch). All feeds of a process share
:func:`default_limiter` (bound: the number of cores) unless given their own, so twenty runs
in one language server queue their pytest/mypy batches instead of starting twenty at once.
Waiters are served first come, first served. The limiter works across event loops and
threads (the language server runs agents on a worker loop).
"""

from __future__ import annotations

import asyncio
import os
import threading
from collections import deque
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

__all__ = ["JobLimiter", "default_limiter"]


class JobLimiter:
    """At most ``limit`` holders at once (default: the number of cores); FIFO for the rest."""

    def __init__(self, limit: int | None = None) -> None:
        self.limit = max(1, limit if limit is not None else (os.cpu_count() or 1))
        self._lock = threading.Lock()
        self._active = 0
        self._waiters: deque[tuple[asyncio.AbstractEventLoop, asyncio.Future[None]]] = deque()
        #: The most holders seen at once (for tests and benchmarks).
        self.peak = 0

    @property
    def active(self) -> int:
        """Slots held now."""
        return self._active

    @property
    def waiting(self) -> int:
        """Callers queued for a slot now."""
        return len(self._waiters)

    async def acquire(self) -> None:
        """Wait for a slot (cancellable: a canceled waiter never keeps one)."""
        loop = asyncio.get_running_loop()
        with self._lock:
            if self._active < self.limit and not self._waiters:
                self._take()
                return
            waiter: asyncio.Future[None] = loop.create_future()
            entry = (loop, waiter)
            self._waiters.append(entry)
        try:
            await waiter
        except asyncio.CancelledError:
            with self._lock:
                try:
                    self._waiters.remove(entry)
                    granted = False
                except ValueError:
                    granted = True  # the slot was handed over already: pass it on
            if granted:
                self.release()
            raise

    def release(self) -> None:
        """Give a slot back: to the longest waiter, else to the pool."""
        with self._lock:
            if self._waiters:
                loop, waiter = self._waiters.popleft()
                loop.call_soon_threadsafe(_grant, waiter)
                return  # the slot moves to the waiter: ``_active`` is unchanged
            self._active -= 1

    def _take(self) -> None:
        self._active += 1
        self.peak = max(self.peak, self._active)

    @asynccontextmanager
    async def slot(self) -> AsyncIterator[None]:
        """``async with limiter.slot():`` hold one slot for the block."""
        await self.acquire()
        try:
            yield
        finally:
            self.release()


def _grant(waiter: asyncio.Future[None]) -> None:
    if not waiter.done():
        waiter.set_result(None)
    # A waiter canceled in the meantime finds itself gone from the queue and releases.


_default: JobLimiter | None = None
_default_lock = threading.Lock()


def default_limiter() -> JobLimiter:
    """The process-wide limiter every feed shares unless given its own."""
    global _default
    with _default_lock:
        if _default is None:
            _default = JobLimiter()
        return _default
