-- Iterating on a run in a real Neovim: a three-turn run (one turn a sed through `run`) shows
-- its checkpoints in the trace; :DriverOS revert 2 drops the third (its line says so);
-- :DriverOS followup adds turns numbered after the run's; :DriverOS accept 2 writes exactly the
-- first two turns' changes.
local H = dofile(vim.env.DRIVEROS_TEST_LUA .. '/helpers.lua')
local root = vim.fn.getcwd()
local out = { steps = {} }

local buf = H.start(root .. '/calc.py')

local runs = require('driveros.runs')
local function proposal_paths(run_id)
  local run = runs.by_id[run_id]
  local paths = {}
  for _, f in ipairs((run and run.proposal) or {}) do
    table.insert(paths, f.path)
  end
  table.sort(paths)
  return paths
end

vim.cmd('DriverOS run three steps')
local run_id = H.first_run(60000, function(run)
  return run.status == 'finished' and run.proposal ~= nil
end, 'the first proposal')
table.insert(out.steps, 'proposed')
local trace = require('driveros.trace')
trace.open(run_id)
trace.flush(run_id)
out.checkpoint_lines = vim.tbl_filter(function(l)
  return l:find('◆ checkpoint', 1, true) ~= nil
end, vim.api.nvim_buf_get_lines(trace.buffer(run_id), 0, -1, false))

vim.cmd('DriverOS revert 2')
H.wait(20000, function()
  return #proposal_paths(run_id) == 2
end, 'the reverted proposal')
out.after_revert = proposal_paths(run_id)

vim.cmd('DriverOS followup and a fourth file')
H.wait(60000, function()
  local p = proposal_paths(run_id)
  return #p == 3
end, 'the follow-up proposal')
out.after_followup = proposal_paths(run_id)
-- the follow-up's turns go on after the run's four; its checkpoint takes the reverted 3's number
trace.flush(run_id)
out.numbered_lines = vim.tbl_filter(function(l)
  return l:find('## Turn', 1, true) ~= nil or l:find('checkpoint', 1, true) ~= nil
end, vim.api.nvim_buf_get_lines(trace.buffer(run_id), 0, -1, false))

vim.cmd('DriverOS accept 2')
H.wait(20000, function()
  local b = vim.fn.bufnr(root .. '/plan.txt')
  return b ~= -1 and vim.api.nvim_buf_is_loaded(b) and vim.api.nvim_buf_get_lines(b, 0, 1, false)[1] == 'plan'
end, 'the accepted edit in the buffers')
vim.cmd('silent! wall')
out.calc = table.concat(vim.api.nvim_buf_get_lines(buf, 0, -1, false), '\n')
out.four_on_disk = vim.fn.filereadable(root .. '/four.txt') == 1
H.finish(out)
