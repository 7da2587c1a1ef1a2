"""Proposals survive a restart of the server (shutdown or kill -9): the next server lists them
as ``proposed`` with ``restored: true``, tells the user, and accept/reject work on them; once
settled nothing is left (no scratch copy, no worktree entry, no lease)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from lsprotocol import types as lsp

from driveros.testing import ScriptedModelServer, ToolCallSpec, Turn
from driveros_lsp import protocol
from tests.review._repo import scratch_copies, views_of
from tests.server._lsp import Editor, editor_session
from tests.server.conftest import CALC, model_env
from tests.server.test_flow import FIX_TURNS, SETTINGS, restored_note, wait_state

FIXED = CALC.replace("return a - b", "return a + b")


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


def _leases(state: Path) -> list[Path]:
    return sorted((state / "leases").glob("*.json")) if (state / "leases").is_dir() else []


async def _restored(ed: Editor) -> dict[str, object]:
    note = await restored_note(ed)
    assert note[0].type == lsp.MessageType.Info and "1 proposal(s)" in note[0].message
    listing = await ed.command(protocol.CMD_AGENT_LIST)
    (run,) = listing["runs"]
    return dict(run)


@pytest.mark.parametrize("end", ["shutdown", "kill -9"])
@pytest.mark.parametrize("verdict", ["accept", "reject"])
async def test_server_restart_proposal_survives_and_settles(
    tmp_path: Path, end: str, verdict: str
) -> None:
    ws = _repo(tmp_path)
    state = tmp_path / "state"
    async with ScriptedModelServer(FIX_TURNS) as model:
        env = {**model_env(model), "DRIVEROS_STATE_DIR": str(state)}
        async with editor_session(ws, profile="neovim", env=env, settings=SETTINGS) as ed:
            run_id = (await ed.command(protocol.CMD_AGENT_START, {"task": "fix add"}))["runId"]
            await wait_state(ed, run_id, "proposed")
            if end == "kill -9":
                server = ed.client._server
                assert server is not None
                server.kill()
                await server.wait()
        assert len(_leases(state)) == 1  # the proposal's copy is still there, registered ...
        if end == "shutdown":
            assert views_of(ws) == []  # ... and, a view, no longer mounted (issue 28 row 1)

        async with editor_session(ws, profile="neovim", env=env, settings=SETTINGS) as ed:
            run = await _restored(ed)
            assert (run["runId"], run["state"], run["restored"]) == (run_id, "proposed", True)
            assert run["task"] == "fix add" and run["files"] == ["calc.py"]
            proposal = ed.last_proposal(run_id)
            assert proposal is not None and [f["path"] for f in proposal["files"]] == ["calc.py"]
            if verdict == "accept":
                answer = await ed.command(protocol.CMD_REVIEW_ACCEPT, {"runId": run_id})
                assert answer["applying"] == ["calc.py"]
                await wait_state(ed, run_id, "accepted")
            else:
                await ed.command(protocol.CMD_REVIEW_REJECT, {"runId": run_id})
                await wait_state(ed, run_id, "rejected")
    assert (ws / "calc.py").read_text() == (FIXED if verdict == "accept" else CALC)
    assert scratch_copies(ws) == []
    assert _leases(state) == []


async def test_server_restart_partly_reviewed_proposal_keeps_the_rest(tmp_path: Path) -> None:
    ws = _repo(tmp_path)
    (ws / "notes.txt").write_text("hello\n")
    state = tmp_path / "state"
    turns = [
        Turn(
            tool_calls=[
                FIX_TURNS[0].tool_calls[0],
                ToolCallSpec("write_file", {"path": "notes.txt", "content": "hello world\n"}),
            ]
        ),
        Turn(text="two files"),
    ]
    async with ScriptedModelServer(turns) as model:
        env = {**model_env(model), "DRIVEROS_STATE_DIR": str(state)}
        async with editor_session(ws, profile="neovim", env=env, settings=SETTINGS) as ed:
            run_id = (await ed.command(protocol.CMD_AGENT_START, {"task": "two"}))["runId"]
            await wait_state(ed, run_id, "proposed")
            await ed.command(protocol.CMD_REVIEW_REJECT, {"runId": run_id, "paths": ["notes.txt"]})
        async with editor_session(ws, profile="neovim", env=env, settings=SETTINGS) as ed:
            run = await _restored(ed)
            assert run["files"] == ["calc.py"]
            await ed.command(protocol.CMD_REVIEW_ACCEPT, {"runId": run_id})
            await wait_state(ed, run_id, "accepted")
    assert (ws / "calc.py").read_text() == FIXED
    assert (ws / "notes.txt").read_text() == "hello\n"
    assert scratch_copies(ws) == [] and _leases(state) == []


async def test_server_restart_restored_proposal_resumes_with_feedback(tmp_path: Path) -> None:
    ws = _repo(tmp_path)
    state = tmp_path / "state"
    more = [
        Turn(tool_calls=[ToolCallSpec("write_file", {"path": "NOTES.md", "content": "why\n"})]),
        Turn(text="explained in NOTES.md"),
    ]
    async with ScriptedModelServer([*FIX_TURNS, *more]) as model:
        env = {**model_env(model), "DRIVEROS_STATE_DIR": str(state)}
        async with editor_session(ws, profile="neovim", env=env, settings=SETTINGS) as ed:
            run_id = (await ed.command(protocol.CMD_AGENT_START, {"task": "fix add"}))["runId"]
            await wait_state(ed, run_id, "proposed")
        async with editor_session(ws, profile="neovim", env=env, settings=SETTINGS) as ed:
            await _restored(ed)
            await ed.command(
                protocol.CMD_REVIEW_REJECT, {"runId": run_id, "feedback": "explain it in NOTES.md"}
            )
            await wait_state(ed, run_id, "running", "proposed")
            await wait_state(ed, run_id, "proposed")
            listing = await ed.command(protocol.CMD_AGENT_LIST)
            (run,) = listing["runs"]
            assert sorted(run["files"]) == ["NOTES.md", "calc.py"]  # same scratch copy, more
            assert "explain it in NOTES.md" in json.dumps(model.requests[-2])
            await ed.command(protocol.CMD_REVIEW_ACCEPT, {"runId": run_id})
            await wait_state(ed, run_id, "accepted")
    assert (ws / "calc.py").read_text() == FIXED and (ws / "NOTES.md").read_text() == "why\n"
    assert scratch_copies(ws) == [] and _leases(state) == []
