"""Tools defined once and the Runner loop, against the scripted model over loopback."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from pydantic import BaseModel, Field

from driveros import llm
from driveros.llm import anthropic, openaicompat
from driveros.llm._anthropic_request import map_tool as anthropic_tool
from driveros.llm._openai_request import map_tool as openai_tool
from driveros.testing import ScriptedModelServer, ToolCallSpec, Turn


class ReadArgs(BaseModel):
    """Read a file from the workspace."""

    path: str = Field(description="workspace-relative path")
    limit: int | None = None


async def _read(args: ReadArgs) -> str:
    return f"contents of {args.path}"


READ = llm.Tool("read_file", ReadArgs, _read)


def _call(arguments: dict[str, Any] | None = None, raw: str | None = None) -> llm.ToolCallPart:
    return llm.ToolCallPart(id="c1", name="read_file", arguments=arguments or {}, raw_arguments=raw)


def test_tool_renders_to_both_wire_formats() -> None:
    spec = READ.spec
    assert spec.name == "read_file"
    assert spec.description == "Read a file from the workspace."
    assert spec.parameters["required"] == ["path"]
    assert spec.parameters["properties"]["path"] == {
        "description": "workspace-relative path",
        "type": "string",
    }
    assert "title" not in spec.parameters
    assert openai_tool(spec) == {
        "type": "function",
        "function": {
            "name": "read_file",
            "description": "Read a file from the workspace.",
            "parameters": spec.parameters,
        },
    }
    assert anthropic_tool(spec) == {
        "name": "read_file",
        "description": "Read a file from the workspace.",
        "input_schema": spec.parameters,
    }


async def test_tool_valid_call() -> None:
    result = await READ(_call({"path": "a.py"}))
    assert result == llm.ToolResultPart(
        tool_call_id="c1", name="read_file", content="contents of a.py"
    )


async def test_tool_invalid_arguments_become_error_result() -> None:
    result = await READ(_call({"limit": "many"}))
    assert result.is_error
    assert "invalid arguments for read_file" in result.content
    assert "path: Field required" in result.content
    assert "limit: Input should be a valid integer" in result.content


async def test_tool_unparseable_arguments_become_error_result() -> None:
    result = await READ(_call(raw='{"path": "a.py"'))
    assert result.is_error
    assert "not a JSON object" in result.content and '{"path": "a.py"' in result.content


async def test_tool_handler_errors_become_error_results() -> None:
    @llm.tool(ReadArgs)
    async def refuse(args: ReadArgs) -> str:
        """Always refuses."""
        raise llm.ToolError(f"{args.path} is outside the workspace")

    @llm.tool(ReadArgs, name="crash")
    async def crash(args: ReadArgs) -> str:
        raise RuntimeError("disk on fire")

    assert refuse.name == "refuse" and refuse.description == "Always refuses."
    refused = await refuse(_call({"path": "/etc/passwd"}))
    assert refused.is_error and refused.content == "Error: /etc/passwd is outside the workspace"
    crashed = await crash(_call({"path": "x"}))
    assert crashed.is_error and "RuntimeError: disk on fire" in crashed.content


@pytest.mark.parametrize("wire", ["openai", "anthropic"])
@pytest.mark.parametrize("stream", [False, True])
async def test_runner_loops_until_answer(wire: str, stream: bool) -> None:
    running = 0
    peak = 0

    async def slow_read(args: ReadArgs) -> str:
        nonlocal running, peak
        running += 1
        peak = max(peak, running)
        await asyncio.sleep(0.02)
        running -= 1
        return f"<{args.path}>"

    tool = llm.Tool("read_file", ReadArgs, slow_read)
    turns = [
        Turn(
            tool_calls=[
                ToolCallSpec(name="read_file", arguments={"path": f"f{i}.py"}, id=f"call_{i}")
                for i in range(4)
            ]
            + [ToolCallSpec(name="read_file", arguments={"limit": 3}, id="call_bad")]
            + [ToolCallSpec(name="delete_all", arguments={}, id="call_unknown")]
        ),
        Turn(text="All four files read."),
    ]
    async with ScriptedModelServer(turns) as server:
        if wire == "openai":
            provider: llm.Provider = openaicompat.openai(
                "m", api_key="k", base_url=server.openai_base_url
            )
        else:
            provider = anthropic.claude("m", api_key="k", base_url=server.anthropic_base_url)
        runner = llm.Runner(provider, [tool], max_parallel=2, stream=stream)
        events = [e async for e in runner.events(llm.Request(messages=[llm.user("read")]))]
        await provider.aclose()
        second = server.requests[1]

    final = events[-1]
    assert isinstance(final, llm.RunFinished)
    result = final.result
    assert result.text() == "All four files read."
    assert result.stopped == "done" and result.steps == 2
    assert peak == 2  # bounded parallelism
    finished = [e for e in events if isinstance(e, llm.ToolFinished)]
    assert [e.result.content for e in finished[:4]] == [f"<f{i}.py>" for i in range(4)]
    assert finished[4].result.is_error and "path: Field required" in finished[4].result.content
    assert finished[5].result.is_error and "unknown tool 'delete_all'" in finished[5].result.content
    assert [m.role for m in result.messages] == ["user", "assistant", "tool", "assistant"]
    assert result.usage.input_tokens > 0
    assert any(isinstance(e, llm.ModelDelta) for e in events) is stream
    # The tool results went back to the model.
    sent = str(second)
    assert "<f3.py>" in sent and "unknown tool" in sent
    assert "read_file" in str(server.requests[0])


async def test_runner_step_cap() -> None:
    loop_turn = Turn(tool_calls=[ToolCallSpec(name="read_file", arguments={"path": "a"})])
    async with ScriptedModelServer([loop_turn], repeat_last=True) as server:
        provider = openaicompat.openai("m", api_key="k", base_url=server.openai_base_url)
        result = await llm.Runner(provider, [READ], max_steps=3).run(
            llm.Request(messages=[llm.user("go")])
        )
        await provider.aclose()
    assert result.stopped == "step_cap"
    assert result.steps == 3
    assert len(server.requests) == 3


def test_runner_rejects_bad_configuration() -> None:
    provider = openaicompat.ollama()
    with pytest.raises(llm.ConfigError):
        llm.Runner(provider, [READ, READ])
    with pytest.raises(llm.ConfigError):
        llm.Runner(provider, [READ], max_steps=0)
