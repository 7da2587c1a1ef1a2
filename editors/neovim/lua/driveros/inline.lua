---@mod driveros.inline Ghost text from textDocument/inlineCompletion.
---@brief [[
---Neovim 0.12 has `vim.lsp.inline_completion`: when it is there, it is enabled for the
---driveros client and <Tab> accepts through it. Neovim 0.11 has no inline completion API:
---this module asks the server while you type in Insert mode, shows the first suggestion as
---ghost text (extmarks: the first line inline at the cursor, the rest as virtual lines; a
---next-edit suggestion elsewhere is shown at the end of its line) and maps
---  accept  <Tab>   (falls through to a plain <Tab> when nothing is shown)
---  next    <M-]>   (the next suggestion of the list)
---  dismiss <C-]>
---Accepting applies the item as a text edit (undoable) and runs the item's command, which
---reports the acceptance to the server (counted locally only). No completion logic lives here:
---debounce, cancellation, context and post-processing are the server's.
---@brief ]]

local M = {}

local METHOD = 'textDocument/inlineCompletion'

---@class driveros.InlineOptions
---@field enabled boolean ask for suggestions while typing
---@field debounce_ms integer wait this long after a keystroke before asking (the server
---  debounces too; this only saves requests)
---@field keymaps { accept: string|false, next: string|false, dismiss: string|false }

---@type driveros.InlineOptions
local defaults = {
  enabled = true,
  debounce_ms = 30,
  keymaps = { accept = '<Tab>', next = '<M-]>', dismiss = '<C-]>' },
}

M.ns = vim.api.nvim_create_namespace('driveros.inline')

---@class driveros.InlineState
---@field items table[] the items of the last answer
---@field index integer the item shown
---@field tick integer b:changedtick the answer belongs to
---@field client_id integer
---@field request_id integer|nil the request in flight
---@field timer uv.uv_timer_t|nil

---@type table<integer, driveros.InlineState>
M.state = {}

---@return driveros.InlineOptions
function M.options()
  local user = require('driveros').options.inline
  return vim.tbl_deep_extend('force', vim.deepcopy(defaults), type(user) == 'table' and user or {})
end

---@param bufnr integer
---@return driveros.InlineState|nil
local function state(bufnr)
  return M.state[bufnr]
end

---Clear the ghost text of `bufnr` (the answer is forgotten too).
---@param bufnr? integer
function M.dismiss(bufnr)
  bufnr = bufnr or vim.api.nvim_get_current_buf()
  if vim.api.nvim_buf_is_valid(bufnr) then
    vim.api.nvim_buf_clear_namespace(bufnr, M.ns, 0, -1)
  end
  local st = state(bufnr)
  if st then
    st.items = {}
    st.index = 1
  end
end

---The byte column of `character` (in the client's position encoding) on line `row`.
local function byte_col(bufnr, row, character, encoding)
  local line = vim.api.nvim_buf_get_lines(bufnr, row, row + 1, false)[1] or ''
  if encoding == 'utf-8' then
    return math.min(character, #line)
  end
  local ok, col = pcall(vim.str_byteindex, line, encoding, character, false)
  return ok and col or #line
end

---The text of an item (a string or a snippet StringValue).
local function insert_text(item)
  local text = item.insertText
  if type(text) == 'table' then
    text = text.value
  end
  return type(text) == 'string' and text or ''
end

---Where an item applies, in bytes: start row/col and end row/col.
local function item_span(bufnr, item, encoding)
  local cursor = vim.api.nvim_win_get_cursor(0)
  local row, col = cursor[1] - 1, cursor[2]
  if not item.range then
    return row, col, row, col
  end
  local s, e = item.range.start, item.range['end']
  return s.line, byte_col(bufnr, s.line, s.character, encoding), e.line,
    byte_col(bufnr, e.line, e.character, encoding)
end

---Draw the current item of `bufnr`.
---@param bufnr integer
function M.render(bufnr)
  vim.api.nvim_buf_clear_namespace(bufnr, M.ns, 0, -1)
  local st = state(bufnr)
  local item = st and st.items[st.index]
  if not item then
    return
  end
  local client = vim.lsp.get_client_by_id(st.client_id)
  local encoding = client and client.offset_encoding or 'utf-16'
  local srow, scol, erow, ecol = item_span(bufnr, item, encoding)
  local text = insert_text(item)
  local cursor = vim.api.nvim_win_get_cursor(0)
  local crow, ccol = cursor[1] - 1, cursor[2]
  if srow == crow and scol <= ccol and erow == crow and ecol <= ccol then
    -- a completion at the cursor: the text typed since its start is already there
    local typed = vim.api.nvim_buf_get_text(bufnr, srow, scol, crow, ccol, {})[1] or ''
    if text:sub(1, #typed) ~= typed then
      return
    end
    local lines = vim.split(text:sub(#typed + 1), '\n', { plain = true })
    if lines[1] ~= '' then
      vim.api.nvim_buf_set_extmark(bufnr, M.ns, crow, ccol, {
        virt_text = { { lines[1], 'Comment' } },
        virt_text_pos = 'inline',
      })
    end
    if #lines > 1 then
      local virt_lines = {}
      for i = 2, #lines do
        table.insert(virt_lines, { { lines[i], 'Comment' } })
      end
      vim.api.nvim_buf_set_extmark(bufnr, M.ns, crow, ccol, { virt_lines = virt_lines })
    end
  else
    -- a next-edit suggestion elsewhere: say what it would replace, at the end of its line
    local old = table.concat(vim.api.nvim_buf_get_text(bufnr, srow, scol, erow, ecol, {}), '\n')
    vim.api.nvim_buf_set_extmark(bufnr, M.ns, srow, 0, {
      virt_text = { { ('  ⇥ %s → %s'):format(old, text:gsub('\n', '⏎')), 'Comment' } },
      virt_text_pos = 'eol',
    })
  end
end

---Whether a suggestion is shown in `bufnr`.
---@param bufnr? integer
---@return boolean
function M.visible(bufnr)
  bufnr = bufnr or vim.api.nvim_get_current_buf()
  return #vim.api.nvim_buf_get_extmarks(bufnr, M.ns, 0, -1, { limit = 1 }) > 0
end

---Ask the server for suggestions at the cursor (cancels the request still in flight).
---@param bufnr? integer
function M.request(bufnr)
  bufnr = bufnr or vim.api.nvim_get_current_buf()
  local st = state(bufnr)
  if not st then
    return
  end
  local client = vim.lsp.get_client_by_id(st.client_id)
  if not client then
    return
  end
  if st.request_id then
    client:cancel_request(st.request_id)
    st.request_id = nil
  end
  local params = vim.lsp.util.make_position_params(0, client.offset_encoding)
  params.context = { triggerKind = 2 } -- Automatic
  local tick = vim.api.nvim_buf_get_changedtick(bufnr)
  local ok, id = client:request(METHOD, params, function(err, result)
    if st.request_id == id then
      st.request_id = nil
    end
    if err or not vim.api.nvim_buf_is_valid(bufnr) then
      return
    end
    if vim.api.nvim_buf_get_changedtick(bufnr) ~= tick then
      return -- typed on meanwhile: a newer request is coming
    end
    local items = result and (result.items or result) or {}
    st.items, st.index, st.tick = items, 1, tick
    M.render(bufnr)
  end, bufnr)
  if ok then
    st.request_id = id
  end
end

---Accept the suggestion shown in `bufnr`: apply it, move the cursor after it, report it.
---@param bufnr? integer
---@return boolean accepted
function M.accept(bufnr)
  bufnr = bufnr or vim.api.nvim_get_current_buf()
  local st = state(bufnr)
  local item = st and st.items[st.index]
  if not item or not M.visible(bufnr) then
    return false
  end
  local client = vim.lsp.get_client_by_id(st.client_id)
  local encoding = client and client.offset_encoding or 'utf-16'
  local srow, scol, erow, ecol = item_span(bufnr, item, encoding)
  local cursor = vim.api.nvim_win_get_cursor(0)
  local crow, ccol = cursor[1] - 1, cursor[2]
  if srow == crow and erow == crow and ecol < ccol then
    ecol = ccol -- the item covers what was typed since it was made
  end
  local text = insert_text(item)
  M.dismiss(bufnr)
  local lines = vim.split(text, '\n', { plain = true })
  vim.api.nvim_buf_set_text(bufnr, srow, scol, erow, ecol, lines)
  local last_row = srow + #lines - 1
  local last_col = (#lines == 1 and scol or 0) + #lines[#lines]
  pcall(vim.api.nvim_win_set_cursor, 0, { last_row + 1, last_col })
  if client and item.command then
    client:exec_cmd(item.command, { bufnr = bufnr })
  end
  return true
end

---Show the next suggestion of the list.
---@param bufnr? integer
function M.next(bufnr)
  bufnr = bufnr or vim.api.nvim_get_current_buf()
  local st = state(bufnr)
  if st and #st.items > 1 then
    st.index = st.index % #st.items + 1
    M.render(bufnr)
  end
end

---Debounced request after a change in Insert mode.
---@param bufnr integer
function M.on_change(bufnr)
  local st = state(bufnr)
  if not st then
    return
  end
  vim.api.nvim_buf_clear_namespace(bufnr, M.ns, 0, -1)
  if st.timer then
    st.timer:stop()
  else
    st.timer = assert(vim.uv.new_timer())
  end
  st.timer:start(M.options().debounce_ms, 0, vim.schedule_wrap(function()
    if vim.api.nvim_buf_is_valid(bufnr) and vim.api.nvim_get_current_buf() == bufnr then
      M.request(bufnr)
    end
  end))
end

local function map(bufnr, lhs, fn, fallback, desc)
  if not lhs then
    return
  end
  -- not an <expr> mapping: accepting changes the buffer, which an expression may not
  vim.keymap.set('i', lhs, function()
    if not fn(bufnr) and fallback then
      vim.api.nvim_feedkeys(vim.keycode(lhs), 'n', false)
    end
  end, { buffer = bufnr, desc = desc })
end

---Start ghost text for `client` in `bufnr` (the LspAttach of the driveros client).
---@param client vim.lsp.Client
---@param bufnr integer
function M.attach(client, bufnr)
  local opts = M.options()
  if not opts.enabled or M.state[bufnr] then
    return
  end
  if not client:supports_method(METHOD, bufnr) then
    return
  end
  local native = vim.lsp.inline_completion
  if native and native.enable then -- Neovim >= 0.12
    native.enable(true, { bufnr = bufnr, client_id = client.id })
    map(bufnr, opts.keymaps.accept, function()
      return native.get()
    end, true, 'DriverOS: accept the suggestion')
    return
  end
  M.state[bufnr] = { items = {}, index = 1, tick = -1, client_id = client.id }
  local group = vim.api.nvim_create_augroup('driveros.inline.' .. bufnr, { clear = true })
  vim.api.nvim_create_autocmd('TextChangedI', {
    group = group,
    buffer = bufnr,
    callback = function()
      M.on_change(bufnr)
    end,
  })
  vim.api.nvim_create_autocmd({ 'InsertLeave', 'BufLeave' }, {
    group = group,
    buffer = bufnr,
    callback = function()
      M.dismiss(bufnr)
    end,
  })
  vim.api.nvim_create_autocmd('LspDetach', {
    group = group,
    buffer = bufnr,
    callback = function(args)
      if args.data and args.data.client_id == client.id then
        M.dismiss(bufnr)
        M.state[bufnr] = nil
        pcall(vim.api.nvim_del_augroup_by_id, group)
      end
    end,
  })
  local keys = opts.keymaps
  map(bufnr, keys.accept, M.accept, true, 'DriverOS: accept the suggestion')
  map(bufnr, keys.next, function(b)
    M.next(b)
    return true
  end, false, 'DriverOS: next suggestion')
  map(bufnr, keys.dismiss, function(b)
    local shown = M.visible(b)
    M.dismiss(b)
    return shown
  end, true, 'DriverOS: dismiss the suggestion')
end

return M
