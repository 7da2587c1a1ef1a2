"""The shapes of everything the server sends a client beyond plain LSP: the params of its
notifications and the results of its commands (pydantic, camelCase on the wire), beside the
names in :mod:`driveros_lsp.protocol` and documented in docs/protocol.md.

Every payload is built from these models and sent with :meth:`Payload.wire`. Their JSON
Schema (:func:`payload_json_schema`, ``driveros-lsp --print-protocol-schema``) is checked in as
``editors/protocol.schema.json``; tests on every side (Python, the VS Code extension, the
Neovim plugin) check that each field a client reads is in it.

``driveros/trace`` carries ``driveros.agent`` events as they are (docs/events.md, snake_case:
the same JSON as the CLI's ``--format json``), except ``proposal``: a proposal reaches the
client once, as ``driveros/proposal``. Kept out of ``protocol.py`` so that importing the names
(every client test, the server's ``initialize`` path) never imports pydantic; the agent's
event classes are resolved on first use (:func:`trace_params`), so that answering a command
never imports the agent either.
"""

from __future__ import annotations

import operator
from collections.abc import Iterable, Sequence
from functools import reduce
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, TypeAlias, get_args

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter
from pydantic.alias_generators import to_camel
from pydantic.json_schema import models_json_schema

from driveros_lsp._runner import RunResult, RunUsage
from driveros_lsp._runs import Run, RunState
from driveros_lsp.protocol import (
    CMD_AGENT_ACCEPT,
    CMD_AGENT_CANCEL,
    CMD_AGENT_COMMAND,
    CMD_AGENT_FIX,
    CMD_AGENT_FOLLOW_UP,
    CMD_AGENT_LIST,
    CMD_AGENT_REVERT,
    CMD_AGENT_START,
    CMD_INLINE_ACCEPTED,
    CMD_MEMORY_FORGET,
    CMD_MEMORY_RECALL,
    CMD_REVIEW_ACCEPT,
    CMD_REVIEW_REJECT,
    NOTIFY_PROPOSAL,
    NOTIFY_TRACE,
)

if TYPE_CHECKING:
    from driveros.agent import Event
    from driveros.memory import Fact as MemoryFact
    from driveros_lsp._runner import FileChangeLike

__all__ = [
    "COMMAND_RESULTS",
    "NOTIFICATION_PARAMS",
    "AcceptResult",
    "CommandResult",
    "CouncilError",
    "CouncilIssue",
    "CouncilVerdict",
    "CustomCommandInfo",
    "Fact",
    "ForgetResult",
    "InlineAcceptedResult",
    "ListResult",
    "Payload",
    "ProposalFile",
    "ProposalParams",
    "RecallResult",
    "RunStateResult",
    "RunSummary",
    "StartResult",
    "TraceLocation",
    "TraceParams",
    "TracePosition",
    "TraceRange",
    "council_payload",
    "payload_json_schema",
    "proposal_file",
    "run_summary",
    "trace_params",
]


class Payload(BaseModel):
    """A server -> client shape: frozen, camelCase on the wire, every field always sent."""

    model_config = ConfigDict(
        frozen=True,
        alias_generator=to_camel,
        populate_by_name=True,
        extra="forbid",
        json_schema_serialization_defaults_required=True,
    )

    def wire(self) -> dict[str, Any]:
        """The JSON object sent to the client."""
        return self.model_dump(by_alias=True, mode="json")


# -- driveros/trace ----------------------------------------------------------------------

if TYPE_CHECKING:
    #: The ``driveros.agent`` events ``driveros/trace`` carries: all but ``proposal``
    #: (bound at run time by :func:`_resolve_events`, from the agent's own ``Event`` union).
    TraceEvent: TypeAlias = Event


class TracePosition(Payload):
    """An LSP ``Position``: 0-based line, character in the negotiated encoding's units."""

    line: int
    character: int


class TraceRange(Payload):
    start: TracePosition
    end: TracePosition


class TraceLocation(Payload):
    """An LSP ``Location`` in the user's workspace (a file the editor can open)."""

    uri: str
    range: TraceRange


class TraceParams(Payload):
    """Params of ``driveros/trace``: one agent event of a run (schema in docs/events.md)."""

    run_id: str
    event: TraceEvent = Field(discriminator="type")
    locations: list[TraceLocation] = Field(
        default_factory=list,
        description="The event's places as LSP Locations in the client's position encoding "
        "(a tool_result's `locations`: the semantic tools' answers); [] otherwise.",
    )


def _resolve_events() -> None:
    """Bind :data:`TraceEvent` to the agent's ``Event`` union without ``Proposal`` (the
    agent is imported here, not at import time)."""
    if not TraceParams.__pydantic_complete__:
        from driveros.agent import Event, Proposal

        union, *_ = get_args(Event)
        kinds = [kind for kind in get_args(union) if kind is not Proposal]
        TraceParams.model_rebuild(_types_namespace={"TraceEvent": reduce(operator.or_, kinds)})


def trace_params(
    run_id: str, event: Event, locations: Sequence[TraceLocation] = ()
) -> TraceParams | None:
    """The ``driveros/trace`` params of ``event`` (with its places as LSP ``locations``);
    None for a ``proposal`` event, which is sent as ``driveros/proposal`` instead (one
    shape)."""
    if event.type == "proposal":
        return None
    _resolve_events()
    return TraceParams(run_id=run_id, event=event, locations=list(locations))


# -- driveros/proposal -------------------------------------------------------------------


class ProposalFile(Payload):
    """One file of a ``driveros/proposal`` notification: everything a client needs for a
    side-by-side diff (the current file on one side, ``newText`` on the other)."""

    path: str = Field(description="Workspace-relative POSIX path (the new path of a rename).")
    uri: str = Field(description="The file's URI in the workspace (the new path of a rename).")
    action: Literal["create", "modify", "delete", "rename"]
    old_path: str | None = Field(
        default=None, description="A rename's source, workspace-relative; null otherwise."
    )
    diff: str = Field(default="", description="Unified diff of the change.")
    new_text: str | None = Field(
        default=None,
        description="The file's whole proposed content; null for a delete, a binary file or "
        "a file too large to propose as text.",
    )
    binary: bool = Field(default=False, description="A binary file (no text, no diff).")
    conflict: bool = Field(
        default=False, description="Left out of the last edit: edited in the editor meanwhile."
    )


class CouncilIssue(Payload):
    severity: str
    description: str
    evidence: str = ""


class CouncilVerdict(Payload):
    """The council's review of a proposal (setting ``council``)."""

    verdict: Literal["approve", "revise", "reject"]
    summary: str
    issues: list[CouncilIssue] = Field(default_factory=list)
    referee: str


class CouncilError(Payload):
    """The council could not decide (the proposal stands)."""

    error: str


_COUNCIL: TypeAdapter[CouncilVerdict | CouncilError] = TypeAdapter(CouncilVerdict | CouncilError)


def council_payload(council: dict[str, Any] | None) -> CouncilVerdict | CouncilError | None:
    """The wire form of the council's answer (``_council.council_review``)."""
    return None if council is None else _COUNCIL.validate_python(council)


class ProposalParams(Payload):
    """Params of ``driveros/proposal``: the files of a run still pending review."""

    run_id: str
    state: RunState
    rationale: str = ""
    council: CouncilVerdict | CouncilError | None = None
    files: list[ProposalFile] = Field(default_factory=list)


def proposal_file(change: FileChangeLike, *, root: Path, conflicts: Iterable[str]) -> ProposalFile:
    """The wire form of one scratch-copy change (a ``driveros.review.FileChange``)."""
    rel = str(change.path)
    action = str(change.action)
    after = change.after
    return ProposalFile(
        path=rel,
        uri=(root / rel).as_uri(),
        action=action,  # validated by pydantic
        old_path=None if change.old_path is None else str(change.old_path),
        diff=change.diff or "",
        new_text=None if action == "delete" or change.binary or after is None else after,
        binary=change.binary,
        conflict=rel in set(conflicts),
    )


# -- command results ---------------------------------------------------------------------


class CustomCommandInfo(Payload):
    """One custom command a ``driveros.agent.command`` list offers (docs/extending.md)."""

    name: str
    description: str
    argument_hint: str
    #: ``user`` (~/.config/driveros/commands) or ``workspace`` (a trusted .driveros/commands).
    source: Literal["user", "workspace"]


class CommandResult(Payload):
    """``driveros.agent.command``: the started run's id, or (no name given) the commands."""

    run_id: str | None
    commands: list[CustomCommandInfo]


class StartResult(Payload):
    """``driveros.agent.start`` / ``driveros.agent.fix``: answered at once."""

    run_id: str


class InlineAcceptedResult(Payload):
    """``driveros.inlineCompletion.accepted``: the acceptance was counted (in the state
    directory only; docs/inline.md, "Acceptance")."""

    counted: bool


class RunStateResult(Payload):
    """``driveros.agent.cancel`` / ``driveros.review.reject``: the run's state after it."""

    run_id: str
    state: RunState


class RunSummary(Payload, RunUsage):
    """One run of ``driveros.agent.list`` (docs/protocol.md, RunSummary)."""

    run_id: str
    task: str
    state: RunState
    outcome: str | None = None
    files: list[str] = Field(default_factory=list)
    conflicts: list[str] = Field(default_factory=list)
    in_flight: list[str] = Field(default_factory=list)
    restored: bool = False
    started_at: float
    error: str | None = None
    # and what the run cost: the fields of RunUsage (cost_usd, ..., the same as RunResult's)


def run_summary(run: Run) -> RunSummary:
    # a restored run's result has no usage: its defaults (no cost, no tokens) are what we send
    result = run.outcome.result if run.outcome is not None else RunResult()
    return RunSummary(
        run_id=run.run_id,
        task=run.request.task,
        state=run.state,
        outcome=result.outcome,
        files=list(run.pending),
        conflicts=list(run.conflicts),
        in_flight=sorted(run.in_flight),
        restored=run.restored,
        started_at=run.started_at,
        error=run.error,
        **result.model_dump(include=set(RunUsage.model_fields)),
    )


class ListResult(Payload):
    """``driveros.agent.list``."""

    runs: list[RunSummary]


class AcceptResult(Payload):
    """``driveros.review.accept``: what the edit sent now holds, what was already sent, and
    what was left out (path -> why)."""

    run_id: str
    applying: list[str]
    in_flight: list[str]
    conflicts: dict[str, str]


class Fact(Payload):
    """One long-term memory fact (docs/memory.md)."""

    id: int
    text: str
    status: Literal["active", "superseded", "forgotten"]
    task: str
    created_at: str
    updated_at: str

    @classmethod
    def of(cls, fact: MemoryFact) -> Fact:
        """The wire form of a stored fact: its fields of the same names."""
        return cls.model_validate(fact, from_attributes=True)


class RecallResult(Payload):
    """``driveros.memory.recall``."""

    facts: list[Fact]


class ForgetResult(Payload):
    """``driveros.memory.forget``."""

    fact: Fact


# -- the schema --------------------------------------------------------------------------

NOTIFICATION_PARAMS: dict[str, type[Payload]] = {
    NOTIFY_TRACE: TraceParams,
    NOTIFY_PROPOSAL: ProposalParams,
}

COMMAND_RESULTS: dict[str, type[Payload]] = {
    CMD_AGENT_START: StartResult,
    CMD_AGENT_FIX: StartResult,
    CMD_AGENT_CANCEL: RunStateResult,
    CMD_AGENT_LIST: ListResult,
    CMD_AGENT_COMMAND: CommandResult,
    CMD_AGENT_FOLLOW_UP: RunStateResult,
    CMD_AGENT_ACCEPT: AcceptResult,
    CMD_AGENT_REVERT: RunStateResult,
    CMD_REVIEW_ACCEPT: AcceptResult,
    CMD_REVIEW_REJECT: RunStateResult,
    CMD_MEMORY_RECALL: RecallResult,
    CMD_MEMORY_FORGET: ForgetResult,
    CMD_INLINE_ACCEPTED: InlineAcceptedResult,
}


def payload_json_schema() -> dict[str, Any]:
    """One JSON Schema for every payload: ``notifications`` and ``commands`` map each method
    or command to its ``$defs`` entry (checked in as editors/protocol.schema.json)."""
    _resolve_events()
    models: Sequence[type[Payload]] = sorted(
        {*NOTIFICATION_PARAMS.values(), *COMMAND_RESULTS.values()}, key=lambda m: m.__name__
    )
    refs, defs = models_json_schema(
        [(m, "serialization") for m in models], ref_template="#/$defs/{model}"
    )

    def ref(model: type[Payload]) -> dict[str, Any]:
        return dict(refs[(model, "serialization")])

    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": "driveros-lsp payloads",
        "description": "What driveros-lsp sends beyond plain LSP (docs/protocol.md); "
        "generated by `driveros-lsp --print-protocol-schema`, do not edit.",
        "notifications": {name: ref(m) for name, m in NOTIFICATION_PARAMS.items()},
        "commands": {name: ref(m) for name, m in COMMAND_RESULTS.items()},
        **defs,
    }
