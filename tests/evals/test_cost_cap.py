"""`driveros eval run --max-cost`: a per-suite cost cap (issue 21)."""

from __future__ import annotations

from pathlib import Path

from driveros.config import load_environment
from driveros.evals import EvalOptions, LocalExecutor, load_suite, run_suite
from driveros.testing import ScriptedModelServer, ToolCallSpec, Turn, TurnUsage

BIG = TurnUsage(input_tokens=10_000, output_tokens=100)  # $0.0315 at claude-sonnet-4-5


async def test_the_suite_cost_cap_stops_starting_cases_once_spent(tmp_path: Path) -> None:
    (tmp_path / "ws").mkdir()
    (tmp_path / "ws" / "notes.txt").write_text("the answer is 42\n")
    cases = "".join(
        f"  - {{id: c{i}, task: t, workspace: ws, scorers: [{{type: answer, regex: '42'}}]}}\n"
        for i in range(3)
    )
    (tmp_path / "suite.yaml").write_text("name: tiny\ncases:\n" + cases)
    suite = load_suite(str(tmp_path / "suite.yaml"))
    turns = [
        Turn(tool_calls=[ToolCallSpec("read_file", {"path": "notes.txt"})], usage=BIG),
        Turn(text="It is 42.", usage=BIG),
    ] * 3
    async with ScriptedModelServer(turns) as server:
        env = load_environment(
            environ={"ANTHROPIC_API_KEY": "k", "ANTHROPIC_BASE_URL": server.anthropic_base_url}
        )
        run = await run_suite(
            suite,
            EvalOptions(
                mode="live",
                provider="anthropic",
                model="claude-sonnet-4-5",
                output_dir=tmp_path / "o",
                max_cost_usd=0.09,
            ),
            env=env,
            executor=LocalExecutor(1),
        )
    by_id = {c.case_id: c for c in run.cases}
    # c0 spends $0.063; c1 gets the $0.027 left and stops before its second turn (its first
    # turn cannot be estimated: $0.0945 spent in all); c2 never starts.
    assert by_id["c0"].passed and by_id["c0"].usage.cost_usd is not None
    assert by_id["c1"].outcome == "resource_cap" and by_id["c1"].turns == 1
    assert by_id["c2"].outcome == "resource_cap" and by_id["c2"].turns == 0
    assert "cost limit" in by_id["c2"].answer
    assert server.turns_served == 3
    assert run.summary.cost_usd is not None
    assert abs(run.summary.cost_usd - 0.0945) < 1e-9


def test_the_report_cost_cell_says_the_cost_or_unknown() -> None:
    from driveros.evals import CaseResult, EvalRun, render_html
    from driveros.llm import Usage

    def case(case_id: str, usage: Usage) -> CaseResult:
        return CaseResult(suite="s", case_id=case_id, outcome="answered", passed=True, usage=usage)

    priced = EvalRun(
        suite="s",
        mode="live",
        cases=(case("a", Usage(cost_usd=0.25)), case("b", Usage(cost_usd=0.5))),
    )
    unknown = EvalRun(
        suite="s",
        mode="live",
        cases=(case("a", Usage(cost_usd=0.25)), case("b", Usage(cost_unknown=True))),
    )
    assert priced.summary.cost_usd == 0.75
    assert unknown.summary.cost_usd is None
    assert "<td class=num>$0.7500</td>" in render_html([priced])
    assert "<td class=num>unknown</td>" in render_html([unknown])


def test_cli_eval_run_takes_max_cost_and_says_the_suite_cost(tmp_path: Path) -> None:
    import subprocess
    import sys

    driveros = str(Path(sys.executable).with_name("driveros"))
    run = [driveros, "eval", "run", "smoke", "--replay", "--out", str(tmp_path / "o")]
    proc = subprocess.run(
        [*run, "--max-cost", "0.5"], capture_output=True, text=True, timeout=120, cwd=tmp_path
    )
    assert proc.returncode == 0, proc.stderr
    assert "tokens, cost unknown)" in proc.stdout  # the recorded model is not in the table
    bad = subprocess.run(
        [*run, "--max-cost", "nan"], capture_output=True, text=True, timeout=60, cwd=tmp_path
    )
    assert bad.returncode == 1 and "--max-cost" in bad.stderr and "Traceback" not in bad.stderr
