-- DriverOS: the :DriverOS command. The code lives in lua/driveros and loads on first use.
if vim.g.loaded_driveros then
  return
end
vim.g.loaded_driveros = 1

vim.api.nvim_create_user_command('DriverOS', function(opts)
  require('driveros.commands').dispatch(opts)
end, {
  nargs = '*',
  bang = true,
  desc = 'DriverOS agent: run, fix, cancel, review, trace, runs',
  complete = function(arglead, cmdline, pos)
    return require('driveros.commands').complete(arglead, cmdline, pos)
  end,
})

-- Code actions: Neovim sends a client only its own diagnostics; driveros fixes everyone's.
vim.api.nvim_create_autocmd('LspAttach', {
  group = vim.api.nvim_create_augroup('driveros.attach', { clear = true }),
  callback = function(args)
    local client = vim.lsp.get_client_by_id(args.data.client_id)
    if client and client.name == 'driveros' then
      require('driveros.attach').on_attach(client, args.buf)
      require('driveros.inline').attach(client, args.buf)
    end
  end,
})
