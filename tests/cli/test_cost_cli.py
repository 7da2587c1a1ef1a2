"""`driveros agent --max-cost`: the SUMMARY says what the run cost; a cap ends it with exit 3."""

from __future__ import annotations

from pathlib import Path

from driveros.testing import ScriptedModelServer, ToolCallSpec, Turn, TurnUsage

from .conftest import run_cli

BIG = TurnUsage(input_tokens=10_000, output_tokens=100, cache_write_tokens=9_000)
TURNS = [
    Turn(tool_calls=[ToolCallSpec("read_file", {"path": "calc.py"})], usage=BIG),
    Turn(tool_calls=[ToolCallSpec("read_file", {"path": "calc.py"})], usage=BIG),
    Turn(text="Done.", usage=BIG),
]


async def test_max_cost_ends_the_run_with_exit_3_and_the_spend(calc_repo: Path) -> None:
    async with ScriptedModelServer(TURNS) as server:
        run = await run_cli(
            "--task",
            "look",
            "--max-cost",
            "0.05",
            server=server,
            cwd=calc_repo,
            wire="anthropic",
            extra_env={"ANTHROPIC_MODEL": "claude-sonnet-4-5"},
        )
    assert run.code == 3, run.stderr
    summary = run.stdout.splitlines()[-1]
    assert summary.startswith("SUMMARY outcome=resource_cap exit=3 ")
    assert " cost=$0.038" in summary
    assert "cost limit of $0.0500 reached: spent $0.038" in run.stderr


async def test_an_unknown_model_says_cost_unknown(calc_repo: Path) -> None:
    async with ScriptedModelServer([Turn(text="Done.")]) as server:
        run = await run_cli("--task", "look", "--format", "json", server=server, cwd=calc_repo)
    usage = run.json()["usage"]
    assert usage["cost_usd"] is None and usage["cost_unknown"] is True


async def test_max_cost_must_be_a_positive_amount(calc_repo: Path) -> None:
    run = await run_cli("--task", "look", "--max-cost", "-1", server=None, cwd=calc_repo)
    assert run.code == 1 and "--max-cost" in run.stderr
