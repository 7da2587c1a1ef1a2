---@mod driveros.attach Per-client setup when driveros-lsp attaches to a buffer.

local M = {}

---LSP diagnostics of every namespace on the lines of `range` (Neovim 0.11 would send the
---driveros client only the diagnostics it published itself, and it publishes few).
---@param bufnr integer
---@param range lsp.Range
---@param own lsp.Diagnostic[]|nil
---@return lsp.Diagnostic[]
function M.context_diagnostics(bufnr, range, own)
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
  local found = {}
  for _, d in ipairs(vim.diagnostic.get(bufnr)) do
    local d_last = d.end_lnum or d.lnum
    if d.lnum <= last and d_last >= first then
      table.insert(found, d)
    end
  end
  for _, d in ipairs(vim.lsp.diagnostic.from(found)) do
    add(d)
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
      params.context.diagnostics = M.context_diagnostics(buf, params.range, params.context.diagnostics)
    end
    return request(self, method, params, handler, bufnr)
  end
end

return M
