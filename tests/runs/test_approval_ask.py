"""``approve="ask"`` end to end through execute_run: questions, events, tiers (issue 14)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from tests.sandbox.conftest import daemon_runtimes, require_docker

from driveros.agent import Event
from driveros.approval import Answer, Question
from driveros.config import load_environment
from driveros.runs import RunContext, RunSpec, execute_run
from driveros.testing import ScriptedModelServer, ToolCallSpec, Turn

from .conftest import environ_for, run_scripted

PROBE = "print('probe says', 6 * 7)\n"
RUN_PROBE = ToolCallSpec("run", {"command": "python3 probe.py"})


class RecordingAsker:
    def __init__(self, *answers: Answer) -> None:
        self.answers = list(answers)
        self.questions: list[Question] = []

    async def ask(self, question: Question) -> Answer:
        self.questions.append(question)
        return self.answers.pop(0)


class SilentAsker:
    def __init__(self) -> None:
        self.asked = asyncio.Event()

    async def ask(self, question: Question) -> Answer:
        self.asked.set()
        await asyncio.Event().wait()
        raise AssertionError("unreachable")


def _tool_messages(request: Any) -> list[str]:
    return [json.dumps(m) for m in request["messages"] if m["role"] == "tool"]


@pytest.fixture
def probe_repo(tmp_path: Path) -> Path:
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "probe.py").write_text(PROBE)
    return repo


async def test_ask_allow_for_this_run_asks_once_and_records_the_answer(probe_repo: Path) -> None:
    asker = RecordingAsker(Answer(choice="allow_run", by="client"))
    turns = [Turn(tool_calls=[RUN_PROBE]), Turn(tool_calls=[RUN_PROBE]), Turn(text="42")]
    out = await _run(turns, probe_repo, asker=asker, approve="ask")
    assert len(asker.questions) == 1
    assert asker.questions[0].tier.sandbox == "local"
    approvals = [
        (a.decision, a.asked, a.answered_by, a.scope) for a in out["events"] if a.type == "approval"
    ]
    assert approvals == [("approved", True, "client", "run"), ("allowed", False, "client", "run")]
    results = [e.output for e in out["events"] if e.type == "tool_result"]
    assert all("probe says 42" in r for r in results)
    assert out["report"].result.outcome == "answered"


async def test_ask_deny_reaches_the_model_as_a_refusal(probe_repo: Path) -> None:
    asker = RecordingAsker(Answer(choice="deny", by="client", reason="not now"))
    out = await _run([Turn(tool_calls=[RUN_PROBE]), Turn(text="ok")], probe_repo, asker=asker)
    (approval,) = [e for e in out["events"] if e.type == "approval"]
    assert (approval.decision, approval.asked, approval.answered_by) == ("denied", True, "client")
    assert "denied by the user: not now" in _tool_messages(out["requests"][1])[0]


async def test_ask_cancelling_the_run_while_asking_is_a_denial(probe_repo: Path) -> None:
    asker = SilentAsker()
    events: list[Event] = []

    async def on_event(event: Event) -> None:
        events.append(event)

    async with ScriptedModelServer([Turn(tool_calls=[RUN_PROBE]), Turn(text="x")]) as server:
        env = load_environment(cwd=probe_repo, environ=environ_for(server, "openai"))
        spec = RunSpec(task="t", workspace=probe_repo, approve="ask", diagnostics=False)
        task = asyncio.create_task(
            execute_run(spec, env=env, on_event=on_event, context=RunContext(asker=asker))
        )
        await asker.asked.wait()
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
    approval = next(e for e in events if e.type == "approval")
    assert (approval.decision, approval.answered_by) == ("denied", "canceled")
    assert events[-1].type == "result" and events[-1].outcome == "canceled"
    assert not any(e.type == "tool_result" and e.ok for e in events)


async def _run(turns: list[Turn], repo: Path, **kw: Any) -> dict[str, Any]:
    events: list[Event] = []

    async def on_event(event: Event) -> None:
        events.append(event)

    asker = kw.pop("asker", None)
    async with ScriptedModelServer(turns) as server:
        env = load_environment(cwd=repo, environ=environ_for(server, "openai"))
        spec = RunSpec(task="t", workspace=repo, diagnostics=False, **{"approve": "ask", **kw})
        report = await execute_run(
            spec, env=env, on_event=on_event, context=RunContext(asker=asker)
        )
        requests = list(server.requests)
    if report.scratch is not None:
        await report.scratch.aclose()
    return {"events": events, "report": report, "requests": requests}


async def test_local_tier_under_policy_refuses_the_probe(probe_repo: Path) -> None:
    out = await run_scripted([Turn(tool_calls=[RUN_PROBE]), Turn(text="x")], probe_repo)
    (approval,) = out.of("approval")
    assert (approval.decision, approval.asked) == ("blocked", False)
    assert "probe says" not in json.dumps(out.server.requests[1])


@pytest.mark.docker
@pytest.mark.parametrize(
    ("approve", "runtime"), [("policy", "runc"), ("ask", "runc"), ("policy", "runsc")]
)
async def test_contained_docker_tier_runs_the_probe_unasked(
    probe_repo: Path, approve: str, runtime: str
) -> None:
    require_docker()
    if runtime == "runsc" and "runsc" not in daemon_runtimes():
        pytest.skip("the docker daemon has no runsc runtime")
    asker = RecordingAsker()  # any question would fail the test (no answer to pop)
    turns = [Turn(tool_calls=[RUN_PROBE]), Turn(text="it printed 42")]
    out = await _run(
        turns,
        probe_repo,
        asker=asker,
        approve=approve,
        sandbox="docker",
        runtime=runtime,
        review=True,
    )
    assert out["report"].result.outcome == "answered", out["report"].result.error
    assert asker.questions == []
    (approval,) = [e for e in out["events"] if e.type == "approval"]
    assert (approval.decision, approval.asked) == ("allowed", False)
    assert approval.tier == f"docker {runtime}, network off, scratch copy"
    assert "probe says 42" in _tool_messages(out["requests"][1])[0]


async def test_ask_timeout_from_the_spec_is_a_denial(probe_repo: Path) -> None:
    asker = SilentAsker()
    turns = [Turn(tool_calls=[RUN_PROBE]), Turn(text="fine")]
    out = await _run(turns, probe_repo, asker=asker, ask_timeout_s=0.05)
    (approval,) = [e for e in out["events"] if e.type == "approval"]
    assert (approval.decision, approval.asked, approval.answered_by) == ("denied", True, "timeout")
    assert out["report"].result.outcome in ("answered", "unverified")
