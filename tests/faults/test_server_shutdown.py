"""Accept, then shutdown right away: the scratch copy never leaks and no task is left pending
("Task was destroyed but it is pending"). Repeated: the race lost about half the trials."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from driveros.testing import ScriptedModelServer
from driveros_lsp import protocol
from tests.review._repo import scratch_copies
from tests.server._lsp import editor_session
from tests.server.conftest import CALC, model_env
from tests.server.test_flow import FIX_TURNS, SETTINGS, wait_state

TRIALS = 8
#: The feed is beside the point here (and would only make each trial slower).
QUICK = {**SETTINGS, "diagnostics": False}


def _git(root: Path, *args: str) -> str:
    done = subprocess.run(["git", "-C", str(root), *args], check=True, capture_output=True)
    return done.stdout.decode()


def _repo(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "calc.py").write_text(CALC)
    _git(ws, "init", "-q")
    _git(ws, "add", ".")
    _git(ws, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "base")
    return ws


def _leftovers(ws: Path, state: Path) -> list[str]:
    """Scratch copies still there that no kept proposal accounts for (a kept worktree stays; a
    kept view stays on disk, unmounted), and leases of no kept proposal."""
    copies = scratch_copies(ws)
    leases = sorted((state / "leases").glob("*.json")) if (state / "leases").is_dir() else []
    kept = [p for p in leases if '"kept": {' in p.read_text() or '"kept":{' in p.read_text()]
    if len(copies) <= len(kept) == len(leases):
        return []
    return copies + [p.name for p in leases]


async def test_server_shutdown_right_after_accept_leaks_nothing(
    tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    ws = _repo(tmp_path)
    state = tmp_path / "state"
    leaks: list[tuple[int, list[str]]] = []
    for trial in range(TRIALS):
        async with (
            ScriptedModelServer(FIX_TURNS) as model,
            editor_session(
                ws,
                profile="neovim",
                env={**model_env(model), "DRIVEROS_STATE_DIR": str(state)},
                settings=QUICK,
            ) as ed,
        ):
            run_id = (await ed.command(protocol.CMD_AGENT_START, {"task": "fix add"}))["runId"]
            await wait_state(ed, run_id, "proposed")
            await ed.command(protocol.CMD_REVIEW_ACCEPT, {"runId": run_id})
            # leaving the block sends shutdown + exit at once, the edit's answer in flight
        left = _leftovers(ws, state)
        if left:
            leaks.append((trial, left))
        _git(ws, "checkout", "-q", "--", ".")
    err = capfd.readouterr().err
    assert leaks == []
    assert "Task was destroyed but it is pending" not in err
