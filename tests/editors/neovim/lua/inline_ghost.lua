-- Ghost text in a real Neovim 0.11: after a keystroke the suggestion appears as an extmark
-- at the cursor, and the <Tab> accept mapping inserts it.
local H = dofile(vim.env.DRIVEROS_TEST_LUA .. '/helpers.lua')
local root = vim.fn.getcwd()
local out = {}

require('driveros').setup({
  cmd = { vim.env.DRIVEROS_LSP, '--stdio' },
  settings = {
    provider = 'openai',
    inlineCompletion = { api = 'completions', model = 'scripted-model', debounceMs = 0 },
  },
  trace = { auto_open = false },
})
vim.lsp.enable('driveros')
vim.cmd('edit ' .. vim.fn.fnameescape(root .. '/add.py'))
local buf = vim.api.nvim_get_current_buf()
H.wait(20000, function()
  local c = require('driveros.server').client(buf)
  return c ~= nil and c.initialized and require('driveros.inline').state[buf] ~= nil
end, 'the driveros client to initialize with inline completion')
local inline = require('driveros.inline')
out.mapping = vim.fn.maparg('<Tab>', 'i', false, true).desc

-- A headless Neovim reads no keys (Insert mode would wait on stdin): the keystroke is made
-- as Insert mode makes it (the text, the cursor one past the end, TextChangedI), and the
-- <Tab> mapping's own function is called.
vim.o.virtualedit = 'onemore'
vim.api.nvim_buf_set_lines(buf, 1, 2, false, { '    r' })
vim.api.nvim_win_set_cursor(0, { 2, 5 })
vim.api.nvim_exec_autocmds('TextChangedI', { buffer = buf })
H.wait(20000, function()
  return inline.visible(buf)
end, 'the ghost text')
local marks = vim.api.nvim_buf_get_extmarks(buf, inline.ns, 0, -1, { details = true })
out.ghost = {}
for _, m in ipairs(marks) do
  table.insert(out.ghost, {
    row = m[2],
    col = m[3],
    text = m[4].virt_text and m[4].virt_text[1][1] or nil,
    pos = m[4].virt_text_pos,
  })
end
out.line_with_ghost = vim.api.nvim_buf_get_lines(buf, 1, 2, false)[1]
vim.fn.maparg('<Tab>', 'i', false, true).callback()
out.cursor = vim.api.nvim_win_get_cursor(0)
out.lines = vim.api.nvim_buf_get_lines(buf, 0, -1, false)
out.visible_after = inline.visible(buf)
-- the acceptance command reached the server: wait for its count file
local counts = vim.env.XDG_STATE_HOME .. '/driveros/inline-acceptance.json'
vim.wait(10000, function()
  return vim.uv.fs_stat(counts) ~= nil
end, 50)
out.counts_written = vim.uv.fs_stat(counts) ~= nil
H.finish(out)
