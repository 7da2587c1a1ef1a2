"""bench/RESULTS.md is generated: it equals what ``bench/_results.py`` renders from
``bench/results.json``, and every row there belongs to a benchmark that reports it."""

from __future__ import annotations

import ast
import json
from pathlib import Path

from bench import _results
from tests.conftest import REPO_ROOT

BENCH = REPO_ROOT / "bench"


def test_the_table_is_the_rendered_data() -> None:
    assert _results.TABLE.read_text(encoding="utf-8") == _results.render(_results.load()), (
        "bench/RESULTS.md is generated: run the benchmark (make bench ARGS=NAME), never edit it"
    )


def _reported_keys() -> dict[str, str]:
    """The keys each ``bench_*.py`` passes to ``report`` (string literals), by module."""
    found: dict[str, str] = {}
    for path in sorted(BENCH.glob("bench_*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Name)
                and node.func.id == "report"
                and node.args
                and isinstance(node.args[0], ast.Constant)
                and isinstance(node.args[0].value, str)
            ):
                found[node.args[0].value] = path.name
    return found


def test_every_row_comes_from_a_benchmark_that_reports_it() -> None:
    reported = _reported_keys()
    stale = sorted(set(_results.load()) - set(reported))
    assert stale == [], f"rows no benchmark reports any more: {stale}"


def test_report_replaces_only_its_own_rows(tmp_path: Path) -> None:
    data, table = tmp_path / "results.json", tmp_path / "RESULTS.md"
    first = _results.Row(benchmark="a | b", measured="1 ms", baseline="2 ms", ratio="0.50")
    other = _results.Row(benchmark="other", measured="3 ms", baseline="3 ms", ratio="1.00")
    _results.report("one", [first], data=data, table=table)
    _results.report("two", [other], data=data, table=table)
    again = first.model_copy(update={"measured": "5 ms"})
    _results.report("one", [again, again], data=data, table=table)

    stored = json.loads(data.read_text())
    assert list(stored) == ["one", "two"]  # the order of first report stays
    assert [r["measured"] for r in stored["one"]] == ["5 ms", "5 ms"]
    assert stored["two"][0]["benchmark"] == "other"
    rows = [line for line in table.read_text().splitlines() if line.startswith("| a")]
    assert rows and all("a \\| b | 5 ms | 2 ms | 0.50 | none |" in line for line in rows)
    assert len(rows) == 2


def test_goal_met_says_the_target_and_whether_it_was_met() -> None:
    assert _results.goal_met("<= 0.30x", True) == "<= 0.30x: met"
    assert _results.goal_met("p99 < 20 ms", False) == "p99 < 20 ms: not met"
