"""The one typed event schema every consumer reads (CLI, LSP trace, eval logs).

Every event has ``type``, ``run_id``, ``seq`` and ``ts``. The JSON Schema of the union is
published in docs/events.md (``event_json_schema()``). Secrets never appear in any event:
emitters pass every event through a redactor before it leaves the agent. Every event can be
serialized: lone surrogates (undecodable bytes of argv or file names, ``"\\udcff"`` escapes
in a model's tool arguments) are replaced by visible escapes when the event is built.
"""

from __future__ import annotations

import time
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, model_validator

from driveros._unicode import printable_data
from driveros.diagnostics import DiagnosticItem
from driveros.llm import Usage

Outcome = Literal[
    "answered",
    "unverified",
    "resource_cap",
    "stuck",
    "provider_error",
    "refused",
    "canceled",
    "setup_error",
]

#: Outcome → process exit code (DESIGN.md).
EXIT_CODES: dict[str, int] = {
    "answered": 0,
    "unverified": 2,
    "resource_cap": 3,
    "stuck": 4,
    "provider_error": 5,
    "refused": 6,
    "canceled": 7,
    "setup_error": 1,
}


class _Printable(BaseModel):
    """A model whose strings always encode as UTF-8 (lone surrogates become escapes)."""

    @model_validator(mode="before")
    @classmethod
    def _printable(cls, data: Any) -> Any:
        return printable_data(data) if isinstance(data, dict) else data


class _Event(_Printable):
    model_config = ConfigDict(frozen=True, extra="forbid")

    run_id: str
    seq: int = 0
    ts: float = Field(default_factory=time.time)


class RunStarted(_Event):
    type: Literal["run_started"] = "run_started"
    task: str
    provider: str = ""
    model: str = ""
    workspace: str = ""
    sandbox: str = ""
    #: Untracked files over the size limit that the scratch copy does not have (review runs).
    left_out: list[str] = Field(default_factory=list)
    #: How the scratch copy was made (review runs): ``overlay``, ``worktree`` or ``copy``.
    scratch: str = ""
    #: Why an overlay was asked for and not used (review runs; "" otherwise).
    scratch_fallback: str = ""
    #: The instruction files in the model's context, ``source:path`` (docs/extending.md).
    instructions: list[str] = Field(default_factory=list)


class TurnStarted(_Event):
    type: Literal["turn_started"] = "turn_started"
    turn: int


class Thinking(_Event):
    """Reasoning text; ``delta`` is true for streamed fragments (coalesced by consumers)."""

    type: Literal["thinking"] = "thinking"
    turn: int
    text: str
    delta: bool = True
    signed: bool = False


class Text(_Event):
    type: Literal["text"] = "text"
    turn: int
    text: str
    delta: bool = True


class ToolCall(_Event):
    type: Literal["tool_call"] = "tool_call"
    turn: int
    call_id: str
    name: str
    arguments: dict[str, Any] = Field(default_factory=dict)


class ToolLocation(_Printable):
    """A place a tool's answer names: a workspace-relative path, a 1-based line and column
    (characters, as the file tools and diagnostics show them)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    path: str
    line: int
    column: int = 1


class ToolResult(_Event):
    type: Literal["tool_result"] = "tool_result"
    turn: int
    call_id: str
    name: str
    ok: bool
    output: str
    duration_ms: float = 0.0
    #: True when the tool observed real state (counts toward a verified answer).
    observed: bool = False
    truncated: bool = False
    #: The places the answer names (the semantic tools: definitions, references, symbols, the
    #: lines a rename changed); editors make them links.
    locations: list[ToolLocation] = Field(default_factory=list)


class Diagnostics(_Event):
    type: Literal["diagnostics"] = "diagnostics"
    turn: int
    fingerprint: str
    total: int
    new: list[DiagnosticItem] = Field(default_factory=list)
    fixed: list[DiagnosticItem] = Field(default_factory=list)
    unchanged: int = 0
    checks: list[str] = Field(default_factory=list)


class BuildCheck(_Printable):
    """One check of the detected build: what runs, what for, and where the project declares
    it (``Makefile:test``, ``setup.cfg [flake8]``, ``convention``)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str
    kind: str | None = None
    origin: str | None = None
    command: str = ""


class Build(_Event):
    """The project's build as the diagnostics feed detected it (once per detection)."""

    type: Literal["build"] = "build"
    checks: list[BuildCheck] = Field(default_factory=list)
    #: One line per declared check that does not run here, and why.
    not_run: list[str] = Field(default_factory=list)
    #: One line per check that failed to run in the first snapshot of this build (it could
    #: not start, timed out, was refused, or failed inside driveros).
    failed: list[str] = Field(default_factory=list)


class MemoryEvent(_Event):
    type: Literal["memory"] = "memory"
    action: Literal["recall", "store", "error", "skipped"]
    count: int = 0
    detail: str = ""


class Approval(_Event):
    type: Literal["approval"] = "approval"
    turn: int
    call_id: str
    name: str
    decision: Literal["allowed", "blocked", "approved", "denied"]
    reason: str = ""
    #: True when a human was asked (``approved``/``denied``, or ``denied`` by a timeout).
    asked: bool = False
    #: Who answered: ``tty``, the editor, ``timeout``, ``canceled``, ``error``; or who allowed
    #: the command for this run earlier (then ``asked`` is false and ``scope`` is ``run``).
    answered_by: str | None = None
    #: What an allowance covers: this call (``once``) or the same request for the whole run.
    scope: Literal["once", "run"] | None = None
    #: Where the command runs (``Tier.describe()``), for people reading the trace.
    tier: str | None = None


class Stuck(_Event):
    type: Literal["stuck"] = "stuck"
    turn: int
    detector: str
    detail: str
    evidence: list[str] = Field(default_factory=list)


class Edit(_Event):
    type: Literal["edit"] = "edit"
    turn: int
    path: str
    action: Literal["create", "modify", "delete"] = "modify"


class TurnFinished(_Event):
    type: Literal["turn_finished"] = "turn_finished"
    turn: int
    duration_ms: float
    usage: Usage = Field(default_factory=Usage)


class CheckpointInfo(_Printable):
    """One checkpoint of a review run: the scratch copy after ``turn`` (numbered from 1)."""

    model_config = ConfigDict(frozen=True)

    checkpoint: int
    turn: int
    files: list[str] = Field(default_factory=list)


class Checkpoint(_Event):
    """A turn changed the run's scratch copy; ``files`` are the paths it changed."""

    type: Literal["checkpoint"] = "checkpoint"
    turn: int
    checkpoint: int
    files: list[str] = Field(default_factory=list)


class Compaction(_Event):
    """The conversation neared the context budget and was compacted before ``turn``.

    ``method`` is ``summary`` (the model summarized the older turns; the recent ones are kept
    verbatim) or ``trim`` (the fallback: old tool outputs replaced by a marker). ``usage`` is
    what the summary request cost; ``error`` says why a summary was not used.
    """

    type: Literal["compaction"] = "compaction"
    turn: int
    method: Literal["summary", "trim"]
    tokens_before: int
    tokens_after: int
    budget: int
    kept_messages: int = 0
    usage: Usage = Field(default_factory=Usage)
    error: str | None = None


class ProposalFile(_Printable):
    model_config = ConfigDict(frozen=True)

    path: str
    action: Literal["create", "modify", "delete", "rename"] = "modify"
    old_path: str | None = None
    diff: str = ""


class Proposal(_Event):
    type: Literal["proposal"] = "proposal"
    files: list[ProposalFile] = Field(default_factory=list)
    rationale: str = ""


class Result(_Event):
    type: Literal["result"] = "result"
    outcome: Outcome
    exit_code: int
    answer: str = ""
    verified: bool = False
    turns: int = 0
    usage: Usage = Field(default_factory=Usage)
    duration_ms: float = 0.0
    error: str | None = None
    #: Whether the diagnostics the task targeted are gone (None when none were targeted).
    targets_fixed: bool | None = None
    stuck_detector: str | None = None
    #: A review run's checkpoints, oldest first (empty when no turn changed the copy).
    checkpoints: list[CheckpointInfo] = Field(default_factory=list)


Event = Annotated[
    RunStarted
    | TurnStarted
    | Thinking
    | Text
    | ToolCall
    | ToolResult
    | Diagnostics
    | Build
    | MemoryEvent
    | Approval
    | Stuck
    | Edit
    | TurnFinished
    | Checkpoint
    | Compaction
    | Proposal
    | Result,
    Field(discriminator="type"),
]

EVENT_TYPES: tuple[str, ...] = (
    "run_started",
    "turn_started",
    "thinking",
    "text",
    "tool_call",
    "tool_result",
    "diagnostics",
    "build",
    "memory",
    "approval",
    "stuck",
    "edit",
    "turn_finished",
    "checkpoint",
    "compaction",
    "proposal",
    "result",
)


def event_adapter() -> TypeAdapter[Event]:
    return TypeAdapter(Event)


def event_json_schema() -> dict[str, Any]:
    return event_adapter().json_schema()
