---@mod driveros.runs The client-side view of the server's runs (what the trace and review show).

local M = {}

---@class driveros.Run
---@field id string
---@field task string
---@field status 'running'|'finished'
---@field outcome string|nil
---@field events table[] every trace event received, in order
---@field proposal table[]|nil files of the latest proposal
---@field council table|nil the council's verdict on the proposal (setting `council`)
---@field proposal_traced boolean|nil the trace shows the current proposal already
---@field locations {name: string, items: lsp.Location[]}|nil the latest located tool answer
---@field started number

---@type table<string, driveros.Run>
M.by_id = {}
---@type string[]
M.order = {}

---@param id string
---@param task? string
---@return driveros.Run
function M.ensure(id, task)
  local run = M.by_id[id]
  if not run then
    run = { id = id, task = task or '', status = 'running', events = {}, started = vim.uv.now() }
    M.by_id[id] = run
    table.insert(M.order, id)
  elseif task and task ~= '' then
    run.task = task
  end
  return run
end

---@return driveros.Run|nil
function M.latest()
  local id = M.order[#M.order]
  return id and M.by_id[id] or nil
end

---@param pred? fun(run: driveros.Run): boolean
---@return driveros.Run[]
function M.list(pred)
  local out = {}
  for _, id in ipairs(M.order) do
    local run = M.by_id[id]
    if not pred or pred(run) then
      table.insert(out, run)
    end
  end
  return out
end

---One line describing a run, for pickers.
---@param run driveros.Run
---@return string
function M.describe(run)
  local state = run.outcome or run.status
  local files = run.proposal
      and (' · %d file%s proposed'):format(#run.proposal, #run.proposal == 1 and '' or 's')
    or ''
  return ('%s  [%s]  %s%s'):format(run.id, state, run.task, files)
end

return M
