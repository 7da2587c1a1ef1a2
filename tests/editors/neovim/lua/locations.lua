-- A semantic tool's answer in the trace: its places are lines; <CR> on one jumps there;
-- :DriverOS locations puts them in the quickfix list.
local H = dofile(vim.env.DRIVEROS_TEST_LUA .. '/helpers.lua')
local root = vim.fn.getcwd()
local out = {}

H.start(root .. '/pkg/calc.py')

local runs = require('driveros.runs')
vim.cmd('DriverOS run find the references')
local run_id = H.first_run(120000, function(run)
  return run.status == 'finished'
end, 'the run to finish')

local trace = require('driveros.trace')
trace.open(run_id)
trace.flush(run_id)
local tbuf = trace.buffer(run_id)
local lines = vim.api.nvim_buf_get_lines(tbuf, 0, -1, false)
out.place_lines, out.outcome = {}, runs.by_id[run_id].outcome
local target
for i, l in ipairs(lines) do
  if l:find('→', 1, true) then
    table.insert(out.place_lines, vim.trim(l))
    if l:find('use.py:5:', 1, true) then
      target = i
    end
  end
end
if not target then
  H.finish({ error = 'no location line for use.py:5', lines = lines })
end

-- <CR> on the line, in the trace window
local twin = vim.fn.win_findbuf(tbuf)[1]
vim.api.nvim_set_current_win(twin)
vim.api.nvim_win_set_cursor(twin, { target, 0 })
vim.api.nvim_feedkeys(vim.keycode('<CR>'), 'x', false)
local cur = vim.api.nvim_win_get_cursor(0)
out.jumped = { file = vim.api.nvim_buf_get_name(0), line = cur[1], col = cur[2] }
out.jumped_from_trace = vim.api.nvim_get_current_win() ~= twin

vim.cmd('DriverOS locations')
local qf = vim.fn.getqflist({ title = 1, items = 1 })
out.qf_title = qf.title
out.qf = {}
local texts = {}
for _, item in ipairs(qf.items) do
  table.insert(out.qf, { file = vim.api.nvim_buf_get_name(item.bufnr), lnum = item.lnum, col = item.col })
  table.insert(texts, item.text)
end
out.qf_text = table.concat(texts, '\n')
H.finish(out)
