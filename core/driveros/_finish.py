"""Cleanup that must finish: the one way driveros runs work that a cancellation must not cut
half-way (removing a scratch copy, releasing a lease, unmounting a view).

The work runs as its own task; a cancellation of the caller is remembered, the work is awaited
to its end, and the cancellation is raised afterwards, so the caller still stops and nothing is
left half-removed.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine
from typing import Any, TypeVar

T = TypeVar("T")


async def finish_then_reraise(work: Coroutine[Any, Any, T]) -> T:
    """Await ``work`` to its end even when the calling task is canceled meanwhile; then
    re-raise that cancellation (or the work's own exception), else return its result."""
    task = asyncio.ensure_future(work)
    canceled = False
    while not task.done():
        try:
            await asyncio.shield(task)
        except asyncio.CancelledError:
            canceled = True
    if canceled:
        raise asyncio.CancelledError
    return task.result()


async def thread_to_the_end(fn: Callable[..., T], /, *args: Any, **kwargs: Any) -> T:
    """``asyncio.to_thread`` whose thread a cancellation never leaves running behind the
    caller's back: a canceled caller waits for the call to return, then is canceled. (A plain
    ``to_thread`` raises at once while its thread goes on writing, say into a scratch copy its
    caller is already removing.)"""
    return await finish_then_reraise(asyncio.to_thread(fn, *args, **kwargs))
