"""The watchdog never keeps a process group the sandbox has already reaped: with 32768 pids
the number is soon another process's, and the watchdog's kill at close would land on it."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from driveros.sandbox import LocalSandbox
from driveros.sandbox._watchdog import Watchdog
from tests.sandbox.conftest import pids_naming


async def test_every_group_the_local_sandbox_tracked_is_untracked_by_its_close(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    lines: list[str] = []
    real = Watchdog._send

    def recording(self: Watchdog, line: str) -> None:
        lines.append(line)
        real(self, line)

    monkeypatch.setattr(Watchdog, "_send", recording)
    async with LocalSandbox(tmp_path) as box:
        done = await box.run("echo hi")
        assert done.stdout == "hi\n"
        session = await box.open_session()
        await session.run("true")
    tracked = {line.split()[1] for line in lines if line.startswith("+pg ")}
    untracked = {line.split()[1] for line in lines if line.startswith("-pg ")}
    assert tracked, lines  # the sandbox's own bubblewrap group at least
    assert tracked <= untracked, lines


async def test_a_sandbox_start_cancelled_at_any_moment_leaves_no_process(tmp_path: Path) -> None:
    """Cancelled while bubblewrap is being spawned, asyncio kills only bubblewrap itself: the
    sandbox's first process, cloned into its namespaces and still waiting for bubblewrap to
    set them up, then waited forever with ppid 1 (the orphan seen after a signalled CLI run).
    Every moment of the start is tried; nothing naming the sandbox's folder may stay."""
    workspace = tmp_path / "ws-cancelled-start"
    workspace.mkdir()
    for delay in [i / 4000 for i in range(0, 160)]:  # 0 to 40 ms, every 0.25 ms
        task = asyncio.ensure_future(LocalSandbox(workspace).__aenter__())
        await asyncio.sleep(delay)
        task.cancel()
        try:
            box = await task
        except asyncio.CancelledError:
            pass
        else:
            await box.__aexit__(None, None, None)
    await asyncio.sleep(0.5)  # a process killed by then has been reaped by init
    assert pids_naming(str(workspace)) == []
