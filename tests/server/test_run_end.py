"""A run's end is announced only once it is settled: a client that lists runs the moment it
hears the run's final ``result`` trace event sees the final state, never ``running``."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path
from typing import Any

import pytest

from driveros_lsp import protocol
from tests.server._lsp import Editor, editor_session
from tests.server.conftest import model_env
from tests.server.test_flow import FIX_TURNS, SETTINGS

SLOW_CLEANUP = [sys.executable, str(Path(__file__).with_name("_slow_cleanup_server.py"))]


def list_on_result(ed: Editor) -> asyncio.Future[dict[str, Any]]:
    """The ``driveros.agent.list`` answer to a request sent from inside the ``result`` trace
    handler: before the client reads anything else the server sent."""
    listed: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()

    def hook(params: dict[str, Any]) -> None:
        if params["event"]["type"] != "result" or listed.done():
            return
        answer = ed.list_runs_now()
        answer.add_done_callback(lambda f: listed.set_result(f.result()))

    ed.on_trace.append(hook)
    return listed


def state_of(listing: dict[str, Any], run_id: str) -> str:
    return str(next(r["state"] for r in listing["runs"] if r["runId"] == run_id))


@pytest.mark.parametrize(("task", "final"), [("finish", "finished"), ("fail", "failed")])
async def test_a_run_that_ends_is_listed_final_when_its_result_arrives(
    workspace: Path, task: str, final: str
) -> None:
    async with editor_session(workspace, command=SLOW_CLEANUP) as ed:
        listed = list_on_result(ed)
        run_id = (await ed.command(protocol.CMD_AGENT_START, {"task": task}))["runId"]
        listing = await asyncio.wait_for(listed, 60)
    assert state_of(listing, run_id) == final


async def test_a_canceled_run_is_listed_canceled_when_its_result_arrives(workspace: Path) -> None:
    async with editor_session(workspace, command=SLOW_CLEANUP) as ed:
        listed = list_on_result(ed)
        run_id = (await ed.command(protocol.CMD_AGENT_START, {"task": "wait"}))["runId"]
        await ed.wait_for(lambda: ed.events(run_id, "run_started"), what="the run to start")
        canceling = asyncio.ensure_future(ed.command(protocol.CMD_AGENT_CANCEL, {"runId": run_id}))
        listing = await asyncio.wait_for(listed, 60)
        assert await canceling == {"runId": run_id, "state": "canceled"}
    assert state_of(listing, run_id) == "canceled"
    assert ed.events(run_id, "result")[0]["outcome"] == "canceled"


async def test_a_proposal_is_listed_proposed_when_its_result_arrives(
    workspace: Path, scripted_model
) -> None:
    async with (
        scripted_model(FIX_TURNS) as model,
        editor_session(workspace, env=model_env(model), settings=SETTINGS) as ed,
    ):
        listed = list_on_result(ed)
        run_id = (await ed.command(protocol.CMD_AGENT_START, {"task": "fix add"}))["runId"]
        listing = await asyncio.wait_for(listed, 120)
        # the proposal was announced first, so a client that hears the result has it
        assert ed.last_proposal(run_id) is not None
    assert state_of(listing, run_id) == "proposed"
