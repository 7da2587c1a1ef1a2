"""Cleanup that must finish: a cancellation waits for the work, then still stops the caller."""

from __future__ import annotations

import asyncio

import pytest

from driveros._finish import finish_then_reraise, thread_to_the_end
from driveros._together import all_of, both


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


async def test_all_of_lets_every_one_finish_then_raises_the_first_error_in_order() -> None:
    finished: list[str] = []

    async def slow(name: str, fail: bool) -> str:
        await asyncio.sleep(0.05 if name == "second" else 0)
        finished.append(name)
        if fail:
            raise ValueError(name)
        return name

    assert await both(slow("first", False), slow("second", False)) == ("first", "second")
    finished.clear()
    with pytest.raises(KeyError):
        await all_of(slow("ok", False), asyncio.sleep(0, result=None), _raises(KeyError("k")))
    with pytest.raises(ValueError, match="first"):
        # the second fails too, later; it still runs to its end before the first error
        await both(slow("first", True), slow("second", True))
    assert finished[-2:] == ["first", "second"]


async def _raises(exc: BaseException) -> None:
    raise exc


async def test_all_of_canceled_cancels_every_one() -> None:
    started = asyncio.Event()
    canceled: list[bool] = []

    async def forever() -> None:
        started.set()
        try:
            await asyncio.sleep(60)
        except asyncio.CancelledError:
            canceled.append(True)
            raise

    caller = asyncio.create_task(all_of(forever(), forever()))
    await started.wait()
    await asyncio.sleep(0)
    caller.cancel()
    with pytest.raises(asyncio.CancelledError):
        await caller
    assert canceled == [True, True]
