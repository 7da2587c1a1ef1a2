-- The trace shows a run's proposal from the driveros/proposal notification (the trace never
-- carries one): once per proposal, not for the updates the review sends.
local H = dofile(vim.env.DRIVEROS_TEST_LUA .. '/helpers.lua')
local trace = require('driveros.trace')
local review = require('driveros.review')
require('driveros').setup({ trace = { auto_open = false }, review = { auto_open = false } })
trace.open('r1')
local function event(ev)
  ev.run_id = 'r1'
  trace.on_trace(nil, { runId = 'r1', event = ev }, {})
end
local function proposal(state, files)
  review.on_proposal(nil, { runId = 'r1', state = state, rationale = '', files = files }, {})
end
local a = { path = 'a.py', uri = 'file:///w/a.py', action = 'modify', diff = '', binary = false, conflict = false }
local b = { path = 'b.py', uri = 'file:///w/b.py', action = 'create', diff = '', binary = false, conflict = false }
event({ type = 'run_started', task = 'fix' })
event({ type = 'result', outcome = 'answered', exit_code = 0 })
proposal('proposed', { a, b })
proposal('proposed', { b }) -- a.py accepted
proposal('rejected', {})
event({ type = 'run_started', task = 'use the other name' }) -- resumed with feedback
proposal('proposed', { b })
trace.flush('r1')
H.finish({ lines = vim.api.nvim_buf_get_lines(trace.buffer('r1'), 0, -1, false) })
