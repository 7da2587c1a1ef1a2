"""The eval harness end to end: replay of the shipped cassettes, record -> replay, retries of
infrastructure failures, resume, concurrency bound, reports and comparisons."""

from __future__ import annotations

import contextlib
import shutil
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from driveros import SandboxError
from driveros.config import load_environment
from driveros.evals import (
    CaseResult,
    EvalOptions,
    EvalRun,
    LocalExecutor,
    compare_runs,
    load_suite,
    render_comparison_text,
    render_html,
    run_suite,
    shipped_suite_names,
)
from driveros.evals._suite import shipped_suites_dir
from driveros.sandbox import LocalSandbox, Sandbox
from driveros.testing import ScriptedModelServer, ToolCallSpec, Turn

NO_KEYS = load_environment(environ={})


@pytest.mark.parametrize("name", ["smoke", "fix-failing-test", "diagnostics-fix"])
async def test_shipped_suites_pass_in_replay_without_mismatches(tmp_path: Path, name: str) -> None:
    suite = load_suite(name)
    run = await run_suite(suite, EvalOptions(mode="replay", output_dir=tmp_path), env=NO_KEYS)
    assert [c.case_id for c in run.cases] == [c.id for c in suite.cases]
    for case in run.cases:
        assert case.passed, (case.case_id, case.outcome, case.scores, case.infra_error)
        assert case.replay_mismatches == ()
        assert case.verified
    assert (tmp_path / "results.json").is_file()
    assert EvalRun.model_validate_json((tmp_path / "results.json").read_text()) == run


async def test_record_then_replay_reproduces_the_outcome(tmp_path: Path) -> None:
    suite_dir = tmp_path / "suite"
    shutil.copytree(
        shipped_suites_dir() / "fix-failing-test",
        suite_dir,
        ignore=shutil.ignore_patterns("cassettes"),
    )
    suite = load_suite(str(suite_dir))
    recorded = await run_suite(
        suite,
        EvalOptions(mode="record", scripted=True, output_dir=tmp_path / "rec"),
        env=NO_KEYS,
    )
    assert all(suite.cassette_path(c).is_file() for c in suite.cases)
    replayed = await run_suite(
        suite,
        EvalOptions(mode="replay", strict_replay=True, output_dir=tmp_path / "rep"),
        env=NO_KEYS,
    )
    for a, b in zip(recorded.cases, replayed.cases, strict=True):
        assert (a.case_id, a.outcome, a.answer, a.passed, a.turns) == (
            b.case_id,
            b.outcome,
            b.answer,
            b.passed,
            b.turns,
        )
        assert a.passed


def _tiny_suite(tmp_path: Path, cases: str) -> Path:
    (tmp_path / "ws").mkdir()
    (tmp_path / "ws" / "notes.txt").write_text("the answer is 42\n")
    path = tmp_path / "suite.yaml"
    path.write_text("name: tiny\ncases:\n" + cases)
    return path


async def test_live_mode_scores_answers_and_keeps_model_failures_unretried(
    tmp_path: Path,
) -> None:
    suite = load_suite(
        str(
            _tiny_suite(
                tmp_path,
                (
                    "  - {id: ok, task: t, workspace: ws, scorers: [{type: answer, regex: '42'}]}\n"
                    "  - {id: ko, task: t, workspace: ws, scorers: [{type: answer, regex: '42'}]}\n"
                ),
            )
        )
    )
    turns = [
        Turn(tool_calls=[ToolCallSpec("read_file", {"path": "notes.txt"})]),
        Turn(text="It is 42."),
        Turn(tool_calls=[ToolCallSpec("read_file", {"path": "notes.txt"})]),
        Turn(text="It is 41."),
    ]
    async with ScriptedModelServer(turns) as server:
        env = load_environment(
            environ={"OPENAI_API_KEY": "test-key", "OPENAI_BASE_URL": server.openai_base_url}
        )
        run = await run_suite(
            suite,
            EvalOptions(mode="live", provider="openai", model="m", output_dir=tmp_path / "o"),
            env=env,
            executor=LocalExecutor(1),
        )
    by_id = {c.case_id: c for c in run.cases}
    assert by_id["ok"].passed and by_id["ok"].attempts == 1
    assert not by_id["ko"].passed and by_id["ko"].attempts == 1
    assert by_id["ko"].infra_error is None
    assert run.summary.passed == 1
    events = Path(by_id["ok"].events_file or "").read_text().splitlines()
    assert '"type":"result"' in events[-1]


async def test_infrastructure_failures_are_retried_and_resume_skips_done_cases(
    tmp_path: Path,
) -> None:
    suite = load_suite(
        str(
            _tiny_suite(
                tmp_path,
                (
                    "  - {id: a, task: t, workspace: ws, scorers: [{type: outcome}]}\n"
                    "  - {id: b, task: t, workspace: ws, scorers: [{type: outcome}]}\n"
                ),
            )
        )
    )
    failures = {"left": 1}
    active = {"now": 0, "max": 0}

    @contextlib.asynccontextmanager
    async def flaky(workspace: Path) -> AsyncIterator[Sandbox]:
        if failures["left"]:
            failures["left"] -= 1
            raise SandboxError("docker host went away")
        active["now"] += 1
        active["max"] = max(active["max"], active["now"])
        try:
            async with LocalSandbox(workspace) as sandbox:
                yield sandbox
        finally:
            active["now"] -= 1

    turns = [Turn(tool_calls=[ToolCallSpec("list_files", {})]), Turn(text="done")]
    async with ScriptedModelServer(turns * 4) as server:
        env = load_environment(
            environ={"OPENAI_API_KEY": "k", "OPENAI_BASE_URL": server.openai_base_url}
        )
        options = EvalOptions(
            mode="live", provider="openai", output_dir=tmp_path / "o", only=("a",)
        )
        first = await run_suite(
            suite, options, env=env, sandbox_factory=flaky, executor=LocalExecutor(1)
        )
        assert first.cases[0].passed and first.cases[0].attempts == 2
        served_before = len(server.requests)
        resumed = await run_suite(
            suite,
            options.model_copy(update={"only": ()}),
            env=env,
            sandbox_factory=flaky,
            executor=LocalExecutor(1),
        )
    assert [c.case_id for c in resumed.cases] == ["a", "b"]
    assert len(server.requests) - served_before == 2  # only case b ran again
    assert active["max"] == 1


def _run(suite: str, passed: dict[str, bool]) -> EvalRun:
    return EvalRun(
        suite=suite,
        mode="replay",
        cases=tuple(
            CaseResult(suite=suite, case_id=k, outcome="answered" if v else "stuck", passed=v)
            for k, v in passed.items()
        ),
    )


def test_compare_highlights_regressions_and_states_noise() -> None:
    before = _run("s", {"a": True, "b": True, "c": False})
    after = _run("s", {"a": True, "b": False, "c": True})
    cmp = compare_runs(before, after)
    assert [r.case_id for r in cmp.regressions] == ["b"]
    assert [f.case_id for f in cmp.fixes] == ["c"]
    assert not cmp.significant and cmp.noise_bound > 0
    text = render_comparison_text(cmp)
    assert "REGRESSION b" in text and "within noise" in text


def test_html_report_is_self_contained(tmp_path: Path) -> None:
    html = render_html([_run("smoke", {"a": True, "b": False})])
    assert 'class="chart"' in html and "smoke/a" in html and "smoke/b" in html
    assert "http://" not in html
    assert "https://" not in html and "<script src" not in html


def test_cli_eval_replay_smoke_writes_report(tmp_path: Path) -> None:
    driveros = str(Path(sys.executable).with_name("driveros"))
    proc = subprocess.run(
        [driveros, "eval", "run", "smoke", "--replay", "--out", str(tmp_path / "out")],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=tmp_path,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    assert "3 passed, 0 failed" in proc.stdout
    assert (tmp_path / "out" / "report.html").is_file()
    assert "report:" in proc.stderr
    listed = subprocess.run([driveros, "eval", "list"], capture_output=True, text=True, check=True)
    assert listed.stdout.split() == shipped_suite_names()
    bad = subprocess.run(
        [driveros, "eval", "run", "nope"], capture_output=True, text=True, check=False
    )
    assert bad.returncode == 1 and "no suite 'nope'" in bad.stderr
    assert "Traceback" not in bad.stderr


class _AllAtOnce:
    """An executor whose cases all finish at the same moment (as Ray workers can)."""

    async def run(self, cases, runner, on_done):  # type: ignore[no-untyped-def]
        import asyncio

        results = await asyncio.gather(*(runner.run(c) for c in cases))
        await asyncio.gather(*(on_done(r) for r in results))
        return list(results)


async def test_progress_counts_each_case_once_in_order_when_cases_finish_together(
    tmp_path: Path,
) -> None:
    counts: list[tuple[int, int]] = []

    async def progress(result: CaseResult, done: int, total: int) -> None:
        counts.append((done, total))

    suite = load_suite("smoke")
    await run_suite(
        suite,
        EvalOptions(mode="replay", output_dir=tmp_path),
        env=NO_KEYS,
        executor=_AllAtOnce(),  # type: ignore[arg-type]
        on_case_done=progress,
    )
    total = len(suite.cases)
    assert counts == [(n, total) for n in range(1, total + 1)]  # was [(3, 3), (3, 3), (3, 3)]
    lines = (tmp_path / "results.partial.jsonl").read_text().splitlines()
    assert len(lines) == total
