"""The watchdog never keeps a process group the sandbox has already reaped: with 32768 pids
the number is soon another process's, and the watchdog's kill at close would land on it."""

from __future__ import annotations

from pathlib import Path

import pytest

from driveros.sandbox import LocalSandbox
from driveros.sandbox._watchdog import Watchdog


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
