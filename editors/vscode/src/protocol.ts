/**
 * Custom LSP names of driveros, mirrored from server/driveros_lsp/protocol.py (the source of
 * truth) and documented in docs/protocol.md. test/unit/protocol.test.ts parses the Python file
 * and fails when a name or value here drifts from it: change both at once.
 */

export const SERVER_NAME = "driveros-lsp";

// workspace/executeCommand commands
export const CMD_AGENT_START = "driveros.agent.start";
export const CMD_AGENT_FIX = "driveros.agent.fix";
export const CMD_AGENT_CANCEL = "driveros.agent.cancel";
export const CMD_AGENT_LIST = "driveros.agent.list";
export const CMD_AGENT_COMMAND = "driveros.agent.command";
export const CMD_AGENT_FOLLOW_UP = "driveros.agent.followUp";
export const CMD_AGENT_ACCEPT = "driveros.agent.accept";
export const CMD_AGENT_REVERT = "driveros.agent.revert";
export const CMD_REVIEW_ACCEPT = "driveros.review.accept";
export const CMD_REVIEW_REJECT = "driveros.review.reject";
export const CMD_MEMORY_RECALL = "driveros.memory.recall";
export const CMD_MEMORY_FORGET = "driveros.memory.forget";
export const CMD_INLINE_ACCEPTED = "driveros.inlineCompletion.accepted";

export const COMMANDS: readonly string[] = [
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
];

// server -> client notifications
export const NOTIFY_TRACE = "driveros/trace";
export const NOTIFY_PROPOSAL = "driveros/proposal";

export const NOTIFICATIONS: readonly string[] = [NOTIFY_TRACE, NOTIFY_PROPOSAL];

// the wire fields of each file of a driveros/proposal notification (events.ts
// ProposalFileParams; newText: the whole proposed content)
export const PROPOSAL_FILE_FIELDS = ["path", "uri", "action", "oldPath", "diff", "newText", "binary", "conflict"] as const;

// approval "ask": a window/showMessageRequest whose message starts with this prefix and whose
// actions are exactly these titles, in this order
export const ASK_MESSAGE_PREFIX = "driveros wants to ";
export const ASK_ALLOW_ONCE = "Allow once";
export const ASK_ALLOW_RUN = "Allow for this run";
export const ASK_DENY = "Deny";
export const ASK_ACTIONS: readonly string[] = [ASK_ALLOW_ONCE, ASK_ALLOW_RUN, ASK_DENY];

// code action titles (prefixes) and kinds
export const ACTION_FIX_PREFIX = "Ask agent to fix: ";
export const ACTION_FIX_ALL = "Ask agent to fix all in file";
export const ACTION_ACCEPT = "Accept agent proposal";
export const ACTION_REJECT = "Reject agent proposal";

// the source name of diagnostics the server publishes for a run
export const DIAGNOSTIC_SOURCE = "driveros";

// the settings section (workspace/configuration, didChangeConfiguration {"driveros": {...}})
export const SETTINGS_SECTION = "driveros";

// a client that handles driveros/trace says so in ClientCapabilities.experimental:
// {"experimental": {"driverosTrace": true}}
export const EXPERIMENTAL_TRACE = "driverosTrace";

// $/progress tokens the server creates for runs are this prefix + the run id
export const PROGRESS_TOKEN_PREFIX = "driveros/run/";
