"""The diagnostics job queue: a bound on check batches at once, shared by every feed."""

from __future__ import annotations

import asyncio
import os
import threading
from pathlib import Path

from driveros.intel import (
    CheckSpec,
    DiagnosticsFeed,
    FeedOptions,
    IntelConfig,
    JobLimiter,
    default_limiter,
)
from driveros.sandbox import LocalSandbox
from tests.intel._projects import tool_env, write_project


async def test_jobs_bound_and_order_hold_under_many_callers() -> None:
    limiter = JobLimiter(2)
    order: list[int] = []
    running = 0
    seen = 0

    async def job(i: int) -> None:
        nonlocal running, seen
        async with limiter.slot():
            running += 1
            seen = max(seen, running)
            order.append(i)
            await asyncio.sleep(0.001)
            running -= 1

    await asyncio.gather(*(job(i) for i in range(20)))
    assert seen == limiter.peak == 2
    assert order == list(range(20))  # first come, first served
    assert (limiter.active, limiter.waiting) == (0, 0)


async def test_jobs_a_canceled_waiter_never_keeps_a_slot() -> None:
    limiter = JobLimiter(1)
    await limiter.acquire()
    waiters = [asyncio.ensure_future(limiter.acquire()) for _ in range(3)]
    await asyncio.sleep(0)
    waiters[0].cancel()
    limiter.release()  # handed to waiter 0, which is canceled: it passes the slot on
    await asyncio.gather(waiters[0], return_exceptions=True)
    await asyncio.wait_for(waiters[1], 5)
    limiter.release()
    await asyncio.wait_for(waiters[2], 5)
    limiter.release()
    assert (limiter.active, limiter.waiting) == (0, 0)


def test_jobs_one_bound_across_event_loops_in_threads() -> None:
    limiter = JobLimiter(1)
    inside = 0
    overlap = False
    guard = threading.Lock()

    async def hold() -> None:
        nonlocal inside, overlap
        for _ in range(20):
            async with limiter.slot():
                with guard:
                    inside += 1
                    overlap |= inside > 1
                await asyncio.sleep(0.0005)
                with guard:
                    inside -= 1

    threads = [threading.Thread(target=asyncio.run, args=(hold(),)) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not overlap and limiter.peak == 1 and limiter.active == 0


def test_jobs_default_is_one_per_core_and_process_wide() -> None:
    assert default_limiter() is default_limiter()
    assert default_limiter().limit == max(1, os.cpu_count() or 1)


async def test_jobs_feeds_sharing_a_limiter_run_their_batches_one_at_a_time(
    tmp_path: Path,
) -> None:
    slow = CheckSpec(name="slow", command="sleep 0.3; echo done", parser="raw")
    limiter = JobLimiter(1)
    boxes = []
    for i in range(3):
        root = write_project(tmp_path / f"ws{i}", {"README.md": "x\n"})
        boxes.append(LocalSandbox(root, base_env=tool_env()))
    for box in boxes:
        await box.start()
    try:
        feeds = [
            DiagnosticsFeed(
                box,
                config=IntelConfig(checks=(slow,)),
                options=FeedOptions(limiter=limiter),
            )
            for box in boxes
        ]
        snaps = await asyncio.gather(*(f.snapshot() for f in feeds))
    finally:
        for box in boxes:
            await box.aclose()
    assert all("slow" in s.checks for s in snaps)
    assert limiter.peak == 1 and limiter.active == 0
