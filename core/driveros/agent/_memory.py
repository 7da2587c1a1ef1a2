"""Memory calls of a run: bounded, best-effort, reported as ``memory`` events."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

from driveros._errors import DriverosError
from driveros.agent._events import MemoryEvent
from driveros.agent._hooks import MemoryHook
from driveros.agent._sink import EventSink
from driveros.llm import Message


def _why(exc: BaseException) -> str:
    """The error's own message (typed store errors say what is wrong), or its kind."""
    return str(exc) or type(exc).__name__


async def recall(memory: MemoryHook, task: str, *, sink: EventSink, timeout: float) -> list[str]:
    """Memories for ``task`` (redacted), or none when memory fails or takes too long."""
    try:
        async with asyncio.timeout(timeout):
            items = await memory.recall(task)
    except (DriverosError, OSError, TimeoutError) as exc:
        await sink.emit(MemoryEvent, action="error", detail=f"recall failed: {_why(exc)}")
        return []
    await sink.emit(MemoryEvent, action="recall", count=len(items))
    return [sink.redactor.text(i) for i in items]


async def store(
    memory: MemoryHook,
    *,
    task: str,
    answer: str,
    transcript: Sequence[Message],
    sink: EventSink,
    timeout: float,
) -> None:
    """Store a verified answer; a failure is reported and the run goes on."""
    try:
        async with asyncio.timeout(timeout):
            count = await memory.store(
                task=task,
                answer=sink.redactor.text(answer),
                transcript=transcript,
                verified=True,
                run_id=sink.run_id,
            )
    except (DriverosError, OSError, TimeoutError) as exc:
        await sink.emit(MemoryEvent, action="error", detail=f"store failed: {_why(exc)}")
        return
    await sink.emit(MemoryEvent, action="store", count=count)
