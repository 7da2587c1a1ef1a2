---@mod driveros.trace The live trace buffer of a run.
---@brief [[
---Events from `driveros/trace` are turned into blocks of lines. Redraws are batched on a
---timer (at most `trace.max_updates_per_second`), so a fast stream never blocks the UI.
---Tool results are indented one level deeper than their call and folded (foldmethod=indent).
---The places a semantic tool's answer names (the trace's `locations`) are `→ path:line:col`
---lines under its result: <CR> on one opens the file there; `:DriverOS locations` puts the
---latest ones in the quickfix list.
---@brief ]]

local runs = require('driveros.runs')

local M = {}

local ns = vim.api.nvim_create_namespace('driveros.trace')

---@class driveros.TraceView
---@field bufnr integer
---@field blocks {lines: string[], hl: string|nil, key: string|nil, prefix: string|nil, raw: string|nil}[]
---@field rendered integer number of blocks already written to the buffer (all before are final)
---@field line_of integer[] first buffer line of each rendered block
---@field scheduled boolean

---@type table<string, driveros.TraceView>
local views = {}

---Checkpoint events a revert dropped (weak keys: they go with their run's events).
---@type table<table, boolean>
local reverted = setmetatable({}, { __mode = 'k' })

---The LSP Locations a tool_result event's notification carried (weak keys, as above).
---@type table<table, lsp.Location[]>
local located = setmetatable({}, { __mode = 'k' })

---The driveros client's position encoding (the one the locations are counted in).
---@return string
local function encoding()
  local client = require('driveros.server').client()
  return client and client.offset_encoding or 'utf-16'
end

---@param pos any
---@return lsp.Position?
local function position(pos)
  if type(pos) ~= 'table' or type(pos.line) ~= 'number' or type(pos.character) ~= 'number' then
    return nil
  end
  return { line = pos.line, character = pos.character }
end

---The well-formed `file:` Locations of a notification, as plain tables (exactly the fields of
---the payload schema: vim.lsp.util would read others, such as a LocationLink's).
---@param raw any
---@return lsp.Location[]
local function locations_of(raw)
  local out = {}
  for _, loc in ipairs(type(raw) == 'table' and raw or {}) do
    local range = type(loc) == 'table' and loc.range or nil
    local first, last = position(type(range) == 'table' and range.start), position(type(range) == 'table' and range['end'])
    if type(loc.uri) == 'string' and vim.startswith(loc.uri, 'file:') and first and last then
      table.insert(out, { uri = loc.uri, range = { start = first, ['end'] = last } })
    end
  end
  return out
end

---`path:line:col` of a location, the path relative to the current directory when under it.
---@param loc lsp.Location
---@return string
local function place(loc)
  local ok, fname = pcall(vim.uri_to_fname, loc.uri)
  local path = ok and vim.fn.fnamemodify(fname, ':.') or loc.uri
  return ('%s:%d:%d'):format(path, loc.range.start.line + 1, loc.range.start.character + 1)
end

local function indent(text, prefix)
  local out = {}
  for _, line in ipairs(vim.split(text or '', '\n', { plain = true })) do
    table.insert(out, prefix .. line)
  end
  return out
end

local function short_json(value, max)
  local ok, text = pcall(vim.json.encode, value or vim.empty_dict())
  text = ok and text or vim.inspect(value)
  if #text > max then
    text = text:sub(1, max - 1) .. '…'
  end
  return text
end

local function tokens(usage)
  if type(usage) ~= 'table' then
    return ''
  end
  local cost = type(usage.cost_usd) == 'number' and ('$%.4f'):format(usage.cost_usd) or 'cost unknown'
  return ('%d in / %d out, %s'):format(usage.input_tokens or 0, usage.output_tokens or 0, cost)
end

---Append or extend blocks for one event.
---@param view driveros.TraceView
---@param ev table
local function add_event(view, ev)
  local t = ev.type
  local last = view.blocks[#view.blocks]
  if (t == 'text' or t == 'thinking') and ev.delta ~= false and last and last.key == t .. ':' .. tostring(ev.turn) then
    -- extend the streaming block in place
    last.raw = last.raw .. ev.text
    last.lines = indent(last.raw, last.prefix)
    return
  end
  local block
  if t == 'run_started' then
    block = { lines = { ('# Run %s: %s'):format(ev.run_id, ev.task or ''),
      ('  provider %s · model %s · sandbox %s'):format(ev.provider or '?', ev.model or '?', ev.sandbox or '?') },
      hl = 'Title' }
  elseif t == 'turn_started' then
    block = { lines = { ('## Turn %d'):format(ev.turn or 0) }, hl = 'Title' }
  elseif t == 'thinking' then
    block = { lines = indent(ev.text, '  ~ '), hl = 'Comment', key = 'thinking:' .. tostring(ev.turn), prefix = '  ~ ', raw = ev.text }
  elseif t == 'text' then
    block = { lines = indent(ev.text, '  '), key = 'text:' .. tostring(ev.turn), prefix = '  ', raw = ev.text }
  elseif t == 'tool_call' then
    block = { lines = { ('  ▶ %s %s'):format(ev.name, short_json(ev.arguments, 160)) }, hl = 'Function' }
  elseif t == 'tool_result' then
    local head = ('    %s %s (%d ms)%s'):format(ev.ok and '✓' or '✗', ev.name, math.floor(ev.duration_ms or 0),
      ev.truncated and ' [truncated]' or '')
    local lines = { head }
    vim.list_extend(lines, indent(ev.output, '      '))
    local locs = located[ev] or {}
    local first = #lines + 1
    for _, loc in ipairs(locs) do
      table.insert(lines, '      → ' .. place(loc))
    end
    block = { lines = lines, hl = ev.ok and 'DiagnosticOk' or 'DiagnosticError', locs = #locs > 0 and locs or nil, loc_from = first }
  elseif t == 'diagnostics' then
    local lines = { ('  ◆ diagnostics: %d total, %d new, %d fixed'):format(ev.total or 0, #(ev.new or {}), #(ev.fixed or {})) }
    for _, d in ipairs(ev.new or {}) do
      table.insert(lines, ('      + %s:%d %s'):format(d.path, d.line or 0, d.message))
    end
    for _, d in ipairs(ev.fixed or {}) do
      table.insert(lines, ('      - %s:%d %s'):format(d.path, d.line or 0, d.message))
    end
    block = { lines = lines, hl = 'DiagnosticInfo' }
  elseif t == 'approval' then
    -- who decided, and for how long: asked (you, the timeout, the cancel) or the policy
    local who = {}
    if ev.asked == true then
      table.insert(who, 'asked')
    end
    if type(ev.answered_by) == 'string' then
      table.insert(who, 'by ' .. ev.answered_by)
    end
    if ev.scope == 'run' then
      table.insert(who, 'for this run')
    elseif ev.scope == 'once' then
      table.insert(who, 'once')
    end
    local detail = #who > 0 and (' (%s)'):format(table.concat(who, ', ')) or ''
    local hl = (ev.decision == 'allowed' or ev.decision == 'approved') and 'DiagnosticOk' or 'DiagnosticWarn'
    block = { lines = { ('  ⊘ %s %s%s: %s'):format(ev.decision, ev.name, detail, ev.reason or '') }, hl = hl }
  elseif t == 'stuck' then
    local lines = { ('  ! stuck (%s): %s'):format(ev.detector, ev.detail) }
    vim.list_extend(lines, indent(table.concat(ev.evidence or {}, '\n'), '      '))
    block = { lines = lines, hl = 'DiagnosticError' }
  elseif t == 'edit' then
    block = { lines = { ('  ✎ %s %s'):format(ev.action or 'modify', ev.path) }, hl = 'DiffChange' }
  elseif t == 'memory' then
    block = { lines = { ('  ◇ memory %s (%d) %s'):format(ev.action, ev.count or 0, ev.detail or '') }, hl = 'Comment' }
  elseif t == 'turn_finished' then
    block = { lines = { ('  … turn %d: %d ms, %s'):format(ev.turn or 0, math.floor(ev.duration_ms or 0), tokens(ev.usage)) }, hl = 'Comment' }
  elseif t == 'checkpoint' and reverted[ev] then
    -- its number is free again: the next turn that changes a file takes it
    block = { lines = { ('  ◇ checkpoint %d (turn %d): %s — reverted'):format(ev.checkpoint or 0, ev.turn or 0,
      table.concat(ev.files or {}, ', ')) }, hl = 'Comment' }
  elseif t == 'checkpoint' then
    local files = table.concat(ev.files or {}, ', ')
    block = {
      lines = { ('  ◆ checkpoint %d (turn %d): %s — :DriverOS accept %d · :DriverOS revert %d'):format(
        ev.checkpoint or 0, ev.turn or 0, files, ev.checkpoint or 0, ev.checkpoint or 0) },
      hl = 'DiffText',
    }
  elseif t == 'proposal' then
    local n = #(ev.files or {})
    local lines = { ('» proposal: %d file%s — :DriverOS review'):format(n, n == 1 and '' or 's') }
    for _, f in ipairs(ev.files or {}) do
      table.insert(lines, ('    %s %s'):format(f.action or 'modify', f.path))
    end
    block = { lines = lines, hl = 'DiffAdd' }
  elseif t == 'result' then
    local turns = ev.turns or 0
    local lines = { ('= %s (exit %d) · verified: %s · %d turn%s · %s · %d ms'):format(ev.outcome, ev.exit_code or 0,
      ev.verified and 'yes' or 'no', turns, turns == 1 and '' or 's', tokens(ev.usage), math.floor(ev.duration_ms or 0)) }
    if ev.answer and ev.answer ~= '' then
      vim.list_extend(lines, indent(ev.answer, '  '))
    end
    if ev.error then
      table.insert(lines, '  error: ' .. ev.error)
    end
    block = { lines = lines, hl = ev.exit_code == 0 and 'DiagnosticOk' or 'DiagnosticWarn' }
  else
    block = { lines = { ('  · %s'):format(t or '?') } }
  end
  table.insert(view.blocks, block)
end

---Write blocks that changed since the last flush.
---@param view driveros.TraceView
local function flush(view)
  view.scheduled = false
  if not vim.api.nvim_buf_is_valid(view.bufnr) then
    return
  end
  -- the last rendered block may still be streaming: re-render from it
  local from = math.max(view.rendered, 1)
  local start_line = view.line_of[from] or vim.api.nvim_buf_line_count(view.bufnr)
  if view.rendered == 0 then
    start_line = 0
  end
  local lines, hls = {}, {}
  local line = start_line
  for i = from, #view.blocks do
    local b = view.blocks[i]
    view.line_of[i] = line
    for _, l in ipairs(b.lines) do
      -- fields such as the task or an error may span lines: never hand nvim a newline
      for _, part in ipairs(vim.split(l, '\n', { plain = true })) do
        table.insert(lines, part)
        if b.hl then
          table.insert(hls, { line, b.hl })
        end
        line = line + 1
      end
    end
  end
  vim.bo[view.bufnr].modifiable = true
  vim.api.nvim_buf_set_lines(view.bufnr, start_line, -1, false, lines)
  vim.bo[view.bufnr].modifiable = false
  vim.api.nvim_buf_clear_namespace(view.bufnr, ns, start_line, -1)
  for _, h in ipairs(hls) do
    vim.api.nvim_buf_set_extmark(view.bufnr, ns, h[1], 0, { line_hl_group = h[2] })
  end
  view.rendered = #view.blocks
  for _, win in ipairs(vim.fn.win_findbuf(view.bufnr)) do
    if vim.api.nvim_win_get_cursor(win)[1] >= start_line then
      pcall(vim.api.nvim_win_set_cursor, win, { vim.api.nvim_buf_line_count(view.bufnr), 0 })
    end
  end
end

---@param view driveros.TraceView
local function schedule(view)
  if view.scheduled then
    return
  end
  view.scheduled = true
  local hz = math.max(require('driveros').options.trace.max_updates_per_second, 1)
  vim.defer_fn(function()
    flush(view)
  end, math.floor(1000 / hz))
end

---@param run_id string
---@return driveros.TraceView
local function view_for(run_id)
  local view = views[run_id]
  if view and vim.api.nvim_buf_is_valid(view.bufnr) then
    return view
  end
  local bufnr = vim.api.nvim_create_buf(false, true)
  vim.api.nvim_buf_set_name(bufnr, 'driveros://trace/' .. run_id)
  vim.bo[bufnr].buftype = 'nofile'
  vim.bo[bufnr].bufhidden = 'hide'
  vim.bo[bufnr].swapfile = false
  vim.bo[bufnr].filetype = 'driveros-trace'
  vim.bo[bufnr].modifiable = false
  vim.bo[bufnr].shiftwidth = 2
  view = { bufnr = bufnr, blocks = {}, rendered = 0, line_of = {}, scheduled = false }
  views[run_id] = view
  vim.keymap.set('n', '<CR>', function()
    if not M.jump(run_id) then
      vim.cmd('normal! j')
    end
  end, { buffer = bufnr, desc = 'DriverOS: open the location under the cursor' })
  for _, ev in ipairs(runs.ensure(run_id).events) do
    add_event(view, ev)
  end
  schedule(view)
  return view
end

---Handler for the `driveros/trace` notification.
function M.on_trace(_, params, _)
  if type(params) ~= 'table' or type(params.event) ~= 'table' then
    return
  end
  local ev = params.event
  local run = runs.ensure(params.runId, ev.type == 'run_started' and ev.task or nil)
  table.insert(run.events, ev)
  local locs = locations_of(params.locations)
  if #locs > 0 then
    located[ev] = locs
    run.locations = { name = ev.name, items = locs }
  end
  if ev.type == 'run_started' then
    run.proposal_traced = nil -- a run resumed with feedback proposes again
  elseif ev.type == 'result' then
    run.status = 'finished'
    run.outcome = ev.outcome
  end
  local view = views[params.runId]
  if not view and ev.type == 'run_started' and require('driveros').options.trace.auto_open then
    -- runs started from a code action open their trace too
    vim.schedule(function()
      M.open(params.runId)
    end)
  end
  if view and vim.api.nvim_buf_is_valid(view.bufnr) then
    add_event(view, ev)
    schedule(view)
  end
  if ev.type == 'result' then
    vim.api.nvim_exec_autocmds('User', { pattern = 'DriverOSRunFinished', data = { runId = params.runId, event = ev } })
  end
end

---The checkpoints after `to` left the run (`:DriverOS revert`): their lines say so and offer
---no command, since the run numbers its next checkpoint `to + 1` again.
---@param run_id string
---@param to integer
function M.reverted(run_id, to)
  local run = runs.by_id[run_id]
  if not run then
    return
  end
  for _, ev in ipairs(run.events) do
    if ev.type == 'checkpoint' and (ev.checkpoint or 0) > to then
      reverted[ev] = true
    end
  end
  local view = views[run_id]
  if view and vim.api.nvim_buf_is_valid(view.bufnr) then
    view.blocks, view.rendered, view.line_of = {}, 0, {}
    for _, ev in ipairs(run.events) do
      add_event(view, ev)
    end
    schedule(view)
  end
end

---Show a run's proposal in its trace (called for each `driveros/proposal`): the trace never
---carries one, the notification is its one shape. Once per proposal: the notifications the
---server sends again as the review goes on (fewer files pending, settled) add nothing.
---@param params table the notification's params (runId, state, files, ...)
function M.on_proposal(params)
  local run = runs.ensure(params.runId)
  local files = params.files or {}
  if run.proposal_traced or params.state ~= 'proposed' or #files == 0 then
    return
  end
  run.proposal_traced = true
  local ev = { type = 'proposal', run_id = params.runId, files = files }
  table.insert(run.events, ev)
  local view = views[params.runId]
  if view and vim.api.nvim_buf_is_valid(view.bufnr) then
    add_event(view, ev)
    schedule(view)
  end
end

---The location on the trace buffer's line `row` (0-based), if it shows one.
---@param view driveros.TraceView
---@param row integer
---@return lsp.Location?
local function location_at(view, row)
  for i = #view.blocks, 1, -1 do
    local top = view.line_of[i]
    if top and top <= row then
      local b = view.blocks[i]
      local k = row - top + 1 - (b.loc_from or 0)
      return b.locs and b.locs[k + 1] or nil
    end
  end
  return nil
end

---Open the location under the cursor of a trace buffer, in the previous window (a new split
---when the trace is the only one). Returns false when the line shows none.
---@param run_id string
---@return boolean
function M.jump(run_id)
  local view = views[run_id]
  if not view then
    return false
  end
  local loc = location_at(view, vim.api.nvim_win_get_cursor(0)[1] - 1)
  if not loc then
    return false
  end
  local trace_win = vim.api.nvim_get_current_win()
  vim.cmd('wincmd p')
  if vim.api.nvim_get_current_win() == trace_win then
    vim.cmd('aboveleft split')
  end
  vim.lsp.util.show_document(loc, encoding(), { focus = true })
  return true
end

---Put a run's latest located answer in the quickfix list (and open it).
---@param run_id? string the latest run with locations when nil
---@return boolean
function M.quickfix(run_id)
  local run = run_id and runs.by_id[run_id] or nil
  if not run then
    for i = #runs.order, 1, -1 do
      local r = runs.by_id[runs.order[i]]
      if r and r.locations then
        run = r
        break
      end
    end
  end
  if not run or not run.locations then
    vim.notify('DriverOS: no run has located an answer yet', vim.log.levels.WARN)
    return false
  end
  local items = vim.lsp.util.locations_to_items(run.locations.items, encoding())
  vim.fn.setqflist({}, ' ', { title = ('DriverOS %s: %s'):format(run.id, run.locations.name or ''), items = items })
  vim.cmd('botright copen')
  return true
end

---The trace buffer of a run (created on demand), without opening a window.
---@param run_id string
---@return integer bufnr
function M.buffer(run_id)
  return view_for(run_id).bufnr
end

---Render everything pending now (tests and :DriverOS trace use it).
---@param run_id string
function M.flush(run_id)
  local view = views[run_id]
  if view then
    flush(view)
  end
end

---Open (or focus) the trace window of a run.
---@param run_id string
function M.open(run_id)
  local view = view_for(run_id)
  local wins = vim.fn.win_findbuf(view.bufnr)
  if #wins > 0 then
    return
  end
  local opts = require('driveros').options.trace
  local cur = vim.api.nvim_get_current_win()
  if opts.split == 'tab' then
    vim.cmd('tabnew')
  elseif opts.split == 'horizontal' then
    vim.cmd(('botright %dsplit'):format(opts.size))
  else
    vim.cmd(('botright %dvsplit'):format(opts.size))
  end
  local win = vim.api.nvim_get_current_win()
  vim.api.nvim_win_set_buf(win, view.bufnr)
  vim.wo[win].foldmethod = 'indent'
  vim.wo[win].foldlevel = 2
  vim.wo[win].wrap = false
  vim.wo[win].number = false
  if opts.split ~= 'tab' then
    vim.api.nvim_set_current_win(cur)
  end
end

return M
