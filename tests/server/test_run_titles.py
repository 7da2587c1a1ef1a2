"""What the user sees of a run is their own words, never the prompt driveros built.

A start with a ``uri`` (Emacs' and Neovim's "ask about this file") and a fix send the model a
task with the file, the selection and the diagnostics listing; the restored-proposals message
after a restart, and the label of the edit, name the run by the user's task or the fix's
first diagnostic instead."""

from __future__ import annotations

import subprocess
from pathlib import Path

from driveros.testing import ScriptedModelServer
from driveros_lsp import protocol
from tests.server._lsp import Editor, editor_session
from tests.server.conftest import CALC, model_env
from tests.server.test_flow import FIX_TURNS, SETTINGS, diagnostic, restored_note, wait_state


def _repo(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "calc.py").write_text(CALC)
    for args in (
        ["init", "-q"],
        ["add", "."],
        ["-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "b"],
    ):
        subprocess.run(["git", "-C", str(ws), *args], check=True, capture_output=True)
    return ws


async def _restored_note(ed: Editor) -> str:
    return str((await restored_note(ed))[0].message)


async def _propose_then_restart(tmp_path: Path, start: str) -> str:
    ws = _repo(tmp_path)
    env_extra = {"DRIVEROS_STATE_DIR": str(tmp_path / "state")}
    async with ScriptedModelServer(FIX_TURNS) as model:
        env = {**model_env(model), **env_extra}
        async with editor_session(ws, profile="neovim", env=env, settings=SETTINGS) as ed:
            uri = ed.open("calc.py")
            if start == "start":
                args = {"task": "fix add", "uri": uri}
                run_id = (await ed.command(protocol.CMD_AGENT_START, args))["runId"]
            else:
                d = diagnostic()
                wire = {
                    "range": {
                        "start": {"line": d.range.start.line, "character": d.range.start.character},
                        "end": {"line": d.range.end.line, "character": d.range.end.character},
                    },
                    "message": d.message,
                    "severity": 1,
                    "source": "pytest",
                }
                args = {"uri": uri, "diagnostics": [wire]}
                run_id = (await ed.command(protocol.CMD_AGENT_FIX, args))["runId"]
            await wait_state(ed, run_id, "proposed")
        async with editor_session(ws, profile="neovim", env=env, settings=SETTINGS) as ed:
            note = await _restored_note(ed)
            await ed.command(protocol.CMD_REVIEW_REJECT, {"runId": run_id})
            await wait_state(ed, run_id, "rejected")
    return note


async def test_a_restored_start_with_a_file_is_named_by_the_users_task(tmp_path: Path) -> None:
    note = await _propose_then_restart(tmp_path, "start")
    assert "fix add" in note
    assert "looking at" not in note and "The user" not in note


async def test_a_restored_fix_is_named_by_its_diagnostic_not_the_prompt(tmp_path: Path) -> None:
    note = await _propose_then_restart(tmp_path, "fix")
    assert "add returns the difference" in note and "calc.py" in note
    assert "Fix this problem" not in note and "- calc.py" not in note
