"""A run's language servers end with it: ``driveros agent`` stopped (SIGTERM) or killed
(SIGKILL) while its warm basedpyright runs leaves no process behind, and neither does a run
that ends normally."""

from __future__ import annotations

import asyncio
import os
import signal
from pathlib import Path

import pytest

from driveros.testing import ScriptedModelServer, ToolCallSpec, Turn
from tests.cli.conftest import calc_repo as calc_repo  # the fixture, for these tests
from tests.cli.conftest import cli_environ, start_cli
from tests.semantic._oracle import program

HOVER = Turn(tool_calls=[ToolCallSpec("hover", {"symbol": "add"})])


def _in_tmp(tmp: Path) -> list[str]:
    """Host processes whose environment has TMPDIR inside ``tmp`` (the run's sandbox gives
    its processes a private TMPDIR there), as ``pid cmdline``."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            env = (entry / "environ").read_bytes().split(b"\0")
            cmd = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if any(v.startswith(f"TMPDIR={tmp}/".encode()) for v in env):
            found.append(f"{entry.name} {cmd}")
    return found


async def _run(repo: Path, tmp: Path, turns: list[Turn], sig: str | None) -> int | None:
    async with ScriptedModelServer(turns) as model:
        env = cli_environ(model) | {"TMPDIR": str(tmp)}
        proc = await start_cli("--task", "look", "--format", "json", env=env, cwd=repo)
        if sig is not None:
            async with asyncio.timeout(120):
                while len(model.requests) < 2:  # the hover answered: the server is warm
                    await asyncio.sleep(0.05)
            assert any("langserver" in p for p in _in_tmp(tmp)), "the server runs mid-run"
            proc.send_signal(getattr(signal, sig))
        async with asyncio.timeout(120):
            await proc.communicate()
        return proc.returncode


@pytest.mark.parametrize("sig", [None, "SIGTERM", "SIGKILL"])
async def test_semantic_servers_end_with_the_cli_run(
    calc_repo: Path, tmp_path: Path, sig: str | None
) -> None:
    program("basedpyright")
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    turns = [HOVER, Turn(text="stalled", delay_s=600) if sig else Turn(text="done")]
    code = await _run(calc_repo, tmp, turns, sig)
    assert code == {None: 0, "SIGTERM": 7, "SIGKILL": -9}[sig]
    async with asyncio.timeout(30):  # after SIGKILL the watchdog ends the sandbox
        while _in_tmp(tmp):
            await asyncio.sleep(0.1)
    assert _in_tmp(tmp) == []
