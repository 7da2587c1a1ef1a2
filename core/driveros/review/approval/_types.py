"""Approval requests, decisions and the policy protocol."""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable

from pydantic import BaseModel, ConfigDict, Field, model_validator

from driveros._errors import ConfigError

#: Tools that only observe: every policy allows them.
READ_ONLY_TOOLS: frozenset[str] = frozenset({"read_file", "list_files", "search", "diagnostics"})
#: Tools that edit files inside the fenced (scratch) workspace.
EDIT_TOOLS: frozenset[str] = frozenset({"write_file", "edit_file"})
#: The tool whose ``command`` argument is a shell command.
RUN_TOOL = "run"


class NoTerminalError(ConfigError):
    """Interactive approval was asked for but there is no terminal to ask on."""


class ApprovalRequest(BaseModel):
    """One tool call that needs a decision. ``command`` is filled from ``arguments`` for
    ``run`` when not given."""

    model_config = ConfigDict(frozen=True)

    tool: str
    arguments: dict[str, Any] = Field(default_factory=dict)
    command: str | None = None

    @model_validator(mode="after")
    def _fill_command(self) -> ApprovalRequest:
        if self.command is None and self.tool == RUN_TOOL:
            cmd = self.arguments.get("command")
            if isinstance(cmd, str):
                object.__setattr__(self, "command", cmd)
        return self

    def describe(self) -> str:
        """A one-line human description (for prompts and logs)."""
        if self.tool == RUN_TOOL:
            return f"run: {self.command or ''}"
        path = self.arguments.get("path")
        return f"{self.tool}: {path}" if isinstance(path, str) else self.tool


class Decision(BaseModel):
    """The verdict on one request. ``asked`` is True when a human was asked."""

    model_config = ConfigDict(frozen=True)

    allowed: bool
    reason: str = ""
    asked: bool = False


@runtime_checkable
class ApprovalPolicy(Protocol):
    """Decides whether a tool call may run. ``name`` is the ``--approve`` value it implements."""

    name: str

    async def decide(self, request: ApprovalRequest) -> Decision: ...
