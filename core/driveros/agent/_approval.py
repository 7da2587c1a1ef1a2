"""Approval as the loop sees it: every non-read-only tool call is decided by a policy.

The policies and their one factory, :func:`approval_policy` (an ``--approve`` mode and the
tier the run's commands execute in), live in :mod:`driveros.approval`; the modes the agent's
front ends accept are :data:`driveros.config.ApproveMode`.
"""

from __future__ import annotations

from driveros.approval import (
    ApprovalPolicy,
    ApprovalRequest,
    Asker,
    Decision,
    Tier,
    approval_policy,
)
from driveros.config import ApproveMode

__all__ = [
    "ApprovalPolicy",
    "ApprovalRequest",
    "ApproveMode",
    "Asker",
    "Decision",
    "Tier",
    "approval_policy",
]
