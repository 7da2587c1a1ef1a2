-- context_diagnostics in real Neovim: a buffer line with é, 中 and 😀 before `os`, one
-- diagnostic from a utf-16 server (its LSP form kept in user_data.lsp) and one from a linter
-- (byte columns only); the ranges handed to driveros in each encoding.
local H = dofile(vim.env.DRIVEROS_TEST_LUA .. '/helpers.lua')
local line = 's = "é中😀"; import os'
local buf = vim.api.nvim_create_buf(false, true)
vim.api.nvim_buf_set_lines(buf, 0, -1, false, { line })
local col = assert(line:find('os', 1, true)) - 1 -- byte column
local utf16 = vim.str_utfindex(line, 'utf-16', col)
vim.diagnostic.set(vim.api.nvim_create_namespace('pyright'), buf, {
  {
    lnum = 0, col = col, end_col = col + 2, message = 'from a utf-16 server', source = 'pyright',
    user_data = { lsp = {
      range = { start = { line = 0, character = utf16 }, ['end'] = { line = 0, character = utf16 + 2 } },
      message = 'from a utf-16 server', source = 'pyright',
    } },
  },
})
vim.diagnostic.set(vim.api.nvim_create_namespace('linter'), buf, {
  { lnum = 0, col = col, end_col = col + 2, message = 'from a linter', source = 'lint' },
})
local attach = require('driveros.attach')
local range = { start = { line = 0, character = 0 }, ['end'] = { line = 0, character = 0 } }
local out = {}
for _, enc in ipairs({ 'utf-8', 'utf-16', 'utf-32' }) do
  out[enc] = attach.context_diagnostics(buf, range, nil, enc)
end
H.finish({ line = line, by_encoding = out })
