"""Scorers: turn one finished case into a list of scores."""

from __future__ import annotations

import re

from driveros._errors import DriverosError
from driveros.agent import Result
from driveros.council import extract_json_object
from driveros.evals._results import ScoreResult
from driveros.evals._suite import (
    AnswerScorer,
    Case,
    CommandScorer,
    DiagnosticsGoneScorer,
    JudgeScorer,
    OutcomeScorer,
    Scorer,
    VerdictScorer,
)
from driveros.llm import Provider, Request, system, user
from driveros.sandbox import Sandbox

JUDGE_PROMPT = """You grade an AI coding agent's answer against criteria. Reply with one JSON
object and nothing else: {"pass": true|false, "reason": "<one sentence>"}"""


def score_answer(scorer: AnswerScorer, answer: str) -> ScoreResult:
    if scorer.exact is not None:
        ok = answer.strip() == scorer.exact.strip()
        return ScoreResult(scorer="answer.exact", passed=ok, detail=f"expected {scorer.exact!r}")
    if scorer.regex is not None:
        ok = re.search(scorer.regex, answer) is not None
        return ScoreResult(scorer="answer.regex", passed=ok, detail=f"/{scorer.regex}/")
    if scorer.contains is not None:
        ok = scorer.contains.lower() in answer.lower()
        return ScoreResult(scorer="answer.contains", passed=ok, detail=repr(scorer.contains))
    return ScoreResult(scorer="answer", passed=None, detail="no expectation given")


async def score_command(scorer: CommandScorer, sandbox: Sandbox) -> ScoreResult:
    try:
        res = await sandbox.run(scorer.run, timeout=scorer.timeout)
    except DriverosError as exc:
        return ScoreResult(scorer="command", passed=False, detail=f"{scorer.run}: {exc}")
    tail = (res.stdout + res.stderr).strip().splitlines()[-3:]
    detail = f"{scorer.run} -> exit {res.exit_code}" + (f": {' | '.join(tail)}" if tail else "")
    return ScoreResult(scorer="command", passed=res.ok, detail=detail)


async def score_judge(scorer: JudgeScorer, case: Case, answer: str, judge: Provider) -> ScoreResult:
    prompt = f"Task: {case.task}\n\nCriteria: {scorer.criteria}\n\nAnswer:\n{answer}"
    try:
        response = await judge.generate(
            Request(messages=[system(JUDGE_PROMPT), user(prompt)], max_tokens=300)
        )
        data = extract_json_object(response.text())
    except DriverosError as exc:
        return ScoreResult(scorer="judge", passed=None, detail=f"judge failed: {exc}")
    return ScoreResult(
        scorer="judge", passed=bool(data.get("pass")), detail=str(data.get("reason", ""))
    )


async def score_case(
    case: Case,
    result: Result,
    *,
    sandbox: Sandbox,
    judge: Provider | None,
    human_verdict: str | None,
) -> list[ScoreResult]:
    scores: list[ScoreResult] = []
    scorers: tuple[Scorer, ...] = case.scorers
    for scorer in scorers:
        if isinstance(scorer, AnswerScorer):
            scores.append(score_answer(scorer, result.answer))
        elif isinstance(scorer, CommandScorer):
            scores.append(await score_command(scorer, sandbox))
        elif isinstance(scorer, DiagnosticsGoneScorer):
            ok = result.targets_fixed
            detail = "targeted diagnostics gone" if ok else "targeted diagnostics remain"
            if ok is None:
                detail = "the run targeted no diagnostics"
            scores.append(ScoreResult(scorer="diagnostics_gone", passed=ok, detail=detail))
        elif isinstance(scorer, JudgeScorer):
            if judge is None:
                scores.append(ScoreResult(scorer="judge", passed=None, detail="no judge model"))
            else:
                scores.append(await score_judge(scorer, case, result.answer, judge))
        elif isinstance(scorer, VerdictScorer):
            if human_verdict is None:
                scores.append(ScoreResult(scorer="verdict", passed=None, detail="no verdict yet"))
            else:
                scores.append(
                    ScoreResult(
                        scorer="verdict",
                        passed=human_verdict == scorer.expect,
                        detail=f"human said {human_verdict}, expected {scorer.expect}",
                    )
                )
        elif isinstance(scorer, OutcomeScorer):
            scores.append(
                ScoreResult(
                    scorer="outcome",
                    passed=result.outcome == scorer.expect,
                    detail=f"{result.outcome} (expected {scorer.expect})",
                )
            )
    return scores


def case_passed(case: Case, result: Result, scores: list[ScoreResult]) -> bool:
    if any(s.passed is False for s in scores):
        return False
    if not any(isinstance(s, OutcomeScorer) for s in case.scorers):
        return result.outcome == "answered"
    return True
