"""Row 1 of issue 28: a kept proposal holds no mount while nobody serves it.

A real ``driveros-lsp`` ends with a proposal pending (a clean shutdown + exit, each stop
signal, stdin EOF, kill -9). Afterwards no overlay view of the workspace is mounted (for
kill -9: once the next start's cleanup, here ``driveros gc``, has run), while the proposal's
changes stay on disk: a new server lists it, diffs it and accepts it.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from driveros.state import kept_leases, mounts_under
from driveros.testing import ScriptedModelServer
from driveros_lsp import protocol
from tests.faults.test_server_restart import _restored
from tests.review._repo import make_repo, views_of
from tests.server._lsp import editor_session
from tests.server.conftest import CALC, model_env
from tests.server.test_flow import FIX_TURNS, SETTINGS, wait_state

FIXED = CALC.replace("return a - b", "return a + b")
QUICK = {**SETTINGS, "diagnostics": False}
DRIVEROS = Path(sys.executable).parent / "driveros"
ENDS = ["shutdown", "SIGTERM", "SIGHUP", "SIGINT", "SIGQUIT", "stdin EOF", "kill -9"]


def _gc(env: dict[str, str]) -> dict[str, object]:
    done = subprocess.run(
        [str(DRIVEROS), "gc", "--format", "json"],
        capture_output=True,
        env=env,
        check=True,
        timeout=120,
    )
    report: dict[str, object] = json.loads(done.stdout)
    return report


@pytest.mark.parametrize("end", ENDS)
async def test_kept_proposal_holds_no_mount_once_its_server_ends(
    tmp_path: Path, end: str, _private_state_dir: Path
) -> None:
    ws = make_repo(tmp_path / "ws", {"calc.py": CALC})
    private_tmp = tmp_path / "tmp"
    private_tmp.mkdir()
    async with ScriptedModelServer(FIX_TURNS) as model:
        state = {"DRIVEROS_STATE_DIR": str(_private_state_dir)}
        env = {**model_env(model), "TMPDIR": str(private_tmp), **state}
        async with editor_session(ws, profile="neovim", env=env, settings=QUICK) as ed:
            run_id = (await ed.command(protocol.CMD_AGENT_START, {"task": "fix add"}))["runId"]
            await wait_state(ed, run_id, "proposed")
            assert len(views_of(ws)) == 1  # served: mounted
            proc = ed.client._server
            assert proc is not None
            if end == "kill -9":
                proc.kill()
            elif end == "stdin EOF":
                proc.stdin.close()
            elif end != "shutdown":
                proc.send_signal(getattr(signal, end))
            if end != "shutdown":
                async with asyncio.timeout(60):
                    await proc.wait()
        (lease,) = await kept_leases("scratch")
        root = Path(lease.record.paths[0])
        if end == "kill -9":
            assert views_of(ws) != []  # nothing runs in a killed process ...
            report = _gc({**os.environ, **state})
            assert report["removed"] == []  # ... the next cleanup unmounts, keeps the proposal
            assert report["unmounted"] == [str(root / ws.name)]
        assert views_of(ws) == []
        assert mounts_under(private_tmp) == []
        assert (root / "upper" / "calc.py").read_text() == FIXED  # the change stays on disk
        assert (ws / "calc.py").read_text() == CALC

        async with editor_session(ws, profile="neovim", env=env, settings=QUICK) as ed:
            run = await _restored(ed)
            assert (run["runId"], run["state"], run["files"]) == (run_id, "proposed", ["calc.py"])
            proposal = ed.last_proposal(run_id)
            assert proposal is not None and [f["path"] for f in proposal["files"]] == ["calc.py"]
            answer = await ed.command(protocol.CMD_REVIEW_ACCEPT, {"runId": run_id})
            assert answer["applying"] == ["calc.py"]
            await wait_state(ed, run_id, "accepted")
    assert (ws / "calc.py").read_text() == FIXED
    assert views_of(ws) == [] and mounts_under(private_tmp) == []
    assert await kept_leases() == []
