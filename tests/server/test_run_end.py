"""A run's end is announced only once it is settled: a client that lists runs the moment it
hears the run's final ``result`` trace event sees the final state, never ``running``."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path
from typing import Any

import pytest
from lsprotocol import types as lsp

from driveros_lsp import protocol
from tests.server._lsp import Editor, editor_session
from tests.server.conftest import model_env
from tests.server.test_approval import Questions
from tests.server.test_flow import FIX_TURNS, SETTINGS

SLOW_CLEANUP = [sys.executable, str(Path(__file__).with_name("_slow_cleanup_server.py"))]
SETUP_FAILS = [*SLOW_CLEANUP, "--setup-fails"]


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


# -- a run that ends before the agent starts still ends with one ``result`` ---------------


def one_result(ed: Editor, run_id: str) -> dict[str, Any]:
    results = ed.events(run_id, "result")
    assert len(results) == 1, results
    return results[0]


def answer_late(questions: Questions) -> None:
    """The questions left open are dismissed (the session can close)."""
    for future in questions.waiting:
        if not future.done():
            future.set_result(None)


async def ended(ed: Editor, run_id: str) -> None:
    await ed.wait_for(lambda: ed.progress_ended(run_id), what="the progress end")


async def test_a_run_canceled_during_the_trust_question_ends_with_a_canceled_result(
    workspace: Path,
) -> None:
    (workspace / ".env").write_text("FOO=bar\n")
    async with editor_session(workspace, settings=SETTINGS) as ed:
        questions = Questions(ed, Ellipsis)  # the user never answers
        listed = list_on_result(ed)
        run_id = (await ed.command(protocol.CMD_AGENT_START, {"task": "fix add"}))["runId"]
        await ed.wait_for(lambda: questions.asked, what="the trust question")
        answer = await ed.command(protocol.CMD_AGENT_CANCEL, {"runId": run_id})
        assert answer == {"runId": run_id, "state": "canceled"}
        listing = await asyncio.wait_for(listed, 60)
        await ended(ed, run_id)
        result = one_result(ed, run_id)
        end = ed.progress(run_id)[-1]
        answer_late(questions)
    assert state_of(listing, run_id) == "canceled"
    assert (result["outcome"], result["exit_code"], result["run_id"]) == ("canceled", 7, run_id)
    assert end.message == "canceled"
    assert ed.events(run_id)[-1]["type"] == "result"  # the last event of the run


async def test_a_run_canceled_right_after_start_ends_with_one_canceled_result(
    workspace: Path,
) -> None:
    async with editor_session(workspace, settings=SETTINGS) as ed:
        listed = list_on_result(ed)
        run_id = (await ed.command(protocol.CMD_AGENT_START, {"task": "fix add"}))["runId"]
        await ed.command(protocol.CMD_AGENT_CANCEL, {"runId": run_id})
        listing = await asyncio.wait_for(listed, 60)
        await ended(ed, run_id)
        result = one_result(ed, run_id)
    assert state_of(listing, run_id) == "canceled"
    assert result["outcome"] == "canceled"
    assert ed.progress(run_id)[-1].message == "canceled"


async def _start_until_ended(
    ed: Editor, task: str
) -> tuple[str, dict[str, Any], dict[str, Any], list[str]]:
    """Start a run and wait for its end: (run id, the listing taken at its result, the result
    event, the error messages shown)."""
    listed = list_on_result(ed)
    run_id = (await ed.command(protocol.CMD_AGENT_START, {"task": task}))["runId"]
    listing = await asyncio.wait_for(listed, 60)
    await ended(ed, run_id)
    errors = [m.message for m in ed.client.messages if m.type == lsp.MessageType.Error]
    return run_id, listing, one_result(ed, run_id), errors


async def test_a_run_without_a_provider_key_ends_with_one_setup_error_result(
    workspace: Path,
) -> None:
    async with editor_session(workspace, settings=SETTINGS) as ed:  # no OPENAI_API_KEY
        run_id, listing, result, errors = await _start_until_ended(ed, "fix add")
    assert state_of(listing, run_id) == "finished"
    assert result["outcome"] == "setup_error" and result["exit_code"] == 1
    assert "OPENAI_API_KEY" in (result["error"] or "")
    assert any(run_id in m and "OPENAI_API_KEY" in m for m in errors), errors
    assert ed.progress(run_id)[-1].message == "setup_error"


async def test_a_run_whose_setup_raises_ends_with_one_setup_error_result(workspace: Path) -> None:
    # the runner fails before the agent starts: it never writes a result of its own
    async with editor_session(workspace, command=SETUP_FAILS) as ed:
        run_id, listing, result, errors = await _start_until_ended(ed, "setup")
    assert state_of(listing, run_id) == "failed"
    assert result["outcome"] == "setup_error" and result["exit_code"] == 1
    assert "no scratch copy" in (result["error"] or "")
    assert any(run_id in m and "no scratch copy" in m for m in errors), errors
    assert ed.progress(run_id)[-1].message.startswith("failed: ")


async def test_a_run_stopped_by_server_shutdown_ends_with_one_canceled_result(
    workspace: Path,
) -> None:
    (workspace / ".env").write_text("FOO=bar\n")
    async with editor_session(workspace, settings=SETTINGS) as ed:
        questions = Questions(ed, Ellipsis)
        run_id = (await ed.command(protocol.CMD_AGENT_START, {"task": "fix add"}))["runId"]
        await ed.wait_for(lambda: questions.asked, what="the trust question")
        await asyncio.wait_for(ed.client.shutdown_async(None), 30)
        result = one_result(ed, run_id)
        answer_late(questions)
        ed.client.exit(None)  # a second shutdown would go unanswered
        await asyncio.wait_for(ed.client._server.wait(), 30)
    assert result["outcome"] == "canceled"
