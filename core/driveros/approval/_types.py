"""Approval requests, decisions, tiers, questions and the policy and asker protocols."""

from __future__ import annotations

import json
from pathlib import PurePosixPath
from typing import Any, Literal, Protocol, runtime_checkable

from pydantic import BaseModel, ConfigDict, Field, model_validator

from driveros._errors import ConfigError
from driveros._tool_names import RUN_TOOL
from driveros.approval._display import display_command


class NoTerminalError(ConfigError):
    """Interactive approval was asked for but there is no terminal to ask on."""


#: Characters of a tool call's arguments an asker shows (JSON, escaped); the rest is cut.
SHOWN_ARGUMENTS = 600


class ExternalTool(BaseModel):
    """A tool driveros does not run itself (an MCP server's): whose it is, whether the
    user's own config allows it to run unasked, where it runs and where to allow it."""

    model_config = ConfigDict(frozen=True)

    server: str
    tool: str
    #: The user's config lists it (``"allow": [...]`` on the server): ``policy`` runs it.
    allowed: bool = False
    #: Where a call runs, for the question (``the MCP server 'notes': its own process, as you``).
    runs_in: str
    #: Where the user allows it (``mcpServers.notes in ~/.config/driveros/mcp.json``).
    config: str


class ApprovalRequest(BaseModel):
    """One tool call that needs a decision. ``command`` is filled from ``arguments`` for
    ``run`` when not given. Any request that carries a ``command`` is judged as a command,
    whatever the tool is called (a custom check is a command)."""

    model_config = ConfigDict(frozen=True)

    tool: str
    arguments: dict[str, Any] = Field(default_factory=dict)
    command: str | None = None
    #: The model's tool call this request is about (None: driveros' own, a custom check):
    #: an asker that shows tool calls (ACP) asks about that call, never a new one.
    call_id: str | None = None
    #: Set for a tool driveros does not run itself (an MCP server's tool).
    external: ExternalTool | None = None

    @model_validator(mode="after")
    def _fill_command(self) -> ApprovalRequest:
        if self.command is None and self.tool == RUN_TOOL:
            cmd = self.arguments.get("command")
            if isinstance(cmd, str):
                object.__setattr__(self, "command", cmd)
        return self

    def describe(self) -> str:
        """A one-line human description (for prompts and logs), control characters escaped
        (:func:`display_command`) and never shortened."""
        if self.command is not None:
            verb = "run" if self.tool == RUN_TOOL else f"{self.tool} (runs)"
            return f"{display_command(verb)}: {display_command(self.command)}"
        path = self.arguments.get("path")
        if isinstance(path, str):
            return f"{display_command(self.tool)}: {display_command(path)}"
        return display_command(self.tool)


class Tier(BaseModel):
    """Where a command runs; the policy decides by it (the matrix in docs/approval.md).

    ``contained`` is a sandboxed tier on a scratch copy with the network off: the local tier
    (every command in its bubblewrap sandbox) or docker (runc or runsc). There every command
    runs without asking: the sandbox is the boundary and the review the gate. Anything else
    (network on, the user's own tree) is not.
    """

    model_config = ConfigDict(frozen=True)

    sandbox: Literal["local", "docker"] = "local"
    runtime: Literal["runc", "runsc"] | None = None
    network: bool = False
    #: The sandbox works on a scratch copy under review (``--review``, every editor run).
    scratch: bool = False

    @property
    def contained(self) -> bool:
        return not self.network and self.scratch

    def describe(self) -> str:
        """For people: ``local (bubblewrap), network off, scratch copy``, ``docker runsc,
        network on, your workspace``."""
        where = (
            "local (bubblewrap)" if self.sandbox == "local" else f"docker {self.runtime or 'runc'}"
        )
        parts = [where, "network on" if self.network else "network off"]
        parts.append("scratch copy" if self.scratch else "your workspace")
        return ", ".join(parts)


class FolderAccess(BaseModel):
    """An added folder (``--add-dir DIR[:rw]``) as the allowlist sees it: ``path`` as commands
    see it (absolute), whether it is ``writable``, and ``files``, where its files are on this
    machine when that is elsewhere (a review run's view of it: the local tier resolves
    symlinks there). Allowlisted read commands may name a read-only folder's paths; every
    allowlisted command a writable one's, as the workspace's (docs/approval.md)."""

    model_config = ConfigDict(frozen=True)

    path: str
    writable: bool = False
    files: str | None = None

    def holds(self, path: PurePosixPath) -> bool:
        """Whether the absolute ``path`` is this folder or inside it."""
        root = PurePosixPath(self.path)
        return path == root or root in path.parents


#: The local tier on the user's workspace: the most conservative default.
LOCAL_TIER = Tier()

Scope = Literal["once", "run"]


class Decision(BaseModel):
    """The verdict on one request. ``asked`` is True when a human was asked; then
    ``answered_by`` says who answered (``tty``, the editor's name, ``timeout``, ...) and
    ``scope`` whether an allowance covers this call (``once``) or the rest of the run
    (``run``)."""

    model_config = ConfigDict(frozen=True)

    allowed: bool
    reason: str = ""
    asked: bool = False
    answered_by: str | None = None
    scope: Scope | None = None


#: The answer titles every asker shows, in this order (clients and scripts match the
#: leading "Allow"/"Deny").
ASK_ACTIONS: tuple[str, str, str] = ("Allow once", "Allow for this run", "Deny")

Choice = Literal["allow_once", "allow_run", "deny"]


class Answer(BaseModel):
    """What a human answered. ``by`` names who answered (``tty``, ``vscode``, ...);
    ``reason`` (for a denial) is passed on to the model."""

    model_config = ConfigDict(frozen=True)

    choice: Choice
    by: str = "user"
    reason: str = ""

    @classmethod
    def from_title(cls, title: str | None, *, by: str) -> Answer:
        """The answer for a chosen action title (:data:`ASK_ACTIONS`); ``None`` (the request
        was closed) and anything unknown are a denial."""
        match title:
            case "Allow once":
                return cls(choice="allow_once", by=by)
            case "Allow for this run":
                return cls(choice="allow_run", by=by)
            case _:
                return cls(choice="deny", by=by)


class Question(BaseModel):
    """What an :class:`Asker` is asked: the request, the tier it would run in, and why the
    policy did not allow it on its own."""

    model_config = ConfigDict(frozen=True)

    request: ApprovalRequest
    tier: Tier = LOCAL_TIER
    reason: str = ""

    @property
    def command(self) -> str:
        """The whole command (or the tool and path), control characters escaped."""
        req = self.request
        return display_command(req.command) if req.command is not None else req.describe()

    def message(self) -> str:
        """The standard question text: tool, whole escaped command, tier, the policy's
        reason. Every asker shows at least this."""
        tool = display_command(self.request.tool)
        lines = [f"driveros wants to {self.request.describe()}", f"tool: {tool}"]
        external = self.request.external
        if external is not None:
            lines.append(f"arguments: {shown_arguments(self.request.arguments)}")
            lines.append(f"runs in: {display_command(external.runs_in)}")
        else:
            lines.append(f"runs in: {self.tier.describe()}")
        if self.reason:
            lines.append(f"why asked: {display_command(self.reason)}")
        return "\n".join(lines)


@runtime_checkable
class Asker(Protocol):
    """Asks a human about one :class:`Question` and returns the :class:`Answer`.

    Implementations: the terminal (:class:`TtyAsker`), the language server
    (``window/showMessageRequest``). The caller serializes questions, applies the timeout
    (an expired wait is a denial) and handles cancellation (the run's cancellation is a
    denial, then ``CancelledError`` propagates): an asker just waits for its human and must
    let cancellation through after withdrawing its question.
    """

    async def ask(self, question: Question) -> Answer: ...


@runtime_checkable
class ApprovalPolicy(Protocol):
    """Decides whether a tool call may run. ``name`` is the ``--approve`` value it implements."""

    name: str

    async def decide(self, request: ApprovalRequest) -> Decision: ...


def shown_arguments(arguments: dict[str, Any]) -> str:
    """A tool call's arguments as an asker shows them: JSON, every control character and
    bidi override escaped, cut at :data:`SHOWN_ARGUMENTS` characters (and said so)."""
    text = display_command(json.dumps(arguments, ensure_ascii=False, default=str))
    if len(text) > SHOWN_ARGUMENTS:
        text = text[: SHOWN_ARGUMENTS - 1] + "…"
    return text
