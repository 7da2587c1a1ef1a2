---@mod driveros.protocol Custom LSP names of driveros.
---Mirrors server/driveros_lsp/protocol.py; a test keeps the two equal.

---@class driveros.Protocol
local M = {}

M.SERVER_NAME = 'driveros-lsp'

M.CMD_AGENT_START = 'driveros.agent.start'
M.CMD_AGENT_FIX = 'driveros.agent.fix'
M.CMD_AGENT_CANCEL = 'driveros.agent.cancel'
M.CMD_AGENT_LIST = 'driveros.agent.list'
M.CMD_AGENT_COMMAND = 'driveros.agent.command'
M.CMD_AGENT_FOLLOW_UP = 'driveros.agent.followUp'
M.CMD_AGENT_ACCEPT = 'driveros.agent.accept'
M.CMD_AGENT_REVERT = 'driveros.agent.revert'
M.CMD_REVIEW_ACCEPT = 'driveros.review.accept'
M.CMD_REVIEW_REJECT = 'driveros.review.reject'
M.CMD_MEMORY_RECALL = 'driveros.memory.recall'
M.CMD_MEMORY_FORGET = 'driveros.memory.forget'
M.CMD_INLINE_ACCEPTED = 'driveros.inlineCompletion.accepted'

M.NOTIFY_TRACE = 'driveros/trace'
M.NOTIFY_PROPOSAL = 'driveros/proposal'

-- the wire fields of each file of a driveros/proposal notification (newText: the whole
-- proposed content)
M.PROPOSAL_FILE_FIELDS = { 'path', 'uri', 'action', 'oldPath', 'diff', 'newText', 'binary', 'conflict' }

M.ASK_MESSAGE_PREFIX = 'driveros wants to '
M.ASK_ALLOW_ONCE = 'Allow once'
M.ASK_ALLOW_RUN = 'Allow for this run'
M.ASK_DENY = 'Deny'
M.ASK_ACTIONS = { 'Allow once', 'Allow for this run', 'Deny' }

M.ACTION_FIX_PREFIX = 'Ask agent to fix: '
M.ACTION_FIX_ALL = 'Ask agent to fix all in file'
M.ACTION_ACCEPT = 'Accept agent proposal'
M.ACTION_REJECT = 'Reject agent proposal'

M.DIAGNOSTIC_SOURCE = 'driveros'
M.SETTINGS_SECTION = 'driveros'
M.EXPERIMENTAL_TRACE = 'driverosTrace'
M.PROGRESS_TOKEN_PREFIX = 'driveros/run/'

return M
