-- driveros-lsp as a Neovim 0.11 `vim.lsp.Config`: enable with `vim.lsp.enable('driveros')`.
local protocol = require('driveros.protocol')

---@type vim.lsp.Config
return {
  cmd = function(dispatchers)
    local cmd, err = require('driveros.server').resolve_cmd(vim.fn.getcwd())
    if not cmd then
      vim.notify('DriverOS: ' .. err, vim.log.levels.ERROR)
      error(err, 0)
    end
    return vim.lsp.rpc.start(cmd, dispatchers)
  end,
  root_markers = { '.git', 'pyproject.toml', 'package.json', 'go.mod', 'Cargo.toml' },
  -- ask for the live trace notifications (docs/protocol.md, Initialization)
  capabilities = vim.tbl_deep_extend('force', vim.lsp.protocol.make_client_capabilities(), {
    experimental = { [protocol.EXPERIMENTAL_TRACE] = true },
  }),
  settings = {},
  init_options = {},
  handlers = {
    [protocol.NOTIFY_TRACE] = function(err, params, ctx)
      require('driveros.trace').on_trace(err, params, ctx)
    end,
    [protocol.NOTIFY_PROPOSAL] = function(err, params, ctx)
      require('driveros.review').on_proposal(err, params, ctx)
    end,
  },
  before_init = function(params, config)
    local settings = require('driveros').options.settings
    if next(settings) ~= nil then
      config.settings = settings
      params.initializationOptions = settings
    end
  end,
}
