"""Cancel really cancels, in every state: model stream, tools and their process tree."""

from __future__ import annotations

import asyncio
import os
import random
from pathlib import Path

import pytest
from lsprotocol import types as lsp
from pygls.exceptions import JsonRpcException

from driveros.testing import ToolCallSpec, Turn
from driveros_lsp import protocol
from tests.server._lsp import Editor, editor_session
from tests.server.conftest import model_env
from tests.server.test_flow import FIX_TURNS, SETTINGS, run_state, wait_state


def processes_with(marker: str) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            state = next(
                (
                    ln
                    for ln in (entry / "status").read_text(errors="replace").splitlines()
                    if ln.startswith("State:")
                ),
                "",
            )
        except OSError:
            continue
        if marker in cmdline and "zombie" not in state and int(entry.name) != os.getpid():
            found.append(int(entry.name))
    return found


@pytest.fixture
def slow_build(workspace: Path) -> str:
    """A `make test` that runs for a long time; returns the marker in its command line."""
    marker = f"sleep {random.randint(100000, 999999)}"
    (workspace / "Makefile").write_text(f"test:\n\t{marker}\n")
    return marker


TOOL_TURNS = [Turn(tool_calls=[ToolCallSpec("run", {"command": "make test"})]), Turn(text="ok")]


async def _started(ed: Editor, task: str = "work") -> str:
    run_id = str((await ed.command(protocol.CMD_AGENT_START, {"task": task}))["runId"])
    await ed.wait_for(lambda: ed.events(run_id, "turn_started"), what="the first turn")
    return run_id


async def test_cancel_while_the_model_streams(workspace: Path, scripted_model) -> None:
    async with (
        scripted_model([Turn(text="too late", delay_s=60)]) as model,
        editor_session(workspace, env=model_env(model), settings=SETTINGS) as ed,
    ):
        run_id = await _started(ed)
        answer = await ed.command(protocol.CMD_AGENT_CANCEL, {"runId": run_id})
        assert answer == {"runId": run_id, "state": "canceled"}
        await ed.wait_for(lambda: ed.progress_ended(run_id), what="the progress end")
        assert ed.progress(run_id)[-1].message == "canceled"
        await ed.wait_for(lambda: ed.events(run_id, "result"), what="the result event")
        assert ed.events(run_id, "result")[0]["outcome"] == "canceled"
        assert ed.edits == []


async def test_cancel_while_a_tool_runs_kills_its_process_tree(
    workspace: Path, scripted_model, slow_build: str
) -> None:
    async with (
        scripted_model(TOOL_TURNS) as model,
        editor_session(workspace, env=model_env(model), settings=SETTINGS) as ed,
    ):
        run_id = await _started(ed)
        await ed.wait_for(lambda: processes_with(slow_build), what="the build running")
        answer = await ed.command(protocol.CMD_AGENT_CANCEL, {"runId": run_id})
        assert answer["state"] == "canceled"
        await ed.wait_for(lambda: not processes_with(slow_build), what="no process left")
        assert await run_state(ed, run_id) == "canceled"


async def test_cancel_from_the_progress_ui(workspace: Path, scripted_model) -> None:
    async with (
        scripted_model([Turn(text="too late", delay_s=60)]) as model,
        editor_session(workspace, env=model_env(model), settings=SETTINGS) as ed,
    ):
        run_id = await _started(ed)
        await ed.wait_for(lambda: ed.progress(run_id), what="the progress begin")
        token = next(t for t in ed.client.progress_reports if str(t).endswith(f"{run_id}-1"))
        ed.client.window_work_done_progress_cancel(lsp.WorkDoneProgressCancelParams(token=token))
        await wait_state(ed, run_id, "canceled")
        await ed.wait_for(lambda: ed.progress_ended(run_id), what="the progress end")


async def test_cancel_a_proposal_discards_it_then_errors(workspace: Path, scripted_model) -> None:
    async with (
        scripted_model(FIX_TURNS) as model,
        editor_session(workspace, profile="neovim", env=model_env(model), settings=SETTINGS) as ed,
    ):
        run_id = (await ed.command(protocol.CMD_AGENT_START, {"task": "fix add"}))["runId"]
        await wait_state(ed, run_id, "proposed")
        answer = await ed.command(protocol.CMD_AGENT_CANCEL, {"runId": run_id})
        assert answer == {"runId": run_id, "state": "canceled"}
        last = ed.last_proposal(run_id)
        assert last is not None and last["state"] == "canceled" and last["files"] == []
        assert await ed.code_actions("calc.py") == []
        assert "return a - b" in (workspace / "calc.py").read_text()

        with pytest.raises(JsonRpcException) as again:
            await ed.command(protocol.CMD_AGENT_CANCEL, {"runId": run_id})
        assert again.value.code == -32803
        assert "already canceled" in again.value.message
        with pytest.raises(JsonRpcException) as accept:
            await ed.command(protocol.CMD_REVIEW_ACCEPT, {"runId": run_id})
        assert accept.value.code == -32803
        assert "no proposal" in accept.value.message


async def test_cancel_a_finished_run_is_an_error(workspace: Path, scripted_model) -> None:
    async with (
        scripted_model([Turn(text="nothing to change")]) as model,
        editor_session(workspace, env=model_env(model), settings=SETTINGS) as ed,
    ):
        run_id = (await ed.command(protocol.CMD_AGENT_START, {"task": "look"}))["runId"]
        await wait_state(ed, run_id, "finished")
        with pytest.raises(JsonRpcException) as err:
            await ed.command(protocol.CMD_AGENT_CANCEL, {"runId": run_id})
        assert err.value.code == -32803
        assert ed.proposals == []


@pytest.mark.parametrize("how", ["exit", "eof"])
async def test_cancel_on_client_exit_leaves_no_process(
    workspace: Path, scripted_model, slow_build: str, how: str
) -> None:
    async with (
        scripted_model(TOOL_TURNS) as model,
        editor_session(workspace, env=model_env(model), settings=SETTINGS) as ed,
    ):
        await _started(ed)
        await ed.wait_for(lambda: processes_with(slow_build), what="the build running")
        server = ed.client._server
        assert server is not None and server.stdin is not None
        if how == "exit":
            ed.client.exit(None)
        else:
            server.stdin.close()
        code = await asyncio.wait_for(server.wait(), 60)
        assert code == 1  # no shutdown request came first
        assert processes_with(slow_build) == []
