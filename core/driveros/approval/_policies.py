"""The non-interactive approval policies (``policy``, ``never``, ``allow-all``) and the decision
every policy starts from."""

from __future__ import annotations

import asyncio
import glob
import json
from collections.abc import Sequence
from pathlib import Path, PurePosixPath

from driveros._errors import GitError
from driveros._git import planted_programs
from driveros._git_pins import is_program_key
from driveros._tool_names import EDIT_TOOLS, READ_ONLY_TOOLS, RUN_TOOL
from driveros.approval._shell import classify_command, command_reach
from driveros.approval._types import (
    LOCAL_TIER,
    ApprovalRequest,
    Decision,
    FolderAccess,
    Tier,
)
from driveros.config import ASK_TIMEOUT_S


def policy_decision(
    request: ApprovalRequest,
    *,
    workspace: str | None = None,
    tier: Tier | None = None,
    folders: Sequence[FolderAccess] = (),
) -> Decision:
    """What :class:`PolicyApproval` decides, as a plain function (docs/approval.md, the matrix).

    A request carrying a command is judged as a command whatever its tool: in a contained
    ``tier`` it is allowed, elsewhere only when on the allowlist (``folders``: the run's
    added folders, whose paths it may name as :func:`classify_command` says).
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
        return classify_command(request.command, workspace=workspace, folders=folders)
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


def _on_disk(text: str, workspace: str, folders: Sequence[FolderAccess]) -> tuple[Path, Path, Path]:
    """Where ``text`` (relative to the workspace, or absolute) is on this machine, the root
    it must stay in there (the added folder it names: its files, a view's; else the
    workspace) and that root as commands name it."""
    path = PurePosixPath(workspace, text)
    for folder in folders:
        if folder.holds(path):
            files = Path(folder.files or folder.path)
            return files / path.relative_to(folder.path), files, Path(folder.path)
    return Path(path), Path(workspace), Path(workspace)


def _leaves_through_symlink(
    workspace: str, paths: list[str], globs: list[str], folders: Sequence[FolderAccess] = ()
) -> str | None:
    """The first of ``paths`` (or of the expansions of ``globs``, expanded as the shell
    would) that resolves through a symlink outside the root it names: the workspace, or the
    added folder it is in (a link from one into another counts as outside)."""
    expanded: list[str] = []
    for pattern in globs:
        place, root, shown = _on_disk(pattern, workspace, folders)
        # glob.glob, not Path.glob: no dotfiles for * as in the shell
        found = glob.glob(str(place))  # noqa: PTH207
        expanded += [str(shown / Path(m).relative_to(root)) for m in found]
    for text in [*paths, *expanded]:
        if text == "/dev/null":
            continue
        place, root, _shown = _on_disk(text, workspace, folders)
        real, top = place.resolve(), root.resolve()
        if real != top and not real.is_relative_to(top):
            return text
    return None


async def decide_in_tier(
    request: ApprovalRequest,
    *,
    workspace: str | None = None,
    tier: Tier | None = None,
    folders: Sequence[FolderAccess] = (),
) -> Decision:
    """:func:`policy_decision`, plus, in the local tier (the workspace is on this machine),
    a look at the file system: an allowed command whose path arguments lead outside the
    workspace through a symlink (``cat link/x`` with ``link -> /etc``) is refused, and so is
    an allowed ``git`` in a repository whose own configuration names a program git may run
    (``diff.external``, a ``filter.<x>.clean``, ``gpg.program``...: docs/security.md,
    "Allowlisted commands that read outside the workspace or run planted code")."""
    tier = tier or LOCAL_TIER
    decision = policy_decision(request, workspace=workspace, tier=tier, folders=folders)
    if not decision.allowed or tier.sandbox != "local" or workspace is None:
        return decision
    if request.command is None:
        return decision
    reach = command_reach(request.command, workspace=workspace, folders=folders)
    if reach.paths or reach.globs:
        escaped = await asyncio.to_thread(
            _leaves_through_symlink, workspace, reach.paths, reach.globs, folders
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
    commands run (default: the local tier). ``folders``: the run's added folders.
    """

    name = "policy"

    def __init__(
        self,
        *,
        workspace: str | Path | None = None,
        tier: Tier | None = None,
        folders: Sequence[FolderAccess] = (),
    ) -> None:
        self._workspace = str(workspace) if workspace is not None else None
        self.tier = tier or LOCAL_TIER
        self.folders = tuple(folders)

    async def decide(self, request: ApprovalRequest) -> Decision:
        return await decide_in_tier(
            request, workspace=self._workspace, tier=self.tier, folders=self.folders
        )


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
