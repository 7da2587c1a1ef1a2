---@mod driveros.commands The :DriverOS user command.

local protocol = require('driveros.protocol')
local server = require('driveros.server')
local runs = require('driveros.runs')

local M = {}

local SUBCOMMANDS = { 'run', 'fix', 'cancel', 'review', 'trace', 'runs', 'followup', 'accept', 'revert', 'locations' }

---@param run_id string
---@param task string
local function started(run_id, task)
  runs.ensure(run_id, task)
  if require('driveros').options.trace.auto_open then
    require('driveros.trace').open(run_id)
  end
  vim.notify(('DriverOS: run %s started'):format(run_id), vim.log.levels.INFO)
end

---Start a run for a task; prompts with vim.ui.input when `task` is empty.
---@param task? string
function M.run(task)
  local bufnr = vim.api.nvim_get_current_buf()
  local function go(text)
    if not text or vim.trim(text) == '' then
      return
    end
    local arg = { task = text }
    if vim.bo[bufnr].buftype == '' and vim.api.nvim_buf_get_name(bufnr) ~= '' then
      arg.uri = vim.uri_from_bufnr(bufnr)
    end
    server.exec(protocol.CMD_AGENT_START, arg, function(err, result)
      if not err and result and result.runId then
        started(result.runId, text)
      end
    end, bufnr)
  end
  if task and vim.trim(task) ~= '' then
    go(task)
  else
    vim.ui.input({ prompt = 'DriverOS task: ' }, go)
  end
end

---Run a custom command (docs/extending.md): `name` with `args` as typed; an empty name
---picks one of the server's list with vim.ui.select, then asks for its arguments.
---@param name string
---@param args string
function M.custom(name, args)
  local bufnr = vim.api.nvim_get_current_buf()
  local function go(cmd, text)
    local task = vim.trim('/' .. cmd .. ' ' .. (text or ''))
    server.exec(protocol.CMD_AGENT_COMMAND, { name = cmd, arguments = text or '' }, function(err, result)
      if not err and result and type(result.runId) == 'string' then
        started(result.runId, task)
      end
    end, bufnr)
  end
  if name ~= '' then
    go(name, args)
    return
  end
  server.exec(protocol.CMD_AGENT_COMMAND, {}, function(err, result)
    if err or not result then
      return
    end
    local items = result.commands or {}
    if #items == 0 then
      vim.notify('DriverOS: no custom commands: add NAME.md to ~/.config/driveros/commands/',
        vim.log.levels.WARN)
      return
    end
    vim.ui.select(items, {
      prompt = 'DriverOS command',
      format_item = function(c)
        return '/' .. c.name .. (c.description ~= '' and ('  ' .. c.description) or '')
      end,
    }, function(choice)
      if not choice then
        return
      end
      local hint = choice.argumentHint ~= '' and (' ' .. choice.argumentHint) or ''
      vim.ui.input({ prompt = '/' .. choice.name .. hint .. ': ' }, function(text)
        if text then
          go(choice.name, text)
        end
      end)
    end)
  end, bufnr)
end

---Ask the agent to fix the diagnostics under the cursor (all in the buffer with `all`).
---@param all boolean
function M.fix(all)
  local bufnr = vim.api.nvim_get_current_buf()
  local opts = {}
  if not all then
    opts.lnum = vim.api.nvim_win_get_cursor(0)[1] - 1
  end
  local diags = vim.diagnostic.get(bufnr, opts)
  if #diags == 0 then
    vim.notify('DriverOS: no diagnostics ' .. (all and 'in this buffer' or 'under the cursor'),
      vim.log.levels.WARN)
    return
  end
  local lsp_diags = vim.lsp.diagnostic.from(diags)
  local task = all and ('Fix all diagnostics in ' .. vim.fn.expand('%:t')) or diags[1].message
  local arg = { uri = vim.uri_from_bufnr(bufnr), diagnostics = lsp_diags }
  if all then
    arg.all = true
  end
  server.exec(protocol.CMD_AGENT_FIX, arg,
    function(err, result)
      if not err and result and result.runId then
        started(result.runId, task)
      end
    end, bufnr)
end

---@param prompt string
---@param items driveros.Run[]
---@param on_choice fun(run: driveros.Run)
local function pick_run(prompt, items, on_choice)
  if #items == 0 then
    vim.notify('DriverOS: no matching runs', vim.log.levels.WARN)
    return
  end
  if #items == 1 then
    on_choice(items[1])
    return
  end
  vim.ui.select(items, { prompt = prompt, format_item = runs.describe }, function(run)
    if run then
      on_choice(run)
    end
  end)
end

---@param run_id? string
function M.cancel(run_id)
  local function go(id)
    server.exec(protocol.CMD_AGENT_CANCEL, { runId = id }, function(err)
      if not err then
        vim.notify(('DriverOS: run %s canceled'):format(id), vim.log.levels.INFO)
      end
    end)
  end
  if run_id and run_id ~= '' then
    go(run_id)
    return
  end
  pick_run('Cancel which run?', runs.list(function(r)
    return r.status == 'running'
  end), function(run)
    go(run.id)
  end)
end

---@param run_id? string
function M.review(run_id)
  local review = require('driveros.review')
  if run_id and run_id ~= '' then
    review.start(run_id)
    return
  end
  pick_run('Review which proposal?', runs.list(function(r)
    return r.proposal ~= nil and #r.proposal > 0
  end), function(run)
    review.start(run.id)
  end)
end

---@param run_id? string
function M.trace(run_id)
  local trace = require('driveros.trace')
  if run_id and run_id ~= '' then
    trace.open(run_id)
    return
  end
  pick_run('Show the trace of which run?', runs.list(), function(run)
    trace.open(run.id)
  end)
end

---List the server's runs and open the chosen one's trace.
function M.runs()
  server.exec(protocol.CMD_AGENT_LIST, {}, function(err, result)
    if err then
      return
    end
    local items = {}
    for _, r in ipairs((result and result.runs) or {}) do
      local run = runs.ensure(r.runId, r.task)
      run.status = r.state == 'running' and 'running' or 'finished'
      run.outcome = r.outcome or run.outcome
      table.insert(items, run)
    end
    if #items == 0 then
      vim.notify('DriverOS: no runs yet', vim.log.levels.INFO)
      return
    end
    vim.ui.select(items, { prompt = 'DriverOS runs', format_item = runs.describe }, function(run)
      if run then
        require('driveros.trace').open(run.id)
      end
    end)
  end)
end

---@param opts table nvim_create_user_command callback argument
function M.dispatch(opts)
  local sub = opts.fargs[1]
  local rest = table.concat(vim.list_slice(opts.fargs, 2), ' ')
  if sub == 'run' then
    M.run(rest)
  elseif sub == 'fix' then
    M.fix(opts.bang)
  elseif sub == 'cancel' then
    M.cancel(rest)
  elseif sub == 'review' then
    M.review(rest)
  elseif sub == 'trace' then
    M.trace(rest)
  elseif sub == 'runs' then
    M.runs()
  elseif sub == 'locations' then
    require('driveros.trace').quickfix(rest ~= '' and rest or nil)
  elseif sub == 'followup' or sub == 'accept' or sub == 'revert' then
    require('driveros.iterate')[sub](rest)
  elseif sub and vim.startswith(sub, '/') then
    M.custom(sub:sub(2), rest)
  else
    vim.notify('DriverOS: usage: :DriverOS {' .. table.concat(SUBCOMMANDS, '|') .. '|/NAME} [args]',
      vim.log.levels.ERROR)
  end
end

---@return string[]
function M.complete(arglead, cmdline, _)
  local words = vim.split(cmdline, '%s+', { trimempty = true })
  if #words <= 1 or (#words == 2 and arglead ~= '') then
    return vim.tbl_filter(function(s)
      return vim.startswith(s, arglead)
    end, SUBCOMMANDS)
  end
  local sub = words[2]
  if sub == 'cancel' or sub == 'review' or sub == 'trace' or sub == 'locations' then
    return vim.tbl_filter(function(id)
      return vim.startswith(id, arglead)
    end, runs.order)
  end
  return {}
end

return M
