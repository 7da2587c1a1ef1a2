"""Custom LSP names of driveros, mirrored by editors/vscode/src/protocol.ts and
editors/neovim/lua/driveros/protocol.lua, documented in docs/protocol.md.

A test keeps the four in agreement: change a name here and in all of them at once.
"""

from __future__ import annotations

from typing import Final

SERVER_NAME: Final = "driveros-lsp"

# workspace/executeCommand commands
CMD_AGENT_START: Final = "driveros.agent.start"
CMD_AGENT_FIX: Final = "driveros.agent.fix"
CMD_AGENT_CANCEL: Final = "driveros.agent.cancel"
CMD_AGENT_LIST: Final = "driveros.agent.list"
CMD_AGENT_COMMAND: Final = "driveros.agent.command"
CMD_AGENT_FOLLOW_UP: Final = "driveros.agent.followUp"
CMD_AGENT_ACCEPT: Final = "driveros.agent.accept"
CMD_AGENT_REVERT: Final = "driveros.agent.revert"
CMD_REVIEW_ACCEPT: Final = "driveros.review.accept"
CMD_REVIEW_REJECT: Final = "driveros.review.reject"
CMD_MEMORY_RECALL: Final = "driveros.memory.recall"
CMD_MEMORY_FORGET: Final = "driveros.memory.forget"
CMD_INLINE_ACCEPTED: Final = "driveros.inlineCompletion.accepted"

COMMANDS: Final[tuple[str, ...]] = (
    CMD_AGENT_START,
    CMD_AGENT_FIX,
    CMD_AGENT_CANCEL,
    CMD_AGENT_LIST,
    CMD_AGENT_COMMAND,
    CMD_AGENT_FOLLOW_UP,
    CMD_AGENT_ACCEPT,
    CMD_AGENT_REVERT,
    CMD_REVIEW_ACCEPT,
    CMD_REVIEW_REJECT,
    CMD_MEMORY_RECALL,
    CMD_MEMORY_FORGET,
    CMD_INLINE_ACCEPTED,
)

# server -> client notifications
NOTIFY_TRACE: Final = "driveros/trace"
NOTIFY_PROPOSAL: Final = "driveros/proposal"

NOTIFICATIONS: Final[tuple[str, ...]] = (NOTIFY_TRACE, NOTIFY_PROPOSAL)

# the wire fields of each file of a driveros/proposal notification, in order; the pydantic
# shape is driveros_lsp.protocol_models.ProposalFile (newText: the whole proposed content)
PROPOSAL_FILE_FIELDS: Final[tuple[str, ...]] = (
    "path",
    "uri",
    "action",
    "oldPath",
    "diff",
    "newText",
    "binary",
    "conflict",
)

# approval "ask": a window/showMessageRequest whose message starts with this prefix (then the
# tool, the whole command with control characters escaped, the tier; docs/protocol.md) and
# whose actions are exactly these titles, in this order (driveros.approval.ASK_ACTIONS)
ASK_MESSAGE_PREFIX: Final = "driveros wants to "
ASK_ALLOW_ONCE: Final = "Allow once"
ASK_ALLOW_RUN: Final = "Allow for this run"
ASK_DENY: Final = "Deny"
ASK_ACTIONS: Final[tuple[str, ...]] = (ASK_ALLOW_ONCE, ASK_ALLOW_RUN, ASK_DENY)

# code action titles (prefixes) and kinds
ACTION_FIX_PREFIX: Final = "Ask agent to fix: "
ACTION_FIX_ALL: Final = "Ask agent to fix all in file"
ACTION_ACCEPT: Final = "Accept agent proposal"
ACTION_REJECT: Final = "Reject agent proposal"

# the source name of diagnostics the server publishes for a run
DIAGNOSTIC_SOURCE: Final = "driveros"

# the settings section (workspace/configuration, didChangeConfiguration {"driveros": {...}})
SETTINGS_SECTION: Final = "driveros"

# a client that handles driveros/trace says so in ClientCapabilities.experimental:
# {"experimental": {"driverosTrace": true}}; clients with neither this nor workDoneProgress
# get the trace as window/logMessage lines
EXPERIMENTAL_TRACE: Final = "driverosTrace"

# $/progress tokens the server creates for runs are this prefix + the run id
PROGRESS_TOKEN_PREFIX: Final = "driveros/run/"  # noqa: S105 (not a secret)
