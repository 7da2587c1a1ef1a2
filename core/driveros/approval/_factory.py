"""The one factory of approval policies: an ``--approve`` mode to a policy object."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from driveros._errors import ConfigError
from driveros.approval._ask import AskApproval
from driveros.approval._interactive import InteractiveApproval
from driveros.approval._policies import (
    DEFAULT_ASK_TIMEOUT,
    AllowAllApproval,
    NeverApproval,
    PolicyApproval,
)
from driveros.approval._types import ApprovalPolicy, Asker, FolderAccess, Tier

#: The ``--approve`` values; ``interactive`` is ``ask`` on /dev/tty (kept as an alias).
APPROVAL_NAMES: tuple[str, ...] = ("ask", "interactive", "policy", "never", "allow-all")


def approval_policy(
    mode: str,
    *,
    workspace: str | Path | None = None,
    tier: Tier | None = None,
    asker: Asker | None = None,
    tty_path: str | Path = "/dev/tty",
    timeout: float | None = DEFAULT_ASK_TIMEOUT,
    folders: Sequence[FolderAccess] = (),
) -> ApprovalPolicy:
    """The policy for an ``--approve`` mode, for commands that run in ``tier`` (default: local).

    ``ask`` asks ``asker`` for what the policy would not allow; without an asker it asks on
    the terminal (``interactive`` is that alias) and raises :class:`NoTerminalError` (a
    ConfigError) at once when there is no terminal. ``folders``: the run's added folders
    (``--add-dir``), whose paths the allowlist may name. Unknown names raise ConfigError. Build
    one policy per run: ``Allow for this run`` is remembered by the policy object.
    """
    match mode:
        case "policy":
            return PolicyApproval(workspace=workspace, tier=tier, folders=folders)
        case "never":
            return NeverApproval()
        case "allow-all" | "allow_all":
            return AllowAllApproval()
        case "ask" | "interactive":
            if asker is None:
                tty = InteractiveApproval(
                    tty_path=tty_path,
                    workspace=workspace,
                    tier=tier,
                    timeout=timeout,
                    folders=folders,
                )
                tty.name = mode
                return tty
            return AskApproval(
                asker, workspace=workspace, tier=tier, timeout=timeout, folders=folders
            )
        case _:
            raise ConfigError(
                f"unknown approval policy {mode!r}; choose one of {', '.join(APPROVAL_NAMES)}",
                approval=mode,
            )
