"""The agent loop end to end: scripted model over the real wire formats, real LocalSandbox."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from tests._scripted import FIX_CALC, leaking_turns

from driveros.agent import Agent, AgentConfig, Event
from driveros.config import load_environment
from driveros.llm import provider_from_env
from driveros.runs import RunSpec, execute_run
from driveros.sandbox import LocalSandbox
from driveros.testing import ScriptedError, ScriptedModelServer, ToolCallSpec, Turn

from .conftest import SECRET, environ_for, run_scripted

FIX_TURNS = [
    Turn(
        thinking="The test fails; read the code first.",
        tool_calls=[ToolCallSpec("read_file", {"path": "calc.py"})],
    ),
    Turn(
        text="The operator is wrong.",
        tool_calls=[FIX_CALC],
    ),
    Turn(tool_calls=[ToolCallSpec("run", {"command": "python -m pytest -q"})]),
    Turn(text="Fixed add(): it subtracted instead of adding; the test passes."),
]


@pytest.mark.parametrize("wire", ["openai", "anthropic"])
async def test_agent_fixes_the_failing_test(calc_repo: Path, wire: str) -> None:
    out = await run_scripted(FIX_TURNS, calc_repo, wire=wire)  # type: ignore[arg-type]
    assert (calc_repo / "calc.py").read_text() == "def add(a, b):\n    return a + b\n"
    result = out.report.result
    assert result.model_dump(include={"outcome", "exit_code", "verified", "turns"}) == {
        "outcome": "answered",
        "exit_code": 0,
        "verified": True,
        "turns": 4,
    }
    assert result.answer.startswith("Fixed add()")
    assert result.usage.input_tokens == 400 and result.usage.output_tokens == 80
    assert out.types[0] == "run_started" and out.types[-1] == "result"
    assert [e.seq for e in out.events] == list(range(1, len(out.events) + 1))
    run_result = next(e for e in out.of("tool_result") if e.name == "run")
    assert run_result.ok and "1 passed" in run_result.output
    assert [e.path for e in out.of("edit")] == ["calc.py"]
    assert len(out.of("turn_finished")) == 4
    assert "".join(e.text for e in out.of("thinking")) == "The test fails; read the code first."


async def test_agent_replays_thinking_with_its_signature(calc_repo: Path) -> None:
    out = await run_scripted(FIX_TURNS, calc_repo, wire="anthropic")
    second = out.server.requests[1]["messages"]
    assistant = next(m for m in second if m["role"] == "assistant")
    thinking = assistant["content"][0]
    assert thinking["type"] == "thinking"
    assert thinking["thinking"] == "The test fails; read the code first."
    assert thinking["signature"]


async def test_agent_replays_openrouter_reasoning_details(calc_repo: Path) -> None:
    out = await run_scripted(FIX_TURNS, calc_repo, wire="openrouter")
    assert out.report.result.outcome == "answered"
    second = out.server.requests[1]["messages"]
    assistant = next(m for m in second if m["role"] == "assistant")
    assert assistant["reasoning_details"][0]["text"] == "The test fails; read the code first."


async def test_agent_answer_without_tools_is_unverified(calc_repo: Path) -> None:
    out = await run_scripted([Turn(text="It is probably fine.")], calc_repo)
    assert out.report.result.outcome == "unverified"
    assert out.report.result.exit_code == 2
    assert out.report.result.verified is False


async def test_agent_edit_without_observation_is_unverified(calc_repo: Path) -> None:
    edit = ToolCallSpec("write_file", {"path": "notes.txt", "content": "hello\n"})
    out = await run_scripted([Turn(tool_calls=[edit]), Turn(text="done")], calc_repo)
    assert (calc_repo / "notes.txt").read_text() == "hello\n"
    assert out.of("edit")[0].action == "create"
    assert out.report.result.outcome == "unverified"


async def test_agent_turns_bad_calls_into_readable_errors(calc_repo: Path) -> None:
    turns = [
        Turn(
            tool_calls=[
                ToolCallSpec("read_file", '{"path": "calc.py"'),  # truncated JSON
                ToolCallSpec("read_file", {"offset": 3}),  # missing path
                ToolCallSpec("no_such_tool", {}),
                ToolCallSpec("read_file", {"path": "../../etc/passwd"}),
                ToolCallSpec("read_file", {"path": "missing.py"}),
            ]
        ),
        Turn(text="I could not read anything useful."),
    ]
    out = await run_scripted(turns, calc_repo)
    results = out.of("tool_result")
    assert [r.ok for r in results] == [False] * 5
    outputs = [r.output for r in results]
    assert "not a JSON object" in outputs[0]
    assert "invalid arguments for read_file: path" in outputs[1]
    assert "unknown tool 'no_such_tool'" in outputs[2]
    assert outputs[3].startswith("refused by the sandbox")
    assert outputs[4].startswith("error:")
    sent = out.server.requests[1]["messages"]
    tool_messages = [m["content"] for m in sent if m["role"] == "tool"]
    assert tool_messages == outputs
    # only the missing file was a real observation of the workspace
    assert [r.observed for r in results] == [False, False, False, False, True]
    assert out.report.result.outcome == "answered"


async def test_agent_read_file_slices_lines(calc_repo: Path) -> None:
    call = ToolCallSpec("read_file", {"path": "test_calc.py", "offset": 4, "limit": 2})
    out = await run_scripted([Turn(tool_calls=[call]), Turn(text="ok")], calc_repo)
    assert out.of("tool_result")[0].output == (
        "[lines 4-5 of 5]\ndef test_add():\n    assert add(2, 3) == 5\n"
    )


async def test_agent_search_and_list_files(calc_repo: Path) -> None:
    calls = [ToolCallSpec("search", {"pattern": "def add"}), ToolCallSpec("list_files", {})]
    out = await run_scripted([Turn(tool_calls=calls), Turn(text="ok")], calc_repo)
    search, listing = out.of("tool_result")
    assert search.output == "calc.py:1: def add(a, b):"
    assert listing.output.splitlines() == ["calc.py", "test_calc.py"]


async def test_agent_diagnostics_tool_without_feed_says_so(calc_repo: Path) -> None:
    turns = [Turn(tool_calls=[ToolCallSpec("diagnostics", {})]), Turn(text="ok")]
    out = await run_scripted(turns, calc_repo)
    result = out.of("tool_result")[0]
    assert not result.ok and "no diagnostics feed is configured" in result.output


async def test_agent_policy_blocks_are_refusals_then_refused(calc_repo: Path) -> None:
    rm = ToolCallSpec("run", {"command": "rm -rf test_calc.py"})
    out = await run_scripted([Turn(tool_calls=[rm])] * 3, calc_repo)
    assert (calc_repo / "test_calc.py").exists()
    result = out.report.result
    assert (result.outcome, result.exit_code) == ("refused", 6)
    assert [a.decision for a in out.of("approval")] == ["blocked"] * 3
    assert not out.of("stuck")
    sent = out.server.requests[1]["messages"][-1]
    assert sent["role"] == "tool" and sent["content"].startswith("refused by the approval policy")


async def test_agent_never_mode_allows_only_reads(calc_repo: Path) -> None:
    turns = [
        Turn(
            tool_calls=[
                ToolCallSpec("read_file", {"path": "calc.py"}),
                ToolCallSpec("write_file", {"path": "calc.py", "content": "x = 1\n"}),
            ]
        ),
        Turn(text="I was not allowed to edit."),
    ]
    out = await run_scripted(turns, calc_repo, approve="never")
    assert (calc_repo / "calc.py").read_text() == "def add(a, b):\n    return a - b\n"
    assert [a.name for a in out.of("approval")] == ["write_file"]
    assert out.report.result.outcome == "answered"


async def test_agent_iteration_cap_is_a_resource_cap(calc_repo: Path) -> None:
    turns = [Turn(tool_calls=[ToolCallSpec("read_file", {"path": f"f{i}.py"})]) for i in range(5)]
    out = await run_scripted(turns, calc_repo, max_iterations=2)
    result = out.report.result
    assert (result.outcome, result.exit_code, result.turns) == ("resource_cap", 3, 2)
    assert "iteration limit of 2" in (result.error or "")


async def test_agent_wall_clock_cap_is_a_resource_cap(calc_repo: Path) -> None:
    out = await run_scripted([Turn(text="late", delay_s=30)], calc_repo, max_wall_s=0.3)
    assert out.report.result.outcome == "resource_cap"
    assert "wall-clock limit" in (out.report.result.error or "")


async def test_agent_provider_error_ends_with_exit_5(calc_repo: Path) -> None:
    turns = [Turn(error=ScriptedError(400, message="context_length_exceeded: too long"))]
    out = await run_scripted(turns, calc_repo)
    result = out.report.result
    assert (result.outcome, result.exit_code) == ("provider_error", 5)
    assert "too long" in (result.error or "")


async def test_agent_missing_key_is_a_setup_error_naming_the_variable(calc_repo: Path) -> None:
    events: list[Event] = []

    async def on_event(event: Event) -> None:
        events.append(event)

    env = load_environment(cwd=calc_repo, environ={"PATH": "/usr/bin"})
    spec = RunSpec(task="t", workspace=calc_repo, provider="openai")
    report = await execute_run(spec, env=env, on_event=on_event)
    assert (report.result.outcome, report.result.exit_code) == ("setup_error", 1)
    assert "OPENAI_API_KEY" in (report.result.error or "")
    assert [e.type for e in events] == ["run_started", "result"]


async def test_agent_cancel_emits_canceled_result_and_reraises(calc_repo: Path) -> None:
    events: list[Event] = []

    async def on_event(event: Event) -> None:
        events.append(event)

    async with ScriptedModelServer([Turn(text="never", delay_s=60)]) as server:
        env = load_environment(cwd=calc_repo, environ=environ_for(server, "openai"))
        spec = RunSpec(task="t", workspace=calc_repo, diagnostics=False)
        task = asyncio.create_task(execute_run(spec, env=env, on_event=on_event))
        while not server.received:
            await asyncio.sleep(0.01)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
    assert events[-1].type == "result"
    assert (events[-1].outcome, events[-1].exit_code, events[-1].turns) == ("canceled", 7, 1)


async def test_agent_cancel_stops_a_running_tool(calc_repo: Path) -> None:
    (calc_repo / "test_slow.py").write_text(
        "import os, time\n\n\ndef test_slow():\n"
        "    open('pid.txt', 'w').write(str(os.getpid()))\n    time.sleep(60)\n"
    )
    events: list[Event] = []

    async def on_event(event: Event) -> None:
        events.append(event)

    run = ToolCallSpec("run", {"command": "python -m pytest -q test_slow.py"})
    async with ScriptedModelServer([Turn(tool_calls=[run])]) as server:
        env = load_environment(cwd=calc_repo, environ=environ_for(server, "openai"))
        spec = RunSpec(task="t", workspace=calc_repo, diagnostics=False)
        task = asyncio.create_task(execute_run(spec, env=env, on_event=on_event))
        pid_file = calc_repo / "pid.txt"
        while not (pid_file.exists() and pid_file.read_text()):
            await asyncio.sleep(0.05)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    def gone() -> bool:
        # pid.txt holds the pid in the sandbox's PID namespace: find the test by its argv.
        for proc in Path("/proc").iterdir():
            try:
                argv = (proc / "cmdline").read_bytes()
                status = (proc / "status").read_text()
            except OSError:
                continue
            if b"test_slow.py" in argv and "zombie" not in status:
                return False
        return True

    # SIGKILL was sent to the whole group; on a loaded machine the kernel may take a moment
    # to finish the process, so wait (bounded) for it rather than sampling once.
    for _ in range(200):
        if gone():
            break
        await asyncio.sleep(0.05)
    assert gone()
    assert events[-1].type == "result" and events[-1].outcome == "canceled"


async def test_agent_secrets_never_leave_the_agent(calc_repo: Path) -> None:
    out = await run_scripted(leaking_turns(calc_repo, SECRET), calc_repo)
    dumped = "\n".join(e.model_dump_json() for e in out.events)
    assert SECRET not in dumped
    assert "[REDACTED]" in out.report.result.answer
    tool_outputs = [m for m in out.server.requests[1]["messages"] if m["role"] == "tool"]
    assert tool_outputs and all(SECRET not in m["content"] for m in tool_outputs)
    history = json.dumps([m.model_dump(mode="json") for m in out.report.history])
    assert f"token={SECRET}" not in history


async def test_agent_context_budget_trims_old_tool_outputs_without_compaction(
    calc_repo: Path,
) -> None:
    (calc_repo / "big.txt").write_text("x" * 3000 + "\n")
    reads = [Turn(tool_calls=[ToolCallSpec("read_file", {"path": "big.txt"})]) for _ in range(2)]
    turns = [*reads, Turn(tool_calls=[ToolCallSpec("list_files", {})]), Turn(text="done")]
    async with ScriptedModelServer(turns) as server:
        env = load_environment(cwd=calc_repo, environ=environ_for(server, "openai"))
        provider = provider_from_env("openai", env)
        async with LocalSandbox(calc_repo) as sandbox:
            config = AgentConfig(context_budget=2600, compaction=False)
            agent = Agent(provider, sandbox, config=config)
            run = await agent.run("read big.txt twice")
        await provider.aclose()
        last = server.requests[-1]["messages"]
    assert run.result.outcome == "answered"
    contents = [m["content"] for m in last if m["role"] == "tool"]
    assert contents[0].startswith("[output trimmed")
    assert contents[1].startswith("x" * 100)


async def test_agent_context_budget_exhausted_is_a_resource_cap(calc_repo: Path) -> None:
    (calc_repo / "big.txt").write_text("y" * 20_000)
    turns = [Turn(tool_calls=[ToolCallSpec("read_file", {"path": "big.txt"})]), Turn(text="x")]
    async with ScriptedModelServer(turns) as server:
        env = load_environment(cwd=calc_repo, environ=environ_for(server, "openai"))
        provider = provider_from_env("openai", env)
        async with LocalSandbox(calc_repo) as sandbox:
            config = AgentConfig(context_budget=1000, output_limit=15_000)
            run = await Agent(provider, sandbox, config=config).run("read")
        await provider.aclose()
    assert (run.result.outcome, run.result.exit_code) == ("resource_cap", 3)
    assert "context budget" in (run.result.error or "")


async def test_agent_history_resumes_with_feedback(calc_repo: Path) -> None:
    first = await run_scripted([Turn(text="first answer")], calc_repo)
    second = await run_scripted(
        [Turn(text="second answer")],
        calc_repo,
        history=first.report.history,
        task="please also explain",
    )
    sent = second.server.requests[0]["messages"]
    assert [m["role"] for m in sent] == ["system", "user", "assistant", "user"]
    assert sent[2]["content"] == "first answer"
    assert second.report.history[-1].text() == "second answer"


def test_agent_tool_names_are_stable() -> None:
    from driveros.agent import TOOL_NAMES, tool_specs

    assert TOOL_NAMES == (
        "run",
        "read_file",
        "write_file",
        "edit_file",
        "search",
        "list_files",
        "diagnostics",
        "definition",
        "references",
        "hover",
        "symbols",
        "rename",
    )
    schemas = {s.name: s.parameters for s in tool_specs()}
    assert schemas["rename"]["required"] == ["new_name"]
    assert schemas["run"]["required"] == ["command"]
    assert schemas["edit_file"]["required"] == ["path", "old_string", "new_string"]
    # one optional argument: a linter the project does not use, run once on request
    assert set(schemas["diagnostics"]["properties"]) == {"tool"}
    assert not schemas["diagnostics"].get("required")


def test_tool_specs_give_each_caller_its_own_schemas() -> None:
    # The schemas are generated once per process: a caller editing what it got (adding a
    # property, as a provider adapter might) changes nothing for the next caller.
    from driveros.agent import tool_specs

    first = tool_specs()
    first[0].parameters["properties"]["planted"] = {"type": "string"}
    first[0].parameters["required"].append("planted")
    again = {s.name: s.parameters for s in tool_specs()}
    assert "planted" not in again[first[0].name]["properties"]
    assert again["run"]["required"] == ["command"]
    assert "title" not in again["run"] and "title" not in again["run"]["properties"]["command"]


async def test_agent_model_refusal_ends_refused(calc_repo: Path) -> None:
    turns = [Turn(text="I can't help with that.", stop_reason="refusal")]
    out = await run_scripted(turns, calc_repo, wire="anthropic")
    result = out.report.result
    assert (result.outcome, result.exit_code) == ("refused", 6)
    assert result.answer == "I can't help with that."
