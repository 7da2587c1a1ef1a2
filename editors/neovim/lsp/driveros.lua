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
  -- the project root (a marker above the file); a file outside any project uses its own
  -- directory, so `nvim /tmp/x.py` works too (the server logs the root it uses)
  root_dir = function(bufnr, on_dir)
    local root = require('driveros.server').root_dir(bufnr)
    if root then
      on_dir(root)
    end
  end,
  -- ask for the live trace notifications (docs/protocol.md, Initialization)
  capabilities = vim.tbl_deep_extend('force', vim.lsp.protocol.make_client_capabilities(), {
    experimental = { [protocol.EXPERIMENTAL_TRACE] = true },
  }),
  handlers = {
    [protocol.NOTIFY_TRACE] = function(err, params, ctx)
      require('driveros.trace').on_trace(err, params, ctx)
    end,
    [protocol.NOTIFY_PROPOSAL] = function(err, params, ctx)
      require('driveros.review').on_proposal(err, params, ctx)
    end,
    -- approval questions through vim.ui.select; other requests: Neovim's own handler
    ['window/showMessageRequest'] = function(err, params, ctx, config)
      return require('driveros.approval').on_request(err, params, ctx, config)
    end,
  },
  before_init = function(params, config)
    -- no settings: send none (an empty Lua table would go out as a JSON list)
    local settings = require('driveros').options.settings
    if type(settings) == 'table' and next(settings) ~= nil then
      config.settings = { [protocol.SETTINGS_SECTION] = settings }
      params.initializationOptions = settings
    else
      params.initializationOptions = nil
    end
  end,
}
