local H = dofile(vim.env.DRIVEROS_TEST_LUA .. '/helpers.lua')
vim.cmd('checkhealth driveros')
H.finish({ lines = vim.api.nvim_buf_get_lines(0, 0, -1, false) })
