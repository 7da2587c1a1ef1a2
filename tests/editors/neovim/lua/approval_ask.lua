-- Approval `ask` in a real Neovim: the server's window/showMessageRequest reaches
-- vim.ui.select through the plugin; "Allow for this run" is answered once for two commands.
local H = dofile(vim.env.DRIVEROS_TEST_LUA .. '/helpers.lua')
local out = { selects = {} }
vim.ui.select = function(items, opts, on_choice)
  local titles = {}
  for _, item in ipairs(items) do
    table.insert(titles, opts.format_item and opts.format_item(item) or tostring(item))
  end
  table.insert(out.selects, { kind = opts.kind, prompt = opts.prompt, items = titles })
  -- answer later, as a picker plugin would
  vim.defer_fn(function()
    for _, item in ipairs(items) do
      if type(item) == 'table' and item.title == vim.env.DRIVEROS_ANSWER then
        return on_choice(item)
      end
    end
    on_choice(nil)
  end, 10)
end
-- network on: an open tier, where commands outside the allowlist are asked
require('driveros').options.settings = { network = true }
vim.lsp.enable('driveros')
H.open(vim.env.DRIVEROS_FILE)
local approval = require('driveros.approval')
out.other_is_question = approval.is_question({ message = 'Restart?', actions = { { title = 'Yes' } } })
vim.cmd('DriverOS run run the probe twice')
local run_id = H.first_run(90000, function(run)
  return run.status == 'finished'
end, 'the run to finish')
out.approvals = {}
for _, ev in ipairs(require('driveros.runs').by_id[run_id].events) do
  if ev.type == 'approval' then
    table.insert(out.approvals, ev)
  end
end
local trace = require('driveros.trace')
trace.flush(run_id)
out.trace_lines = vim.api.nvim_buf_get_lines(trace.buffer(run_id), 0, -1, false)
H.finish(out)
