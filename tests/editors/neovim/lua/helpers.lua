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

---Set the plugin up against $DRIVEROS_LSP (the scripted model's provider, policy approval,
---no window opened on its own; `opts` overrides any of it), enable it, open `file` and wait
---for its client. Returns the buffer.
---@param file string
---@param opts? table
---@return integer
function H.start(file, opts)
  require('driveros').setup(vim.tbl_deep_extend('force', {
    cmd = { vim.env.DRIVEROS_LSP, '--stdio' },
    settings = { provider = 'openai', approval = 'policy' },
    trace = { auto_open = false },
    review = { auto_open = false },
  }, opts or {}))
  vim.lsp.enable('driveros')
  return H.open(file)
end

---Open `file` and wait for its driveros client to initialize. Returns the buffer.
---@param file string
---@return integer
function H.open(file)
  vim.cmd('edit ' .. vim.fn.fnameescape(file))
  local buf = vim.api.nvim_get_current_buf()
  H.wait(20000, function()
    local c = require('driveros.server').client(buf)
    return c ~= nil and c.initialized
  end, 'the driveros client to initialize')
  return buf
end

---Wait for the first run to start, then up to `ms` until `done(run)` holds; returns its id.
---@param ms integer
---@param done fun(run: table): boolean
---@param what string
---@return string
function H.first_run(ms, done, what)
  local runs = require('driveros.runs')
  H.wait(10000, function()
    return #runs.order > 0
  end, 'the run to start')
  local run_id = runs.order[1]
  H.wait(ms, function()
    local run = runs.by_id[run_id]
    return run ~= nil and done(run)
  end, what)
  return run_id
end

return H
