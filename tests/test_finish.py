"""Cleanup that must finish: a cancellation waits for the work, then still stops the caller."""

from __future__ import annotations

import asyncio

import pytest

from driveros._finish import finish_then_reraise, thread_to_the_end


async def test_a_canceled_caller_waits_for_the_work_then_is_canceled() -> None:
    steps: list[str] = []
    started = asyncio.Event()

    async def cleanup() -> None:
        started.set()
        await asyncio.sleep(0.05)
        steps.append("cleaned")

    caller = asyncio.create_task(finish_then_reraise(cleanup()))
    await started.wait()
    caller.cancel()
    caller.cancel()  # canceled twice: still one cleanup, still canceled
    with pytest.raises(asyncio.CancelledError):
        await caller
    assert steps == ["cleaned"]


async def test_the_works_own_error_reaches_the_caller() -> None:
    async def broken() -> None:
        raise OSError("cannot unmount")

    with pytest.raises(OSError, match="cannot unmount"):
        await finish_then_reraise(broken())


async def test_a_canceled_thread_call_has_returned_before_the_caller_stops() -> None:
    import threading

    release = threading.Event()
    returned: list[bool] = []

    def blocking() -> int:
        release.wait(5)
        returned.append(True)
        return 1

    caller = asyncio.create_task(thread_to_the_end(blocking))
    await asyncio.sleep(0.05)
    caller.cancel()
    await asyncio.sleep(0.05)
    assert not caller.done()  # a plain to_thread would already be canceled, its thread running
    release.set()
    with pytest.raises(asyncio.CancelledError):
        await caller
    assert returned == [True]


async def test_a_thread_calls_result_is_returned() -> None:
    assert await thread_to_the_end(sum, [1, 2, 3]) == 6
