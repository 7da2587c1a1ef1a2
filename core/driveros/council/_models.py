"""Typed results of council reviews and consultations."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from driveros._errors import DriverosError

Severity = Literal["blocker", "major", "minor", "nit"]
VerdictName = Literal["approve", "revise", "reject"]


class CouncilError(DriverosError):
    """The council could not reach a verdict for infrastructure reasons (never a verdict)."""


class CouncilIssue(BaseModel):
    model_config = ConfigDict(frozen=True)

    severity: Severity = "minor"
    description: str
    evidence: str = ""


class Round(BaseModel):
    model_config = ConfigDict(frozen=True)

    number: int
    critic: str
    summary: str = ""
    issues: tuple[CouncilIssue, ...] = ()
    author_response: str | None = None


class CouncilVerdict(BaseModel):
    model_config = ConfigDict(frozen=True)

    verdict: VerdictName
    summary: str
    issues: tuple[CouncilIssue, ...] = ()
    rounds: tuple[Round, ...] = ()
    referee: str
    #: Referees that failed before one answered (seat name and the error).
    fallbacks: tuple[str, ...] = ()


class MemberAnswer(BaseModel):
    model_config = ConfigDict(frozen=True)

    member: str
    answer: str = ""
    error: str | None = None
    latency_ms: float = 0.0


class ConsultResult(BaseModel):
    model_config = ConfigDict(frozen=True)

    question: str
    answers: tuple[MemberAnswer, ...]
    synthesis: str
    agreements: tuple[str, ...] = ()
    disagreements: tuple[str, ...] = ()
    referee: str
    fallbacks: tuple[str, ...] = Field(default_factory=tuple)
