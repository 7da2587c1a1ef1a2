"""What a run costs, what the cache saved, and what stops an expensive run (issue 21)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from tests._scripted import FIX_CALC

from driveros.testing import ToolCallSpec, Turn, TurnUsage

from .conftest import run_scripted

CACHED_TURNS = [
    Turn(
        tool_calls=[ToolCallSpec("read_file", {"path": "calc.py"})],
        usage=TurnUsage(input_tokens=10_000, output_tokens=100, cache_write_tokens=9_000),
    ),
    Turn(
        tool_calls=[FIX_CALC],
        usage=TurnUsage(input_tokens=10_500, output_tokens=100, cache_read_tokens=9_000),
    ),
    Turn(
        tool_calls=[ToolCallSpec("run", {"command": "python -m pytest -q"})],
        usage=TurnUsage(input_tokens=11_000, output_tokens=100, cache_read_tokens=10_000),
    ),
    Turn(
        text="Fixed.",
        usage=TurnUsage(input_tokens=11_500, output_tokens=50, cache_read_tokens=10_500),
    ),
]


def _sonnet(read: int, write: int, total_in: int, out: int) -> float:
    return (total_in - read - write) * 3e-6 + read * 0.3e-6 + write * 3.75e-6 + out * 15e-6


@pytest.mark.parametrize("wire", ["anthropic", "openrouter"])
async def test_a_known_model_prices_every_turn_and_the_run(calc_repo: Path, wire: str) -> None:
    model = "claude-sonnet-4-5" if wire == "anthropic" else "anthropic/claude-sonnet-4.5"
    var = "ANTHROPIC_MODEL" if wire == "anthropic" else "OPENROUTER_MODEL"
    out = await run_scripted(CACHED_TURNS, calc_repo, wire=wire, environ={var: model})  # type: ignore[arg-type]
    result = out.report.result
    assert result.outcome == "answered"
    turns = out.of("turn_finished")
    assert len(turns) == 4
    for event in turns:
        assert event.usage.cost_usd is not None and event.usage.cost_usd > 0
        assert not event.usage.cost_unknown
    assert result.usage.cost_usd == pytest.approx(sum(e.usage.cost_usd for e in turns))
    assert result.usage.cache_read_tokens == 29_500
    if wire == "anthropic":
        assert turns[0].usage.cache_write_tokens == 9_000
        expected = (
            _sonnet(0, 9_000, 10_000, 100)
            + _sonnet(9_000, 0, 10_500, 100)
            + _sonnet(10_000, 0, 11_000, 100)
            + _sonnet(10_500, 0, 11_500, 50)
        )
        assert result.usage.cost_usd == pytest.approx(expected)
    assert result.usage.uncached_input_tokens < result.usage.input_tokens


@pytest.mark.parametrize("wire", ["openai", "anthropic"])
async def test_an_unknown_model_costs_unknown(calc_repo: Path, wire: str) -> None:
    out = await run_scripted(CACHED_TURNS, calc_repo, wire=wire)  # type: ignore[arg-type]
    result = out.report.result
    assert result.usage.cost_usd is None and result.usage.cost_unknown
    assert all(e.usage.cost_unknown for e in out.of("turn_finished"))
    # OpenAI's automatic caching is reported through cache_read_tokens.
    assert result.usage.cache_read_tokens == 29_500


def test_the_summary_line_says_the_cost_or_unknown() -> None:
    from driveros.agent import Result
    from driveros.cli._output import summary_line
    from driveros.llm import Usage

    def line(usage: Usage) -> str:
        return summary_line(Result(run_id="r", outcome="answered", exit_code=0, usage=usage))

    priced = Usage(input_tokens=1000, output_tokens=10, cache_read_tokens=800, cost_usd=0.0123)
    assert " cached=800 cost=$0.0123 " in line(priced)
    assert " cost=unknown " in line(Usage(input_tokens=5, cost_unknown=True))


def _breakpoints(value: object) -> int:
    if isinstance(value, dict):
        return int("cache_control" in value) + sum(_breakpoints(v) for v in value.values())
    if isinstance(value, list):
        return sum(_breakpoints(v) for v in value)
    return 0


def _last_block(body: dict[str, object]) -> dict[str, object]:
    messages = body["messages"]
    assert isinstance(messages, list)
    content = messages[-1]["content"]
    assert isinstance(content, list), content
    block = content[-1]
    assert isinstance(block, dict)
    return block


@pytest.mark.parametrize("wire", ["anthropic", "openrouter"])
async def test_every_turn_marks_the_prefix_and_the_conversation_end_for_caching(
    calc_repo: Path, wire: str
) -> None:
    out = await run_scripted(CACHED_TURNS, calc_repo, wire=wire)  # type: ignore[arg-type]
    bodies = out.server.requests
    assert len(bodies) == 4
    for body in bodies:
        assert 2 <= _breakpoints(body) <= 4
        if wire == "anthropic":
            assert body["tools"][-1]["cache_control"] == {"type": "ephemeral"}
            assert body["system"][-1]["cache_control"] == {"type": "ephemeral"}
        else:
            system = body["messages"][0]
            assert system["role"] == "system"
            assert system["content"][-1]["cache_control"] == {"type": "ephemeral"}
    for body in bodies[1:]:
        # Turn 2+: the end of the conversation so far (the last tool result) is a breakpoint.
        last = _last_block(body)
        assert last["cache_control"] == {"type": "ephemeral"}
        if wire == "anthropic":
            assert last["type"] == "tool_result"
        else:
            assert body["messages"][-1]["role"] == "tool"
    result = out.report.result
    assert result.usage.cache_read_tokens == 29_500
    written = 9_000 if wire == "anthropic" else 0  # the scripted OpenAI wire reports no writes
    assert result.usage.uncached_input_tokens == 43_000 - 29_500 - written
    finished = out.of("turn_finished")
    assert [e.usage.cache_read_tokens for e in finished] == [0, 9_000, 10_000, 10_500]
    dumped = result.model_dump(mode="json")["usage"]
    assert dumped["uncached_input_tokens"] == result.usage.uncached_input_tokens


async def test_the_openai_wire_sends_no_breakpoints(calc_repo: Path) -> None:
    out = await run_scripted(CACHED_TURNS, calc_repo, wire="openai")
    assert all(_breakpoints(body) == 0 for body in out.server.requests)


async def test_caching_can_be_turned_off(calc_repo: Path) -> None:
    from driveros.agent import AgentConfig

    out = await run_scripted(
        CACHED_TURNS, calc_repo, wire="anthropic", config=AgentConfig(prompt_cache=False)
    )
    assert all(_breakpoints(body) == 0 for body in out.server.requests)


async def test_a_cost_cap_ends_the_run_before_the_turn_that_would_pass_it(calc_repo: Path) -> None:
    out = await run_scripted(
        CACHED_TURNS,
        calc_repo,
        wire="anthropic",
        environ={"ANTHROPIC_MODEL": "claude-sonnet-4-5"},
        max_cost_usd=0.05,
    )
    result = out.report.result
    first = _sonnet(0, 9_000, 10_000, 100)  # about $0.038: a second such turn passes $0.05
    assert (result.outcome, result.exit_code, result.turns) == ("resource_cap", 3, 1)
    assert out.server.turns_served == 1
    assert result.usage.cost_usd == pytest.approx(first)
    assert result.error is not None
    spent = f"spent ${result.usage.cost_usd:.4f}"
    assert "cost limit of $0.0500" in result.error and spent in result.error


async def test_a_cost_cap_lets_a_run_that_fits_finish(calc_repo: Path) -> None:
    out = await run_scripted(
        CACHED_TURNS,
        calc_repo,
        wire="anthropic",
        environ={"ANTHROPIC_MODEL": "claude-sonnet-4-5"},
        max_cost_usd=1.0,
    )
    assert out.report.result.outcome == "answered"


async def test_caching_bills_at_most_a_third_of_the_input_of_a_30_turn_run(tmp_path: Path) -> None:
    from bench.bench_agent import CACHE_TURNS, caching_ratio

    for i in range(CACHE_TURNS):
        (tmp_path / f"f{i:03d}.txt").write_text(f"file {i}\n" * 20)
    cached, plain = await caching_ratio(tmp_path)
    assert cached / plain <= 0.3


def test_the_simulated_cache_reads_only_a_prefix_it_wrote() -> None:
    from bench.bench_agent import billed_input

    def body(*texts: str, mark: bool = True) -> dict[str, object]:
        blocks: list[dict[str, object]] = [{"type": "text", "text": t} for t in texts]
        if mark:
            blocks[-1]["cache_control"] = {"type": "ephemeral"}
        return {"messages": [{"role": "user", "content": blocks}]}

    a, b = "a" * 400, "b" * 400
    t = len(json.dumps({"text": a, "type": "text"})) // 4 + 1  # tokens of one block
    billed, total = billed_input([body(a), body(a, b)])
    assert total == 3 * t
    assert billed == pytest.approx(1.25 * t + 0.1 * t + 1.25 * t)
    changed, _ = billed_input([body(a), body(b, a)])  # another prefix: nothing to read
    assert changed == pytest.approx(1.25 * t + 1.25 * 2 * t)
    unmarked, total = billed_input([body(a, mark=False), body(a, b, mark=False)])
    assert unmarked == total == 3 * t
