---@mod driveros DriverOS for Neovim
---@brief [[
---A thin client for driveros-lsp: the agent runs in the server, this plugin shows its
---trace, reviews its proposals and forwards commands. No agent logic lives here.
---@brief ]]

local M = {}

---@class driveros.TraceOptions
---@field split 'vertical'|'horizontal'|'tab' where the trace window opens
---@field auto_open boolean open the trace when a run starts
---@field size integer width (vertical) or height (horizontal) of the split
---@field max_updates_per_second integer redraw rate cap while events stream

---@class driveros.ReviewOptions
---@field auto_open boolean start the review as soon as a proposal arrives

---@class driveros.Options
---@field cmd? string[] command that starts the server (default: found automatically)
---@field settings table server settings, sent as initializationOptions and on change
---@field trace driveros.TraceOptions
---@field review driveros.ReviewOptions

---@type driveros.Options
local defaults = {
  cmd = nil,
  settings = {},
  trace = { split = 'vertical', auto_open = true, size = 60, max_updates_per_second = 20 },
  review = { auto_open = false },
}

---@type driveros.Options
M.options = vim.deepcopy(defaults)

---Configure the plugin. Optional: `vim.lsp.enable('driveros')` works without it.
---@param opts? driveros.Options|table
function M.setup(opts)
  M.options = vim.tbl_deep_extend('force', vim.deepcopy(defaults), opts or {})
  -- an empty Lua table would be sent as a JSON list: no settings is an empty object
  local settings = M.options.settings
  local empty = type(settings) ~= 'table' or next(settings) == nil
  local section = require('driveros.protocol').SETTINGS_SECTION
  local override = {
    settings = empty and vim.empty_dict() or { [section] = settings },
    init_options = empty and vim.empty_dict() or settings,
  }
  if M.options.cmd then
    override.cmd = M.options.cmd
  end
  vim.lsp.config('driveros', override)
  for _, client in ipairs(vim.lsp.get_clients({ name = 'driveros' })) do
    client.settings = override.settings
    client:notify('workspace/didChangeConfiguration', {
      settings = empty and vim.empty_dict() or { [section] = settings },
    })
  end
end

return M
