---@mod driveros.attach Per-client setup when driveros-lsp attaches to a buffer.

local M = {}

---A byte column of line `lnum` in the code units of `encoding` (the client's negotiated
---position encoding).
---@param bufnr integer
---@param lnum integer
---@param col integer
---@param encoding string
---@return integer
local function units(bufnr, lnum, col, encoding)
  if encoding == 'utf-8' or col <= 0 then
    return math.max(col, 0)
  end
  local line = vim.api.nvim_buf_get_lines(bufnr, lnum, lnum + 1, false)[1] or ''
  return vim.str_utfindex(line, encoding, math.min(col, #line), false)
end

---LSP diagnostics of every namespace on the lines of `range` (Neovim 0.11 would send the
---driveros client only the diagnostics it published itself, and it publishes few). Another
---server's diagnostic keeps that server's position encoding in `user_data.lsp`, so each
---range is rebuilt from the diagnostic's byte columns in `encoding` (the driveros client's).
---@param bufnr integer
---@param range lsp.Range
---@param own lsp.Diagnostic[]|nil
---@param encoding string|nil the driveros client's offset_encoding (default utf-16)
---@return lsp.Diagnostic[]
function M.context_diagnostics(bufnr, range, own, encoding)
  encoding = encoding or 'utf-16'
  local out, seen = {}, {}
  local function add(d)
    local key = table.concat({ d.range.start.line, d.range.start.character, d.message or '' }, ':')
    if not seen[key] then
      seen[key] = true
      table.insert(out, d)
    end
  end
  for _, d in ipairs(own or {}) do
    add(d)
  end
  local first, last = range.start.line, range['end'].line
  for _, d in ipairs(vim.diagnostic.get(bufnr)) do
    local d_last = d.end_lnum or d.lnum
    if d.lnum <= last and d_last >= first then
      local item = vim.deepcopy(vim.lsp.diagnostic.from({ d })[1])
      local end_lnum = d.end_lnum or d.lnum
      item.range = {
        start = { line = d.lnum, character = units(bufnr, d.lnum, d.col, encoding) },
        ['end'] = { line = end_lnum, character = units(bufnr, end_lnum, d.end_col or d.col, encoding) },
      }
      add(item)
    end
  end
  return out
end

---@param client vim.lsp.Client
---@param _ integer bufnr
function M.on_attach(client, _)
  if client._driveros_wrapped then
    return
  end
  client._driveros_wrapped = true
  local request = client.request
  ---@diagnostic disable-next-line: duplicate-set-field
  client.request = function(self, method, params, handler, bufnr)
    if method == 'textDocument/codeAction' and type(params) == 'table' and params.context and params.range then
      local buf = vim._resolve_bufnr(bufnr)
      params.context.diagnostics =
        M.context_diagnostics(buf, params.range, params.context.diagnostics, self.offset_encoding)
    end
    return request(self, method, params, handler, bufnr)
  end
end

return M
