"""Configuration, outcome and bookkeeping types of one agent run."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from pydantic import BaseModel, ConfigDict, Field

from driveros.agent import _events as ev
from driveros.agent._prompt import SYSTEM_PROMPT
from driveros.config import MAX_ITERATIONS, MAX_WALL_S
from driveros.diagnostics import DiagnosticItem, DiagnosticsSnapshot
from driveros.llm import Message, Usage

#: The context budget when neither the user nor the model's table says more.
DEFAULT_CONTEXT_BUDGET = 120_000
#: Tokens left for the model's answer when the budget follows the context window.
ANSWER_RESERVE = 8192


class AgentConfig(BaseModel):
    """Budgets and knobs of one run."""

    model_config = ConfigDict(frozen=True)

    max_iterations: int = Field(default=MAX_ITERATIONS, ge=1)
    max_wall_s: float = Field(default=MAX_WALL_S, gt=0)
    #: Estimated prompt tokens a request may carry (``--max-context``). None follows the
    #: model: its context window less ``max_tokens`` (or 8192) for the answer, else
    #: ``DEFAULT_CONTEXT_BUDGET`` when the window is not known.
    context_budget: int | None = Field(default=None, ge=1000)
    #: Compact the conversation once it passes this share of the budget.
    compact_at: float = Field(default=0.8, gt=0, le=1)
    #: Summarize older turns when compacting (off: only trim old tool outputs).
    compaction: bool = True
    #: Recent turns (assistant message + its tool results) kept verbatim by a compaction.
    keep_turns: int = Field(default=2, ge=1)
    output_limit: int = Field(default=16_000, ge=200)
    tool_timeout_s: float = Field(default=120.0, gt=0)
    memory_timeout_s: float = Field(default=30.0, gt=0)
    #: Consecutive turns whose every call was blocked before the run ends ``refused``.
    refusal_turns: int = Field(default=3, ge=1)
    max_tokens: int | None = None
    thinking: bool = False
    #: US dollars a run may spend; the loop stops before a turn that would pass it.
    max_cost_usd: float | None = Field(default=None, gt=0)
    #: Mark the stable prefix and the conversation so far as prompt-cache breakpoints.
    prompt_cache: bool = True
    system_prompt: str = SYSTEM_PROMPT


@dataclass(frozen=True)
class AgentRun:
    """What a run produced: the result event and the conversation (for resuming)."""

    result: ev.Result
    history: list[Message]


@dataclass
class LoopState:
    """What one agent loop has done so far: turns, usage, whether a tool observed real state,
    the conversation."""

    started: float = field(default_factory=time.perf_counter)
    turns: int = 0
    usage: Usage = field(default_factory=Usage)
    observed: bool = False
    blocked_streak: int = 0
    #: The last turn's usage (priced): the estimate of the next turn's cost.
    last_turn: Usage | None = None
    cost_warned: bool = False
    #: Summary requests that failed (compaction stops asking after two).
    summary_failures: int = 0
    history: list[Message] = field(default_factory=list)


class Finish(Exception):
    """Internal: ends the loop with an outcome."""

    def __init__(
        self,
        outcome: ev.Outcome,
        *,
        answer: str = "",
        error: str | None = None,
        detector: str | None = None,
        targets_fixed: bool | None = None,
    ) -> None:
        super().__init__(outcome)
        self.outcome: ev.Outcome = outcome
        self.answer = answer
        self.error = error
        self.detector = detector
        self.targets_fixed = targets_fixed


#: Whether a run fixed its targets, judged on the last snapshot (default:
#: ``driveros.diagnostics.targets_fixed``).
TargetsJudge = Callable[[DiagnosticsSnapshot, Sequence[DiagnosticItem]], bool]


def result_fields(result: ev.Result) -> dict[str, object]:
    return result.model_dump(exclude={"run_id", "seq", "ts", "type"})
