"""Approval as the loop sees it: every non-read-only tool call is decided by a policy.

The policies themselves (``policy``, ``never``, ``interactive``, ``allow-all``) live in
:mod:`driveros.review.approval`; this module maps the ``--approve`` modes onto them.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from driveros.review.approval import (
    ApprovalPolicy,
    ApprovalRequest,
    Decision,
    approval_from_name,
)

ApproveMode = Literal["interactive", "policy", "never"]

__all__ = ["ApprovalPolicy", "ApprovalRequest", "ApproveMode", "Decision", "approval_policy"]


def approval_policy(mode: str, *, workspace: str | Path | None = None) -> ApprovalPolicy:
    """The policy for an ``--approve`` mode; ``interactive`` fails fast without a terminal."""
    return approval_from_name(mode, workspace=workspace)
