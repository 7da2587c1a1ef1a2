-- :DriverOS /name args and :DriverOS / (picker) start runs of the user's custom commands.
local H = dofile(vim.env.DRIVEROS_TEST_LUA .. '/helpers.lua')
local root = vim.fn.getcwd()
local out = { steps = {} }

local buf = H.start(root .. '/calc.py')

vim.cmd('DriverOS /explain calc.py briefly')
H.wait(20000, function()
  return #require('driveros.runs').order >= 1
end, 'a run of /explain')
out.first_task = require('driveros.runs').by_id[require('driveros.runs').order[1]].task

-- the picker: vim.ui.select and vim.ui.input answered as a user would
vim.ui.select = function(items, opts, on_choice)
  out.picked_from = vim.tbl_map(function(c)
    return opts.format_item(c)
  end, items)
  on_choice(items[1])
end
vim.ui.input = function(opts, on_done)
  out.input_prompt = opts.prompt
  on_done('util.py')
end
vim.cmd('DriverOS /')
H.wait(20000, function()
  return #require('driveros.runs').order >= 2
end, 'a run from the picker')
local second = nil
for _, id in ipairs(require('driveros.runs').order) do
  local task = require('driveros.runs').by_id[id].task
  if task ~= out.first_task then
    second = task
  end
end
out.second_task = second
H.finish(out)
