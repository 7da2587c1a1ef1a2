-- Which server command the plugin picks when the workspace carries its own .venv/bin/driveros-lsp:
-- untrusted first, then after `:trust` of that file, then after the file changed.
local H = dofile(vim.env.DRIVEROS_TEST_LUA .. '/helpers.lua')
local server = require('driveros.server')
local root = vim.fn.getcwd()
local candidate = vim.fs.joinpath(root, '.venv', 'bin', 'driveros-lsp')
local out = {}
local cmd, err = server.resolve_cmd(root)
out.untrusted = { cmd = cmd, err = err }
vim.cmd('edit ' .. vim.fn.fnameescape(candidate))
vim.cmd('trust')
cmd, err = server.resolve_cmd(root)
out.trusted = { cmd = cmd, err = err }
local fh = assert(io.open(candidate, 'a'))
fh:write('# changed after it was trusted\n')
fh:close()
cmd, err = server.resolve_cmd(root)
out.changed = { cmd = cmd, err = err }
H.finish(out)
