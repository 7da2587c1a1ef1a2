"""The non-interactive approval policies and the ``--approve`` name lookup."""

from __future__ import annotations

from pathlib import Path

from driveros._errors import ConfigError
from driveros.review.approval._shell import classify_command
from driveros.review.approval._types import (
    EDIT_TOOLS,
    READ_ONLY_TOOLS,
    RUN_TOOL,
    ApprovalPolicy,
    ApprovalRequest,
    Decision,
)


def policy_decision(request: ApprovalRequest, *, workspace: str | None = None) -> Decision:
    """What :class:`PolicyApproval` decides, as a plain function."""
    if request.tool in READ_ONLY_TOOLS:
        return Decision(allowed=True, reason="allowed by policy: read-only tool")
    if request.tool in EDIT_TOOLS:
        return Decision(
            allowed=True, reason="allowed by policy: edits stay in the fenced workspace"
        )
    if request.tool == RUN_TOOL:
        if not request.command or not request.command.strip():
            return Decision(allowed=False, reason="blocked by policy: empty command")
        return classify_command(request.command, workspace=workspace)
    return Decision(allowed=False, reason=f"blocked by policy: unknown tool {request.tool!r}")


class PolicyApproval:
    """Auto-allows the documented allowlist (read-only tools, edits, safe commands); blocks
    everything else with a reason the model can read.

    ``workspace`` is the workspace root as commands see it (e.g. ``/workspace`` in a
    container): absolute paths below it count as inside the workspace.
    """

    name = "policy"

    def __init__(self, *, workspace: str | Path | None = None) -> None:
        self._workspace = str(workspace) if workspace is not None else None

    async def decide(self, request: ApprovalRequest) -> Decision:
        return policy_decision(request, workspace=self._workspace)


class NeverApproval:
    """Allows only the read-only tools; every command and every edit is blocked."""

    name = "never"

    async def decide(self, request: ApprovalRequest) -> Decision:
        if request.tool in READ_ONLY_TOOLS:
            return Decision(allowed=True, reason="allowed: read-only tool")
        return Decision(
            allowed=False, reason=f"blocked: approval policy 'never' allows no {request.tool}"
        )


class AllowAllApproval:
    """Allows everything. For trusted programmatic use (tests, an already isolated sandbox)."""

    name = "allow-all"

    async def decide(self, request: ApprovalRequest) -> Decision:
        return Decision(allowed=True, reason="allowed: allow-all policy")


APPROVAL_NAMES: tuple[str, ...] = ("interactive", "policy", "never", "allow-all")


def approval_from_name(
    name: str,
    *,
    workspace: str | Path | None = None,
    tty_path: str | Path = "/dev/tty",
) -> ApprovalPolicy:
    """The policy for an ``--approve`` value. ``interactive`` raises :class:`NoTerminalError`
    (a ConfigError) at once when there is no terminal; unknown names raise ConfigError."""
    match name:
        case "policy":
            return PolicyApproval(workspace=workspace)
        case "never":
            return NeverApproval()
        case "allow-all" | "allow_all":
            return AllowAllApproval()
        case "interactive":
            from driveros.review.approval._interactive import InteractiveApproval

            return InteractiveApproval(tty_path=tty_path, workspace=workspace)
        case _:
            raise ConfigError(
                f"unknown approval policy {name!r}; choose one of {', '.join(APPROVAL_NAMES)}",
                approval=name,
            )
