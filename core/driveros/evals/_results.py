"""Typed eval results and their summaries."""

from __future__ import annotations

import math
import time
from collections.abc import Iterable
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from driveros.llm import Usage

Mode = Literal["live", "replay", "record"]


class ScoreResult(BaseModel):
    model_config = ConfigDict(frozen=True)

    scorer: str
    #: None: the scorer does not apply (e.g. no human verdict recorded yet).
    passed: bool | None
    detail: str = ""


class CaseResult(BaseModel):
    model_config = ConfigDict(frozen=True)

    suite: str
    case_id: str
    provider: str = ""
    model: str = ""
    outcome: str
    exit_code: int = 1
    answer: str = ""
    verified: bool = False
    passed: bool
    scores: tuple[ScoreResult, ...] = ()
    usage: Usage = Field(default_factory=Usage)
    turns: int = 0
    duration_ms: float = 0.0
    attempts: int = 1
    #: Set when the case failed for infrastructure reasons (after retries), not the model.
    infra_error: str | None = None
    replay_mismatches: tuple[str, ...] = ()
    events_file: str | None = None


class EvalRun(BaseModel):
    model_config = ConfigDict(frozen=True)

    suite: str
    mode: Mode
    provider: str = ""
    model: str = ""
    started: float = Field(default_factory=time.time)
    finished: float | None = None
    cases: tuple[CaseResult, ...] = ()

    @property
    def summary(self) -> RunSummary:
        return summarize(self.cases)


class RunSummary(BaseModel):
    model_config = ConfigDict(frozen=True)

    total: int
    passed: int
    failed: int
    infra_errors: int
    pass_rate: float
    #: 95% Wilson score interval of the pass rate.
    ci_low: float
    ci_high: float
    tokens: int
    cost_usd: float | None
    turns: int
    duration_ms: float


def wilson_interval(passed: int, total: int, z: float = 1.96) -> tuple[float, float]:
    if total == 0:
        return (0.0, 1.0)
    p = passed / total
    denom = 1 + z * z / total
    centre = (p + z * z / (2 * total)) / denom
    half = z * math.sqrt(p * (1 - p) / total + z * z / (4 * total * total)) / denom
    return (max(0.0, centre - half), min(1.0, centre + half))


def summarize(cases: Iterable[CaseResult]) -> RunSummary:
    items = list(cases)
    passed = sum(1 for c in items if c.passed)
    low, high = wilson_interval(passed, len(items))
    spent = sum((c.usage for c in items), Usage())
    return RunSummary(
        total=len(items),
        passed=passed,
        failed=len(items) - passed,
        infra_errors=sum(1 for c in items if c.infra_error),
        pass_rate=(passed / len(items)) if items else 0.0,
        ci_low=low,
        ci_high=high,
        tokens=sum(c.usage.total_tokens for c in items),
        cost_usd=spent.cost_usd,
        turns=sum(c.turns for c in items),
        duration_ms=sum(c.duration_ms for c in items),
    )
