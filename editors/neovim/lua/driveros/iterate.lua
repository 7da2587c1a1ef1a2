---@mod driveros.iterate Iterating on a run: follow up, accept through a checkpoint, revert.
---`:DriverOS followup [TASK]`, `:DriverOS accept [N]`, `:DriverOS revert N` act on the most
---recent run with a proposal (docs/neovim.md, "Iterating on a run").

local protocol = require('driveros.protocol')
local server = require('driveros.server')
local runs = require('driveros.runs')

local M = {}

---The most recent run with a proposal, or nil (with a message).
---@return table?
local function proposed()
  for i = #runs.order, 1, -1 do
    local run = runs.by_id[runs.order[i]]
    if run and run.proposal ~= nil and #run.proposal > 0 then
      return run
    end
  end
  vim.notify('DriverOS: no run has a proposal', vim.log.levels.WARN)
  return nil
end

---@param text string
---@return integer?
local function number(text)
  local n = tonumber(vim.trim(text or ''))
  if n == nil or n < 0 or n ~= math.floor(n) then
    return nil
  end
  return n
end

---A new turn on the latest proposed run; asks for the task with vim.ui.input when empty.
---@param task? string
function M.followup(task)
  local run = proposed()
  if not run then
    return
  end
  local function go(text)
    if not text or vim.trim(text) == '' then
      return
    end
    server.exec(protocol.CMD_AGENT_FOLLOW_UP, { runId = run.id, task = text }, function(err)
      if not err then
        run.status = 'running'
        run.proposal = nil
        vim.notify(('DriverOS: run %s follows up'):format(run.id), vim.log.levels.INFO)
      end
    end)
  end
  if task and vim.trim(task) ~= '' then
    go(task)
  else
    vim.ui.input({ prompt = 'DriverOS follow up: ' }, go)
  end
end

---Accept the latest proposal, up to checkpoint N when given.
---@param arg? string
function M.accept(arg)
  local run = proposed()
  if not run then
    return
  end
  local params = { runId = run.id }
  if arg and vim.trim(arg) ~= '' then
    local n = number(arg)
    if n == nil then
      vim.notify('DriverOS: usage: :DriverOS accept [N] (a checkpoint number)', vim.log.levels.ERROR)
      return
    end
    params.through = n
  end
  server.exec(protocol.CMD_AGENT_ACCEPT, params, function(err)
    if not err then
      vim.api.nvim_exec_autocmds('User', { pattern = 'DriverOSReviewed', data = { runId = run.id, through = params.through } })
    end
  end)
end

---Drop the checkpoints after N from the latest proposal.
---@param arg string
function M.revert(arg)
  local n = number(arg)
  if n == nil then
    vim.notify('DriverOS: usage: :DriverOS revert N (a checkpoint number)', vim.log.levels.ERROR)
    return
  end
  local run = proposed()
  if not run then
    return
  end
  server.exec(protocol.CMD_AGENT_REVERT, { runId = run.id, to = n }, function(err)
    if not err then
      require('driveros.trace').reverted(run.id, n)
      vim.notify(('DriverOS: run %s reverted to checkpoint %d'):format(run.id, n), vim.log.levels.INFO)
    end
  end)
end

return M
