"""Approval policies: who decides whether a tool call may run (``--approve``).

``policy`` auto-allows a documented allowlist and blocks the rest, ``never`` allows only
read-only tools, ``ask`` asks an :class:`Asker` (the terminal, the editor) for what the policy
would not allow (``interactive`` is ``ask`` on /dev/tty), and ``allow-all`` is for trusted
programmatic use. Every policy knows the :class:`Tier` commands run in: in a contained tier
(docker, scratch copy, network off) every command runs unasked. See docs/approval.md for the
matrix and the allowlist; :func:`display_command` is how any command is shown to a person.
"""

from driveros._tool_names import EDIT_TOOLS, READ_ONLY_TOOLS, RUN_TOOL
from driveros.approval._ask import AskApproval, run_key
from driveros.approval._display import display_command
from driveros.approval._factory import APPROVAL_NAMES, approval_policy
from driveros.approval._interactive import InteractiveApproval, TtyAsker
from driveros.approval._policies import (
    DEFAULT_ASK_TIMEOUT,
    AllowAllApproval,
    NeverApproval,
    PolicyApproval,
    policy_decision,
)
from driveros.approval._shell import classify_command
from driveros.approval._types import (
    ASK_ACTIONS,
    LOCAL_TIER,
    Answer,
    ApprovalPolicy,
    ApprovalRequest,
    Asker,
    Choice,
    Decision,
    ExternalTool,
    FolderAccess,
    NoTerminalError,
    Question,
    Scope,
    Tier,
)

__all__ = [
    "APPROVAL_NAMES",
    "ASK_ACTIONS",
    "DEFAULT_ASK_TIMEOUT",
    "EDIT_TOOLS",
    "LOCAL_TIER",
    "READ_ONLY_TOOLS",
    "RUN_TOOL",
    "AllowAllApproval",
    "Answer",
    "ApprovalPolicy",
    "ApprovalRequest",
    "AskApproval",
    "Asker",
    "Choice",
    "Decision",
    "ExternalTool",
    "FolderAccess",
    "InteractiveApproval",
    "NeverApproval",
    "NoTerminalError",
    "PolicyApproval",
    "Question",
    "Scope",
    "Tier",
    "TtyAsker",
    "approval_policy",
    "classify_command",
    "display_command",
    "policy_decision",
    "run_key",
]
