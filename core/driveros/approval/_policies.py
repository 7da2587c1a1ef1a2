"""The non-interactive approval policies (``policy``, ``never``, ``allow-all``) and the decision
every policy starts from."""

from __future__ import annotations

import asyncio
import glob
import json
from pathlib import Path

from driveros._errors import GitError
from driveros._git import planted_programs
from driveros._git_pins import is_program_key
from driveros._tool_names import EDIT_TOOLS, READ_ONLY_TOOLS, RUN_TOOL
from driveros.approval._shell import classify_command, command_reach
from driveros.approval._types import (
    LOCAL_TIER,
    ApprovalRequest,
    Decision,
    Tier,
)
from driveros.config import ASK_TIMEOUT_S


def policy_decision(
    request: ApprovalRequest, *, workspace: str | None = None, tier: Tier | None = None
) -> Decision:
    """What :class:`PolicyApproval` decides, as a plain function (docs/approval.md, the matrix).

    A request carrying a command is judged as a command whatever its tool: in a contained
    ``tier`` it is allowed, elsewhere only when on the allowlist.
    """
    tier = tier or LOCAL_TIER
    if request.command is not None or request.tool == RUN_TOOL:
        if not request.command or not request.command.strip():
            return Decision(allowed=False, reason="blocked by policy: empty command")
        if tier.contained:
            return Decision(
                allowed=True,
                reason=f"allowed by policy: contained tier ({tier.describe()})",
            )
        return classify_command(request.command, workspace=workspace)
    if request.tool in READ_ONLY_TOOLS:
        return Decision(allowed=True, reason="allowed by policy: read-only tool")
    if request.tool in EDIT_TOOLS:
        return Decision(
            allowed=True, reason="allowed by policy: edits stay in the fenced workspace"
        )
    external = request.external
    if external is not None:
        if external.allowed:
            return Decision(
                allowed=True,
                reason=f"allowed by your MCP config: server {external.server!r} allows "
                f"{external.tool!r}",
            )
        return Decision(
            allowed=False,
            reason=f"blocked by policy: MCP tool {external.tool!r} of server "
            f"{external.server!r} is not on its allow list; to let it run, add "
            f'"allow": [{json.dumps(external.tool)}] to {external.config}, or run with '
            "--approve ask",
        )
    return Decision(allowed=False, reason=f"blocked by policy: unknown tool {request.tool!r}")


def _leaves_through_symlink(workspace: str, paths: list[str], globs: list[str]) -> str | None:
    """The first of ``paths`` (or of the expansions of ``globs``, expanded as the shell
    would) that resolves through a symlink outside ``workspace``."""
    root = Path(workspace).resolve()
    expanded = [
        str(Path(workspace) / match)
        for pattern in globs
        # glob.glob, not Path.glob: absolute patterns, and no dotfiles for * as in the shell
        for match in glob.glob(pattern, root_dir=workspace)  # noqa: PTH207
    ]
    for text in [*paths, *expanded]:
        if text == "/dev/null":
            continue
        real = (Path(workspace) / text).resolve()
        if real != root and not real.is_relative_to(root):
            return text
    return None


async def decide_in_tier(
    request: ApprovalRequest, *, workspace: str | None = None, tier: Tier | None = None
) -> Decision:
    """:func:`policy_decision`, plus, in the local tier (the workspace is on this machine),
    a look at the file system: an allowed command whose path arguments lead outside the
    workspace through a symlink (``cat link/x`` with ``link -> /etc``) is refused, and so is
    an allowed ``git`` in a repository whose own configuration names a program git may run
    (``diff.external``, a ``filter.<x>.clean``, ``gpg.program``...: docs/security.md,
    "Allowlisted commands that read outside the workspace or run planted code")."""
    tier = tier or LOCAL_TIER
    decision = policy_decision(request, workspace=workspace, tier=tier)
    if not decision.allowed or tier.sandbox != "local" or workspace is None:
        return decision
    if request.command is None:
        return decision
    reach = command_reach(request.command, workspace=workspace)
    if reach.paths or reach.globs:
        escaped = await asyncio.to_thread(
            _leaves_through_symlink, workspace, reach.paths, reach.globs
        )
        if escaped is not None:
            return Decision(
                allowed=False,
                reason=f"blocked by policy: {escaped!r} leads outside the workspace through a "
                "symlink",
            )
    if reach.runs_git:
        refusal = await _git_refusal(Path(workspace))
        if refusal is not None:
            return Decision(allowed=False, reason=refusal)
    return decision


#: Program keys no allowlisted git command can reach: hooks (the read-only subcommands run
#: none, and the sandbox's ``GIT_OPTIONAL_LOCKS=0`` keeps ``git status`` from writing the
#: index, the one that would run ``post-index-change``) and aliases (a builtin subcommand is
#: never an alias). Husky's ``core.hooksPath`` and a repository's aliases stay unasked.
_UNREACHED = ("core.hookspath", "alias.")


def _reached(key: str) -> bool:
    return is_program_key(key) and not key.lower().startswith(_UNREACHED)


async def _git_refusal(workspace: Path) -> str | None:
    """Why git may not run unasked in ``workspace`` (its repository configures programs, or
    the configuration cannot be read), or None."""
    try:
        planted = await planted_programs(workspace, counts=_reached)
    except GitError as exc:
        return f"blocked by policy: git commands are not auto-allowed here ({exc})"
    if not planted:
        return None
    shown = ", ".join(planted[:6]) + (f" and {len(planted) - 6} more" if len(planted) > 6 else "")
    return (
        "blocked by policy: this repository's own git configuration names programs git may "
        f"run ({shown}); git commands are not auto-allowed in it"
    )


class PolicyApproval:
    """Auto-allows the documented allowlist (read-only tools, edits, safe commands; every
    command in a contained tier); blocks everything else with a reason the model can read.

    ``workspace`` is the workspace root as commands see it (e.g. ``/workspace`` in a
    container): absolute paths below it count as inside the workspace. ``tier`` is where
    commands run (default: the local tier).
    """

    name = "policy"

    def __init__(self, *, workspace: str | Path | None = None, tier: Tier | None = None) -> None:
        self._workspace = str(workspace) if workspace is not None else None
        self.tier = tier or LOCAL_TIER

    async def decide(self, request: ApprovalRequest) -> Decision:
        return await decide_in_tier(request, workspace=self._workspace, tier=self.tier)


class NeverApproval:
    """Allows only the read-only tools, in every tier; every command (a custom check
    included) and every edit is blocked."""

    name = "never"

    async def decide(self, request: ApprovalRequest) -> Decision:
        if request.tool in READ_ONLY_TOOLS and request.command is None:
            return Decision(allowed=True, reason="allowed: read-only tool")
        what = "command" if request.command is not None else request.tool
        return Decision(allowed=False, reason=f"blocked: approval policy 'never' allows no {what}")


class AllowAllApproval:
    """Allows everything. For trusted programmatic use (tests, an already isolated sandbox)."""

    name = "allow-all"

    async def decide(self, request: ApprovalRequest) -> Decision:
        return Decision(allowed=True, reason="allowed: allow-all policy")


#: Default wait for an answer before it counts as a denial (seconds).
DEFAULT_ASK_TIMEOUT = ASK_TIMEOUT_S
