"""Compaction instead of giving up: the loop summarizes the older turns near the budget."""

from __future__ import annotations

from pathlib import Path

from tests._scripted import FIX_CALC

from driveros.agent import Agent, AgentConfig
from driveros.config import load_environment
from driveros.llm import provider_from_env
from driveros.sandbox import LocalSandbox
from driveros.testing import ScriptedError, ScriptedModelServer, ToolCallSpec, Turn

from .conftest import environ_for, run_scripted

SUMMARY = (
    "## Task\nMake the failing test pass.\n## Files read\nnotes.txt (notes), calc.py\n"
    "## Files touched\nnone yet\n## What was tried\nread the notes\n"
    "## What the build says now\ntest_add fails: add subtracts\n## Next steps\nfix add()"
)


#: The context budget of these runs: room for the tools' schemas and about three notes.
BUDGET = 3600


def _read(n: int) -> Turn:
    return Turn(
        thinking=f"Reading the notes, pass {n}.",
        tool_calls=[ToolCallSpec("read_file", {"path": f"notes{n}.txt"})],
    )


def _notes(repo: Path) -> None:
    for n in (1, 2, 3):
        (repo / f"notes{n}.txt").write_text(str(n) * 2400 + "\n")


def _long_run(summary: Turn) -> list[Turn]:
    return [
        _read(1),
        _read(2),
        _read(3),
        summary,  # answers the summary request made before turn 4
        Turn(thinking="Now fix it.", tool_calls=[FIX_CALC]),
        Turn(tool_calls=[ToolCallSpec("run", {"command": "python -m pytest -q"})]),
        Turn(text="Fixed add(); the test passes."),
    ]


def _blocks(body: dict[str, object]) -> list[dict[str, object]]:
    messages = body["messages"]
    assert isinstance(messages, list)
    return [b for m in messages for b in m["content"] if isinstance(b, dict)]


async def test_a_long_run_compacts_then_finishes_verified(calc_repo: Path) -> None:
    _notes(calc_repo)
    out = await run_scripted(
        _long_run(Turn(text=SUMMARY)),
        calc_repo,
        wire="anthropic",
        config=AgentConfig(context_budget=BUDGET),
    )
    result = out.report.result
    assert (result.outcome, result.verified) == ("answered", True)
    assert (calc_repo / "calc.py").read_text() == "def add(a, b):\n    return a + b\n"
    [compaction] = out.of("compaction")
    assert compaction.method == "summary" and compaction.error is None
    assert compaction.tokens_after < compaction.tokens_before <= compaction.budget == BUDGET
    assert compaction.tokens_before > 0.8 * BUDGET >= compaction.tokens_after

    bodies = out.server.requests
    ask = bodies[3]
    last = ask["messages"][-1]["content"][-1]
    assert last["type"] == "text" and "summarize" in last["text"].lower()
    for heading in ("Task", "Files read", "Files touched", "What was tried", "What the build"):
        assert f"## {heading}" in last["text"]
    assert ask["tool_choice"] == {"type": "none"}

    after = bodies[4]
    sent = _blocks(after)
    texts = [b["text"] for b in sent if b.get("type") == "text"]
    assert any(SUMMARY in t for t in texts)
    assert "fix the failing test" in texts[0]  # the task stays verbatim
    # The oldest turn is gone; the two most recent stay whole: each signed thinking block
    # is followed by its tool call, and every tool call has its result.
    thinking = [b for b in sent if b.get("type") == "thinking"]
    assert [b["thinking"] for b in thinking] == [
        "Reading the notes, pass 2.",
        "Reading the notes, pass 3.",
    ]
    assert all(b["signature"] for b in thinking)
    for message in after["messages"]:
        if message["role"] == "assistant":
            kinds = [b["type"] for b in message["content"]]
            assert kinds == ["thinking", "tool_use"]
    uses = {b["id"] for b in sent if b.get("type") == "tool_use"}
    results = {b["tool_use_id"] for b in sent if b.get("type") == "tool_result"}
    assert uses == results and len(uses) == 2
    # The summary request was paid for: the run's usage counts it (7 requests in all).
    assert result.usage.input_tokens == 7 * 100


async def test_when_the_summary_fails_old_tool_outputs_are_trimmed(calc_repo: Path) -> None:
    _notes(calc_repo)
    failed = Turn(error=ScriptedError(status=400, message="no summaries today"))
    out = await run_scripted(_long_run(failed), calc_repo, wire="openai", max_context_tokens=BUDGET)
    result = out.report.result
    assert (result.outcome, result.verified) == ("answered", True)
    compactions = out.of("compaction")
    assert compactions and compactions[0].method == "trim"
    assert "summary request failed" in (compactions[0].error or "")
    tools = [m for m in out.server.requests[4]["messages"] if m["role"] == "tool"]
    assert tools[0]["content"].startswith("[output trimmed")


async def test_the_budget_follows_the_model_unless_given(calc_repo: Path) -> None:
    async with ScriptedModelServer([Turn(text="ok"), Turn(text="ok")]) as server:
        env = load_environment(
            cwd=calc_repo,
            environ=environ_for(server, "anthropic", ANTHROPIC_MODEL="claude-sonnet-4-5"),
        )
        provider = provider_from_env("anthropic", env)
        async with LocalSandbox(calc_repo) as sandbox:
            followed = Agent(provider, sandbox)
            await followed.run("hi")
            given = Agent(provider, sandbox, config=AgentConfig(context_budget=16_000))
            await given.run("hi")
        await provider.aclose()
    assert followed.context_budget == 200_000 - 8192
    assert given.context_budget == 16_000


async def test_a_small_local_model_keeps_most_of_its_window(calc_repo: Path) -> None:
    async with ScriptedModelServer([Turn(text="ok")]) as server:
        env = load_environment(
            cwd=calc_repo,
            environ=environ_for(
                server, "openai", OLLAMA_HOST=server.openai_base_url, OLLAMA_MODEL="llama3:8b"
            ),
        )
        provider = provider_from_env("ollama", env)
        async with LocalSandbox(calc_repo) as sandbox:
            agent = Agent(provider, sandbox)
            run = await agent.run("hi")
        await provider.aclose()
    assert run.result.usage.cost_unknown  # a local model is never priced, never free
    assert agent.context_budget == 8192 - 8192 // 4
