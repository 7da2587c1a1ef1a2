"""Cleanup that must finish: the one way driveros runs work that a cancellation must not cut
half-way (removing a scratch copy, releasing a lease, unmounting a view).

The work runs as its own task; a cancellation of the caller is remembered, the work is awaited
to its end, and the cancellation is raised afterwards, so the caller still stops and nothing is
left half-removed.
"""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine
from typing import Any


async def finish_then_reraise(work: Coroutine[Any, Any, None]) -> None:
    """Await ``work`` to its end even when the calling task is canceled meanwhile; then
    re-raise that cancellation (or the work's own exception)."""
    task = asyncio.ensure_future(work)
    canceled = False
    while not task.done():
        try:
            await asyncio.shield(task)
        except asyncio.CancelledError:
            canceled = True
    if canceled:
        raise asyncio.CancelledError
    task.result()
