"""Approval policies: who decides whether a tool call may run (``--approve``).

``policy`` auto-allows a documented allowlist and blocks the rest, ``never`` allows only
read-only tools, ``interactive`` asks on /dev/tty for what the policy would not allow, and
``allow-all`` is for trusted programmatic use. See docs/review.md for the allowlist.
"""

from driveros.review.approval._interactive import InteractiveApproval
from driveros.review.approval._policies import (
    APPROVAL_NAMES,
    AllowAllApproval,
    NeverApproval,
    PolicyApproval,
    approval_from_name,
    policy_decision,
)
from driveros.review.approval._shell import classify_command
from driveros.review.approval._types import (
    EDIT_TOOLS,
    READ_ONLY_TOOLS,
    RUN_TOOL,
    ApprovalPolicy,
    ApprovalRequest,
    Decision,
    NoTerminalError,
)

__all__ = [
    "APPROVAL_NAMES",
    "EDIT_TOOLS",
    "READ_ONLY_TOOLS",
    "RUN_TOOL",
    "AllowAllApproval",
    "ApprovalPolicy",
    "ApprovalRequest",
    "Decision",
    "InteractiveApproval",
    "NeverApproval",
    "NoTerminalError",
    "PolicyApproval",
    "approval_from_name",
    "classify_command",
    "policy_decision",
]
