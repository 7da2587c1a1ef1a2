"""Row 2 of issue 15 (server): a stop signal, stdin EOF or kill -9 mid-run leaves nothing.

A real ``driveros-lsp`` runs a real review run on a git repository (the model is scripted to
stall, so the run is mid-flight with its scratch worktree); then the fault. Afterwards the
repository lists only its main worktree, the state directory holds no lease, and the
server's private ``$TMPDIR`` is empty.
"""

from __future__ import annotations

import asyncio
import os
import signal
from pathlib import Path
from typing import Any

import pytest

from driveros.state import list_leases
from driveros.testing import Turn
from driveros_lsp import protocol
from tests.review._repo import make_repo, scratch_copies
from tests.server._lsp import editor_session
from tests.server.conftest import CALC, model_env
from tests.server.conftest import scripted_model as scripted_model  # the fixture
from tests.server.test_flow import SETTINGS, wait_state

STALL = [Turn(text="never mind", delay_s=600)]


async def _until(check: Any, what: str) -> None:
    async with asyncio.timeout(60):
        while not check():
            await asyncio.sleep(0.05)
    assert check(), what


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return make_repo(tmp_path / "ws", {"calc.py": CALC})


@pytest.fixture
def private_tmp(tmp_path: Path) -> Path:
    d = tmp_path / "tmp"
    d.mkdir()
    return d


async def _mid_run(ed: Any, repo: Path) -> None:
    run_id = (await ed.command(protocol.CMD_AGENT_START, {"task": "stall"}))["runId"]
    await wait_state(ed, run_id, "running")
    await _until(lambda: len(scratch_copies(repo)) == 1, "the run's scratch copy")


async def _assert_nothing_left(repo: Path, private_tmp: Path) -> None:
    assert scratch_copies(repo) == []
    assert await list_leases() == []
    assert sorted(p.name for p in private_tmp.iterdir()) == []


@pytest.mark.parametrize("how", ["SIGTERM", "SIGHUP", "SIGQUIT", "SIGINT", "stdin EOF"])
async def test_server_stop_mid_run_cleans_up(
    repo: Path, private_tmp: Path, scripted_model: Any, how: str
) -> None:
    async with (
        scripted_model(STALL) as model,
        editor_session(
            repo, env={**model_env(model), "TMPDIR": str(private_tmp)}, settings=SETTINGS
        ) as ed,
    ):
        await _mid_run(ed, repo)
        proc = ed.client._server
        if how == "stdin EOF":
            proc.stdin.close()
        else:
            proc.send_signal(getattr(signal, how))
        async with asyncio.timeout(60):
            await proc.wait()
    await _assert_nothing_left(repo, private_tmp)


async def test_server_killed_mid_run_is_cleaned_by_the_next_start(
    repo: Path, private_tmp: Path, scripted_model: Any
) -> None:
    env_extra = {"TMPDIR": str(private_tmp)}
    async with (
        scripted_model(STALL) as model,
        editor_session(repo, env={**model_env(model), **env_extra}, settings=SETTINGS) as ed,
    ):
        await _mid_run(ed, repo)
        proc = ed.client._server
        os.kill(proc.pid, signal.SIGKILL)
        await proc.wait()
    assert len(scratch_copies(repo)) == 1  # kill -9 cannot clean up ...
    assert len(await list_leases()) >= 1
    async with editor_session(repo, env=env_extra, settings=SETTINGS):
        # ... the next server start does (in the background, right after it starts).
        await _until(lambda: scratch_copies(repo) == [], "the startup cleanup")
        async with asyncio.timeout(60):
            while await list_leases():
                await asyncio.sleep(0.05)
    # The killed server's sandbox HOME/TMPDIR is its watchdog's to remove, at its own pace.
    await _until(lambda: not any(private_tmp.iterdir()), "the watchdog's cleanup")
    await _assert_nothing_left(repo, private_tmp)
