"""A lease is either held by its creator or not written at all, whatever the cancellation."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

import pytest

from driveros.state import Lease, list_leases
from driveros.state import _lease as lease_module


def _slow_writes(monkeypatch: pytest.MonkeyPatch) -> asyncio.Event:
    """Every lease write lands on disk well after it starts; the event is set when one does."""
    real = lease_module.write_json_atomic
    writing = asyncio.Event()
    loop = asyncio.get_running_loop()

    def slow_write(path: Path, data: Any) -> None:
        loop.call_soon_threadsafe(writing.set)
        time.sleep(0.3)  # the record lands on disk after the caller was canceled
        real(path, data)

    monkeypatch.setattr(lease_module, "write_json_atomic", slow_write)
    return writing


async def test_a_canceled_create_leaves_no_registration_behind(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    writing = _slow_writes(monkeypatch)
    creating = asyncio.create_task(Lease.create("cache", paths=[tmp_path / "driveros-x"]))
    await writing.wait()
    creating.cancel()
    with pytest.raises(asyncio.CancelledError):
        await creating
    await asyncio.sleep(0.5)  # long enough for a thread left running to finish its write
    assert await list_leases() == []  # was: a record no one holds, never released


async def test_a_canceled_update_never_brings_a_released_record_back(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    lease = await Lease.create("cache", paths=[tmp_path / "driveros-y"])
    writing = _slow_writes(monkeypatch)
    updating = asyncio.create_task(lease.update(detail={"step": 2}))
    await writing.wait()
    updating.cancel()
    with pytest.raises(asyncio.CancelledError):
        await updating
    await lease.release()
    await asyncio.sleep(0.5)  # long enough for a thread left running to finish its write
    assert await list_leases() == []  # was: the record written again after its release
