---@mod driveros.review Reviewing an agent proposal file by file.
---@brief [[
---Neovim 0.11 does not confirm annotated workspace edits, so the plugin reviews proposals
---itself: for each file it shows the change (native diff mode between the workspace file and
---the proposal's `newText`; the unified diff when the server sent no text) and asks through `vim.ui.select` (so picker
---plugins apply). Accepted files are applied by the server through `workspace/applyEdit`:
---buffers change, undo works, nothing is written to disk until you `:write`.
---@brief ]]

local protocol = require('driveros.protocol')
local runs = require('driveros.runs')
local server = require('driveros.server')

local M = {}

local CHOICES = {
  'Accept',
  'Reject',
  'Reject with feedback…',
  'Accept all remaining',
  'Reject all remaining',
}

---Handler for the `driveros/proposal` notification.
function M.on_proposal(_, params, _)
  if type(params) ~= 'table' or not params.runId then
    return
  end
  local run = runs.ensure(params.runId)
  run.proposal = params.files or {}
  require('driveros.trace').on_proposal(params)
  vim.api.nvim_exec_autocmds('User', { pattern = 'DriverOSProposal', data = params })
  if #run.proposal == 0 then
    run.proposal = nil -- settled: every file was accepted or rejected
    return
  end
  local council = ''
  if type(params.council) == 'table' then
    run.council = params.council
    if params.council.verdict then
      council = (' · council: %s (%s)'):format(params.council.verdict, params.council.summary or '')
    elseif params.council.error then
      council = ' · council: no verdict'
    end
  end
  local n = #run.proposal
  vim.notify(('DriverOS: run %s proposes changes to %d file%s%s — :DriverOS review'):format(
    params.runId, n, n == 1 and '' or 's', council), vim.log.levels.INFO)
  if require('driveros').options.review.auto_open then
    vim.schedule(function()
      M.start(params.runId)
    end)
  end
end

---@param file table
---@return string
local function label(file)
  return ('%s %s'):format(file.action or 'modify', file.path or file.uri or '?')
end

---@param v any
---@return string|nil
local function text(v)
  return type(v) == 'string' and v or nil
end

---The lines of a text (a final newline ends the last line, it does not start another).
---@param s string
---@return string[]
local function lines(s)
  if s == '' then
    return {}
  end
  return vim.split(s:gsub('\n$', ''), '\n', { plain = true })
end

---A read-only scratch buffer in the current window.
---@param name string
---@param content string[]
---@param filetype? string
---@return integer
local function scratch(name, content, filetype)
  local buf = vim.api.nvim_get_current_buf()
  vim.bo[buf].buftype = 'nofile'
  vim.bo[buf].bufhidden = 'wipe'
  vim.bo[buf].swapfile = false
  vim.api.nvim_buf_set_lines(buf, 0, -1, false, content)
  pcall(vim.api.nvim_buf_set_name, buf, name)
  if filetype then
    vim.bo[buf].filetype = filetype
  end
  vim.bo[buf].modifiable = false
  return buf
end

---The file a change starts from: the workspace file (a rename's `oldPath`), nil for a create.
---@param file table
---@return string|nil
local function source_path(file)
  if file.action == 'create' or not file.uri then
    return nil
  end
  local target = vim.uri_to_fname(file.uri)
  local old = text(file.oldPath)
  if old and file.path and target:sub(-#file.path) == file.path then
    return target:sub(1, #target - #file.path) .. old
  end
  return target
end

---What the user has now: the loaded buffer (saved or not), else the file on disk; nil when
---neither exists. Reading never loads a buffer.
---@param path string
---@return string[]|nil
local function current_lines(path)
  local buf = vim.fn.bufnr(path)
  if buf ~= -1 and vim.api.nvim_buf_is_loaded(buf) then
    return vim.api.nvim_buf_get_lines(buf, 0, -1, false)
  end
  if vim.uv.fs_stat(path) == nil then
    return nil
  end
  local ok, content = pcall(vim.fn.readfile, path)
  return ok and content or nil
end

---Show one file's change in a new tab page: Neovim's diff mode between the current text and
---the proposed `newText` (empty for a delete), or the unified diff when the server sent no
---text (a binary or too large file). Returns a function that closes it.
---@param run_id string
---@param file table
---@return fun()
local function show(run_id, file)
  vim.cmd('tabnew')
  local tab = vim.api.nvim_get_current_tabpage()
  local new = text(file.newText)
  if file.action == 'delete' then
    new = ''
  end
  local src = source_path(file)
  local current = src == nil and {} or current_lines(src)
  if new and not file.binary and current then
    local ft = vim.filetype.match({ filename = file.path or '' })
    scratch(('driveros://current/%s/%s'):format(run_id, file.path), current, ft)
    vim.cmd('diffthis')
    vim.cmd('vnew')
    scratch(('driveros://proposal/%s/%s'):format(run_id, file.path), lines(new), ft)
    vim.cmd('diffthis')
  else
    local body = file.diff ~= nil and file.diff ~= vim.NIL and file.diff ~= '' and file.diff
      or ('(no textual diff for %s)'):format(label(file))
    scratch(('driveros://diff/%s/%s'):format(run_id, file.path or '?'), lines(body), 'diff')
  end
  return function()
    if vim.api.nvim_tabpage_is_valid(tab) and #vim.api.nvim_list_tabpages() > 1 then
      vim.cmd('diffoff!')
      vim.cmd(('tabclose %d'):format(vim.api.nvim_tabpage_get_number(tab)))
    end
  end
end

---Send the decisions to the server: accept first (its applyEdit changes the buffers), then reject.
---@param run_id string
---@param accepted string[]
---@param rejected string[]
---@param feedback string[]
local function submit(run_id, accepted, rejected, feedback)
  local function reject()
    if #rejected == 0 then
      return
    end
    local arg = { runId = run_id, paths = rejected }
    if #feedback > 0 then
      arg.feedback = table.concat(feedback, '\n')
    end
    server.exec(protocol.CMD_REVIEW_REJECT, arg, function(err)
      if not err then
        vim.api.nvim_exec_autocmds('User', { pattern = 'DriverOSReviewed', data = { runId = run_id, rejected = rejected } })
      end
    end)
  end
  if #accepted > 0 then
    server.exec(protocol.CMD_REVIEW_ACCEPT, { runId = run_id, paths = accepted }, function(err)
      if not err then
        vim.api.nvim_exec_autocmds('User', { pattern = 'DriverOSReviewed', data = { runId = run_id, accepted = accepted } })
      end
      reject()
    end)
  else
    reject()
  end
end

---Review a run's proposal file by file.
---@param run_id string
function M.start(run_id)
  local run = runs.by_id[run_id]
  if not run or not run.proposal or #run.proposal == 0 then
    vim.notify(('DriverOS: run %s has no proposal to review'):format(run_id), vim.log.levels.WARN)
    return
  end
  local files = run.proposal
  local accepted, rejected, feedback = {}, {}, {}
  local function step(i, forced)
    if i > #files then
      run.proposal = nil
      submit(run_id, accepted, rejected, feedback)
      return
    end
    local file = files[i]
    local path = file.path or file.uri
    if forced == 'accept' then
      table.insert(accepted, path)
      return step(i + 1, forced)
    elseif forced == 'reject' then
      table.insert(rejected, path)
      return step(i + 1, forced)
    end
    local close = show(run_id, file)
    vim.ui.select(CHOICES, { prompt = ('Review %d/%d: %s'):format(i, #files, label(file)) }, function(choice)
      close()
      if choice == 'Accept' then
        table.insert(accepted, path)
        step(i + 1)
      elseif choice == 'Reject' then
        table.insert(rejected, path)
        step(i + 1)
      elseif choice == 'Reject with feedback…' then
        vim.ui.input({ prompt = ('Feedback on %s: '):format(path) }, function(text)
          table.insert(rejected, path)
          if text and vim.trim(text) ~= '' then
            table.insert(feedback, ('%s: %s'):format(path, text))
          end
          step(i + 1)
        end)
      elseif choice == 'Accept all remaining' then
        step(i, 'accept')
      elseif choice == 'Reject all remaining' then
        step(i, 'reject')
      else
        vim.notify('DriverOS: review paused — :DriverOS review to continue', vim.log.levels.INFO)
      end
    end)
  end
  step(1)
end

return M
