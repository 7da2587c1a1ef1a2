-- Feed the trace handler a recorded-shape event stream and check the rendered buffer.
local H = dofile(vim.env.DRIVEROS_TEST_LUA .. '/helpers.lua')
local trace = require('driveros.trace')
local events = vim.json.decode(io.open(vim.env.EVENTS):read('*a'))
require('driveros').setup({ trace = { auto_open = false } })
trace.open('r1')
for _, ev in ipairs(events) do
  trace.on_trace(nil, { runId = 'r1', event = ev }, {})
end
trace.flush('r1')
local buf = trace.buffer('r1')
local win = vim.fn.win_findbuf(buf)[1]
local folded = {}
vim.api.nvim_win_call(win, function()
  for l = 1, vim.api.nvim_buf_line_count(buf) do
    if vim.fn.foldclosed(l) ~= -1 then
      table.insert(folded, l)
    end
  end
end)
local marks = vim.api.nvim_buf_get_extmarks(buf, -1, 0, -1, { details = true })
local hl = {}
for _, m in ipairs(marks) do
  hl[tostring(m[2] + 1)] = m[4].line_hl_group
end
H.finish({
  lines = vim.api.nvim_buf_get_lines(buf, 0, -1, false),
  folded = folded,
  hl = hl,
  run = require('driveros.runs').by_id['r1'],
  modifiable = vim.bo[buf].modifiable,
})
