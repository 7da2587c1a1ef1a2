local H = dofile(vim.env.DRIVEROS_TEST_LUA .. '/helpers.lua')
vim.lsp.enable('driveros')
vim.cmd('edit ' .. vim.fn.fnameescape(vim.fn.getcwd() .. '/main.py'))
H.wait(5000, function()
  for _, n in ipairs(H.notes) do
    if n.msg:find('driveros%-lsp was not found') then
      return true
    end
  end
  return false
end, 'the missing-server message')
local before = #H.notes
vim.cmd('DriverOS run do something')
H.finish({ clients = #vim.lsp.get_clients({ name = 'driveros' }), after_run = vim.list_slice(H.notes, before + 1) })
