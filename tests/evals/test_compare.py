"""``driveros eval compare``: only the cases both runs have are compared."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from tests.evals.test_runner import _run

from driveros.evals import EvalRun, compare_runs, render_comparison_text
from driveros.evals._report import DifferentSuitesError


def test_a_case_run_only_once_is_listed_never_a_regression() -> None:
    before = _run("s", {"a": True, "b": True, "gone": True})
    after = _run("s", {"a": True, "b": False, "new": False})
    cmp = compare_runs(before, after)
    assert [r.case_id for r in cmp.regressions] == ["b"]
    assert cmp.only_before == ("gone",) and cmp.only_after == ("new",)
    assert cmp.compared == 2 and cmp.unchanged == 1
    # The rates are over the compared cases: a: pass/pass, b: pass/fail.
    assert cmp.before_rate == 1.0 and cmp.after_rate == 0.5
    text = render_comparison_text(cmp)
    assert "REGRESSION gone" not in text and "REGRESSION new" not in text
    assert "only before  gone" in text and "only after   new" in text


def test_two_different_suites_are_refused_unless_asked() -> None:
    with pytest.raises(DifferentSuitesError, match="--allow-different-suites"):
        compare_runs(_run("smoke", {"a": True}), _run("other", {"a": False}))
    cmp = compare_runs(
        _run("smoke", {"a": True}), _run("other", {"a": False}), allow_different=True
    )
    assert cmp.suite == "smoke -> other" and [r.case_id for r in cmp.regressions] == ["a"]


def _cli(
    tmp_path: Path, before: EvalRun, after: EvalRun, *extra: str
) -> subprocess.CompletedProcess[str]:
    a, b = tmp_path / "before.json", tmp_path / "after.json"
    a.write_text(before.model_dump_json())
    b.write_text(after.model_dump_json())
    driveros = str(Path(sys.executable).with_name("driveros"))
    return subprocess.run(
        [driveros, "eval", "compare", str(a), str(b), *extra],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def test_cli_check_passes_when_the_only_difference_is_cases_run_once(tmp_path: Path) -> None:
    proc = _cli(tmp_path, _run("s", {"a": True, "x": True}), _run("s", {"a": True}), "--check")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "only before  x" in proc.stdout and "REGRESSION" not in proc.stdout


def test_cli_check_exits_2_on_a_real_regression_and_json_lists_one_sided_cases(
    tmp_path: Path,
) -> None:
    before, after = _run("s", {"a": True, "x": True}), _run("s", {"a": False, "y": True})
    proc = _cli(tmp_path, before, after, "--check", "--format", "json")
    assert proc.returncode == 2, proc.stderr
    data = json.loads(proc.stdout)
    assert [r["case_id"] for r in data["regressions"]] == ["a"]
    assert data["only_before"] == ["x"] and data["only_after"] == ["y"]


def test_cli_refuses_different_suites_with_exit_1_and_the_flag(tmp_path: Path) -> None:
    proc = _cli(tmp_path, _run("smoke", {"a": True}), _run("other", {"a": True}))
    assert proc.returncode == 1 and proc.stdout == ""
    assert "--allow-different-suites" in proc.stderr and "Traceback" not in proc.stderr
    proc = _cli(
        tmp_path, _run("smoke", {"a": True}), _run("other", {"a": True}), "--allow-different-suites"
    )
    assert proc.returncode == 0, proc.stderr
