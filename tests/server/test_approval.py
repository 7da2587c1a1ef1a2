"""Approval ``ask`` in the editor (issue 14), end to end over stdio with the real agent and a
scripted model: what the policy would not allow is asked with ``window/showMessageRequest``;
the answer (or its absence) becomes an ``approval`` event in the trace."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from lsprotocol import types as lsp
from pytest_lsp import client_capabilities

from driveros.agent import event_adapter
from driveros.testing import ToolCallSpec, Turn
from driveros_lsp import protocol
from driveros_lsp._trace import describe
from tests.server._lsp import Editor, editor_session
from tests.server.conftest import model_env

SETTINGS = {"provider": "openai", "model": "scripted-model", "network": True}  # open: asked
PROBE = "print('probe ran: ' + 'ok')\n"
RUN_PROBE = ToolCallSpec("run", {"command": "python3 probe.py"})
RUN_ESCAPED = ToolCallSpec("run", {"command": "python3 probe.py\n# \x1b[2Jhidden"})


class Questions:
    """The client side of window/showMessageRequest: records and answers each question."""

    def __init__(self, ed: Editor, answer: object) -> None:
        self.asked: list[lsp.ShowMessageRequestParams] = []
        self.waiting: list[asyncio.Future[Any]] = []
        self.answer = answer
        client = ed.client
        client.protocol.fm.features.pop(lsp.WINDOW_SHOW_MESSAGE_REQUEST, None)

        @client.feature(lsp.WINDOW_SHOW_MESSAGE_REQUEST)
        async def on_question(params: lsp.ShowMessageRequestParams) -> Any:
            self.asked.append(params)
            if self.answer is Ellipsis:  # never answers on its own
                future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
                self.waiting.append(future)
                return await future
            if self.answer is None:
                return None
            return lsp.MessageActionItem(title=str(self.answer))


@pytest.fixture
def probe_workspace(workspace: Path) -> Path:
    (workspace / "probe.py").write_text(PROBE)
    return workspace


async def _run(ed: Editor, task: str = "run the probe") -> str:
    started = await ed.command(protocol.CMD_AGENT_START, {"task": task})
    return str(started["runId"])


async def _result(ed: Editor, run_id: str) -> dict[str, Any]:
    found = await ed.wait_for(lambda: ed.events(run_id, "result"), what="the result")
    return dict(found[-1])


def _tool_outputs(model: Any) -> list[str]:
    """What the model was told by tool results, in order (the last request has them all)."""
    if not model.requests:
        return []
    return [
        json.dumps(m.get("content"))
        for m in model.requests[-1]["messages"]
        if m.get("role") == "tool"
    ]


async def test_allow_once_runs_the_command_and_records_who_answered(
    probe_workspace: Path, scripted_model
) -> None:
    turns = [Turn(tool_calls=[RUN_PROBE]), Turn(text="the probe ran")]
    async with (
        scripted_model(turns) as model,
        editor_session(
            probe_workspace, profile="vscode", env=model_env(model), settings=SETTINGS
        ) as ed,
    ):
        questions = Questions(ed, "Allow once")
        run_id = await _run(ed)
        await _result(ed, run_id)
        (question,) = questions.asked
        assert [a.title for a in question.actions or []] == [
            "Allow once",
            "Allow for this run",
            "Deny",
        ]
        assert "python3 probe.py" in question.message
        assert "tool: run" in question.message
        assert "runs in: local (bubblewrap), network on, scratch copy" in question.message
        (approval,) = ed.events(run_id, "approval")
        assert approval["decision"] == "approved"
        assert approval["asked"] is True
        assert approval["scope"] == "once"
        assert approval["answered_by"]  # the client's name (pytest-lsp), not empty
        # the progress line says who answered and for how long (progress reports are
        # coalesced, so the line is checked as the server words it, not as one report)
        await ed.wait_for(lambda: ed.progress_ended(run_id), what="the progress end")
        who = approval["answered_by"]
        line = describe(event_adapter().validate_python(approval))
        assert line == f"turn 1: run approved (asked, by {who}, once)"
        assert any("probe ran: ok" in out for out in _tool_outputs(model))


async def test_allow_for_this_run_is_not_asked_again(probe_workspace: Path, scripted_model) -> None:
    turns = [Turn(tool_calls=[RUN_PROBE]), Turn(tool_calls=[RUN_PROBE]), Turn(text="twice")]
    async with (
        scripted_model(turns) as model,
        editor_session(
            probe_workspace, profile="neovim", env=model_env(model), settings=SETTINGS
        ) as ed,
    ):
        questions = Questions(ed, "Allow for this run")
        run_id = await _run(ed)
        await _result(ed, run_id)
        assert len(questions.asked) == 1
        first, second = ed.events(run_id, "approval")
        assert (first["decision"], first["asked"], first["scope"]) == ("approved", True, "run")
        assert (second["decision"], second["asked"], second["scope"]) == ("allowed", False, "run")
        assert sum("probe ran: ok" in out for out in _tool_outputs(model)) == 2


@pytest.mark.parametrize("answer", ["Deny", None])
async def test_deny_and_a_closed_question_refuse_the_command(
    probe_workspace: Path, scripted_model, answer: str | None
) -> None:
    turns = [Turn(tool_calls=[RUN_ESCAPED]), Turn(text="refused")]
    async with (
        scripted_model(turns) as model,
        editor_session(
            probe_workspace, profile="vscode", env=model_env(model), settings=SETTINGS
        ) as ed,
    ):
        questions = Questions(ed, answer)
        run_id = await _run(ed)
        await _result(ed, run_id)
        (question,) = questions.asked
        # the whole command, control characters escaped: no raw newline or ESC reaches the UI
        assert "\x1b" not in question.message
        assert "python3 probe.py\\n# \\x1b[2Jhidden" in question.message
        (approval,) = ed.events(run_id, "approval")
        assert approval["decision"] == "denied"
        assert approval["asked"] is True
        assert approval["scope"] is None
        assert not any("probe ran: ok" in out for out in _tool_outputs(model))


async def test_no_answer_within_the_timeout_is_deny(probe_workspace: Path, scripted_model) -> None:
    turns = [Turn(tool_calls=[RUN_PROBE]), Turn(text="timed out")]
    async with (
        scripted_model(turns) as model,
        editor_session(
            probe_workspace,
            profile="vscode",
            env=model_env(model),
            settings={**SETTINGS, "approvalTimeoutS": 0.5},
        ) as ed,
    ):
        questions = Questions(ed, Ellipsis)
        run_id = await _run(ed)
        await _result(ed, run_id)
        assert len(questions.asked) == 1
        (approval,) = ed.events(run_id, "approval")
        assert (approval["decision"], approval["answered_by"]) == ("denied", "timeout")
        # the server withdrew the question ($/cancelRequest cancels the client's handler)
        await ed.wait_for(lambda: questions.waiting[0].cancelled(), what="the withdrawal")
        assert not any("probe ran: ok" in out for out in _tool_outputs(model))


async def test_cancelling_the_run_while_asking_is_deny(
    probe_workspace: Path, scripted_model
) -> None:
    turns = [Turn(tool_calls=[RUN_PROBE]), Turn(text="never reached")]
    async with (
        scripted_model(turns) as model,
        editor_session(
            probe_workspace, profile="vscode", env=model_env(model), settings=SETTINGS
        ) as ed,
    ):
        questions = Questions(ed, Ellipsis)
        run_id = await _run(ed)
        await ed.wait_for(lambda: questions.asked, what="the question")
        canceled = await ed.command(protocol.CMD_AGENT_CANCEL, {"runId": run_id})
        assert canceled["state"] == "canceled"
        approval = (await ed.wait_for(lambda: ed.events(run_id, "approval"), what="approval"))[0]
        assert (approval["decision"], approval["answered_by"]) == ("denied", "canceled")
        await ed.wait_for(lambda: questions.waiting[0].cancelled(), what="the withdrawal")
        assert (await _result(ed, run_id))["outcome"] == "canceled"
        assert model.turns_served == 1


async def test_a_client_without_message_actions_is_never_asked(
    probe_workspace: Path, scripted_model
) -> None:
    caps = client_capabilities("visual-studio-code@v1.65.2")
    assert caps.window is not None
    caps.window.show_message = None
    turns = [Turn(tool_calls=[RUN_PROBE]), Turn(text="refused")]
    async with (
        scripted_model(turns) as model,
        editor_session(
            probe_workspace,
            capabilities=caps,
            env=model_env(model),
            settings={**SETTINGS, "approval": "ask"},
        ) as ed,
    ):
        questions = Questions(ed, "Allow once")
        run_id = await _run(ed)
        await _result(ed, run_id)
        # a second run (and a settings change) do not repeat the warning
        ed.client.workspace_did_change_configuration(
            lsp.DidChangeConfigurationParams(settings={"driveros": {**SETTINGS, "approval": "ask"}})
        )
        second = await _run(ed, "again")
        await _result(ed, second)
        assert questions.asked == []
        (approval,) = ed.events(run_id, "approval")
        assert (approval["decision"], approval["asked"]) == ("blocked", False)
        warnings = [m.message for m in ed.client.messages if "messageActionItem" in m.message]
        assert len(warnings) == 1
        assert "using 'policy'" in warnings[0]


def test_who_answered_is_a_printable_client_name() -> None:
    from driveros_lsp._editor import ClientTraits

    caps = lsp.ClientCapabilities()
    assert ClientTraits.from_capabilities(caps, "utf-16", "Ne\x1b[2Jovim\n 0.11").name == (
        "Ne[2Jovim 0.11"
    )
    assert ClientTraits.from_capabilities(caps, "utf-16", None).name == "editor"
    assert ClientTraits.from_capabilities(caps, "utf-16", "x" * 500).name == "x" * 60
    assert not ClientTraits.from_capabilities(caps, "utf-16", "vim").message_actions
