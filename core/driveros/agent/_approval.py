"""Approval as the loop sees it: every non-read-only tool call is decided by a policy.

The policies themselves (``ask``, ``policy``, ``never``, ``allow-all``) live in
:mod:`driveros.approval`; this module maps the ``--approve`` modes onto them, with the
tier the run's commands execute in.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from driveros.approval import (
    DEFAULT_ASK_TIMEOUT,
    ApprovalPolicy,
    ApprovalRequest,
    Asker,
    Decision,
    Tier,
    approval_from_name,
)

#: ``interactive`` is ``ask`` on /dev/tty (kept as an alias).
ApproveMode = Literal["ask", "interactive", "policy", "never"]

__all__ = [
    "ApprovalPolicy",
    "ApprovalRequest",
    "ApproveMode",
    "Asker",
    "Decision",
    "Tier",
    "approval_policy",
]


def approval_policy(
    mode: str,
    *,
    workspace: str | Path | None = None,
    tier: Tier | None = None,
    asker: Asker | None = None,
    timeout: float | None = DEFAULT_ASK_TIMEOUT,
) -> ApprovalPolicy:
    """The policy for an ``--approve`` mode in ``tier`` (default: local). ``ask`` without an
    ``asker`` (and ``interactive``) asks on /dev/tty and fails fast without a terminal;
    ``timeout`` is how long ``ask`` waits for an answer before denying."""
    return approval_from_name(mode, workspace=workspace, tier=tier, asker=asker, timeout=timeout)
