-- End to end in a real Neovim: a diagnostic from another server -> "Ask agent to fix" code
-- action -> the trace fills -> review (accept calc.py, reject util.py) -> buffers, undo,
-- disk; then a second run is canceled from :DriverOS cancel.
local H = dofile(vim.env.DRIVEROS_TEST_LUA .. '/helpers.lua')
local root = vim.fn.getcwd()
local out = { steps = {} }
local function step(name)
  table.insert(out.steps, name)
end

local buf = H.start(root .. '/calc.py', { trace = { auto_open = true } })
step('attached')
local client = require('driveros.server').client(buf)
out.trace_capability = client.config.capabilities.experimental.driverosTrace

-- a diagnostic published by another tool (its own namespace), as pyright would
local ns = vim.api.nvim_create_namespace('other-linter')
vim.diagnostic.set(ns, buf, {
  { lnum = 1, col = 4, end_lnum = 1, end_col = 16, message = 'add() subtracts instead of adding',
    severity = vim.diagnostic.severity.ERROR, source = 'pyright' },
})
vim.api.nvim_win_set_cursor(0, { 2, 4 })

local titles = {}
vim.lsp.buf.code_action({
  apply = true,
  filter = function(action)
    table.insert(titles, action.title)
    return vim.startswith(action.title, require('driveros.protocol').ACTION_FIX_PREFIX)
  end,
})
H.wait(10000, function()
  return #require('driveros.runs').order > 0
end, 'a run to start from the code action')
out.titles = titles
local run_id = require('driveros.runs').order[1]
step('run started ' .. run_id)

H.wait(60000, function()
  local run = require('driveros.runs').by_id[run_id]
  return run and run.status == 'finished' and run.proposal ~= nil
end, 'the run to finish with a proposal')
local trace = require('driveros.trace')
trace.flush(run_id)
out.trace_lines = vim.api.nvim_buf_get_lines(trace.buffer(run_id), 0, -1, false)
out.trace_windows = #vim.fn.win_findbuf(trace.buffer(run_id))
out.proposal = vim.tbl_map(function(f)
  return f.path
end, require('driveros.runs').by_id[run_id].proposal)
step('proposal')

-- answer the review programmatically through vim.ui.select
local prompts = {}
out.review_views = {}
vim.ui.select = function(items, opts, on_choice)
  table.insert(prompts, opts.prompt)
  -- what the review shows for this file: the windows of its tab page, diff mode or not
  local view = {}
  for _, win in ipairs(vim.api.nvim_tabpage_list_wins(0)) do
    local b = vim.api.nvim_win_get_buf(win)
    table.insert(view, {
      name = vim.api.nvim_buf_get_name(b),
      diff = vim.wo[win].diff,
      lines = vim.api.nvim_buf_get_lines(b, 0, -1, false),
    })
  end
  table.sort(view, function(a, b)
    return a.name < b.name
  end)
  out.review_views[opts.prompt] = view
  if opts.prompt:find('calc.py', 1, true) then
    on_choice('Accept')
  elseif opts.prompt:find('util.py', 1, true) then
    on_choice('Reject')
  else
    on_choice(items[1])
  end
end
local reviewed = {}
vim.api.nvim_create_autocmd('User', {
  pattern = 'DriverOSReviewed',
  callback = function(args)
    table.insert(reviewed, args.data)
  end,
})
local original = table.concat(vim.api.nvim_buf_get_lines(buf, 0, -1, false), '\n')
vim.cmd('DriverOS review ' .. run_id)
H.wait(20000, function()
  return #reviewed >= 2
end, 'accept and reject to be sent')
H.wait(10000, function()
  return table.concat(vim.api.nvim_buf_get_lines(buf, 0, -1, false), '\n') ~= original
end, 'the accepted edit to reach the buffer')
out.prompts = prompts
out.calc_buffer = vim.api.nvim_buf_get_lines(buf, 0, -1, false)
out.calc_modified = vim.bo[buf].modified
out.calc_disk = vim.fn.readfile(root .. '/calc.py')
local util_buf = vim.fn.bufnr(root .. '/util.py')
out.util_loaded = util_buf ~= -1 and vim.api.nvim_buf_is_loaded(util_buf)
out.util_disk = vim.fn.readfile(root .. '/util.py')
vim.api.nvim_set_current_buf(buf)
vim.cmd('silent undo')
out.calc_after_undo = vim.api.nvim_buf_get_lines(buf, 0, -1, false)
vim.cmd('silent redo')
out.calc_after_redo = vim.api.nvim_buf_get_lines(buf, 0, -1, false)
step('reviewed')

-- a second run that waits on the model, canceled from the command line
vim.cmd('DriverOS run explain this project')
H.wait(10000, function()
  return #require('driveros.runs').order > 1
end, 'the second run to start')
local second = require('driveros.runs').order[2]
-- canceled while the model streams its first turn (the agent has started: it reports the end)
H.wait(20000, function()
  for _, ev in ipairs(require('driveros.runs').by_id[second].events) do
    if ev.type == 'turn_started' then
      return true
    end
  end
  return false
end, 'the second run to ask the model')
vim.cmd('DriverOS cancel ' .. second)
H.wait(20000, function()
  local run = require('driveros.runs').by_id[second]
  return run and run.outcome == 'canceled'
end, 'the second run to be canceled')
local listed
require('driveros.server').exec(require('driveros.protocol').CMD_AGENT_LIST, {}, function(_, result)
  listed = result
end)
H.wait(5000, function()
  return listed ~= nil
end, 'driveros.agent.list')
out.runs = listed.runs
step('canceled')
H.finish(out)
