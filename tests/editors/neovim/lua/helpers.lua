-- Shared helpers for the headless Neovim tests: load the plugin, capture notifications,
-- wait for conditions, and write a JSON result for pytest to read.
local H = {}

vim.opt.rtp:prepend(vim.env.DRIVEROS_PLUGIN)
vim.cmd('filetype on')
vim.cmd('runtime plugin/driveros.lua')

H.notes = {}
vim.notify = function(msg, level)
  table.insert(H.notes, { msg = msg, level = level })
end

function H.wait(ms, cond, what)
  local ok = vim.wait(ms, cond, 20)
  if not ok then
    H.finish({ error = 'timed out waiting for ' .. what, notes = H.notes })
  end
end

function H.finish(result)
  result.notes = result.notes or H.notes
  local f = assert(io.open(vim.env.RESULT, 'w'))
  f:write(vim.json.encode(result))
  f:close()
  vim.cmd('qa!')
end

return H
