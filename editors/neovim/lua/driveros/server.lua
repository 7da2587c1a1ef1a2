---@mod driveros.server Finding and talking to driveros-lsp.

local protocol = require('driveros.protocol')

local M = {}

local MISSING = 'driveros-lsp was not found. Install it (`pip install driveros` or `make venv` in '
  .. 'the repository), put it on PATH, or set `cmd` in require("driveros").setup({...}).'

---Whether Neovim's trust database (`:trust`, |vim.secure|) allows `path` with its current
---content. Never prompts: an unknown or changed file is simply not trusted.
---@param path string
---@return boolean
function M.trusted_file(path)
  local real = vim.uv.fs_realpath(path)
  local db = io.open(vim.fs.joinpath(vim.fn.stdpath('state'), 'trust'), 'r')
  if not real or not db then
    return false
  end
  local entries = db:read('*a')
  db:close()
  local fh = io.open(real, 'rb')
  if not fh then
    return false
  end
  local hash = vim.fn.sha256(fh:read('*a'))
  fh:close()
  for line in entries:gmatch('[^\n]+') do
    local h, p = line:match('^(%S+) (.+)$')
    if p == real and h == hash then
      return true
    end
  end
  return false
end

---Find the server command: configured cmd, then `<root>/.venv/bin/driveros-lsp` when Neovim
---trusts that file (`:trust`), then PATH. A repository's own `.venv` is its code: opening a
---cloned repository must not run it until the user says so.
---@param root? string
---@return string[]|nil cmd
---@return string|nil err
function M.resolve_cmd(root)
  local opts = require('driveros').options
  if opts.cmd and #opts.cmd > 0 then
    return opts.cmd, nil
  end
  local untrusted = nil
  for _, dir in ipairs({ root, vim.fn.getcwd() }) do
    if dir then
      local candidate = vim.fs.joinpath(dir, '.venv', 'bin', 'driveros-lsp')
      if vim.fn.executable(candidate) == 1 then
        if M.trusted_file(candidate) then
          return { candidate, '--stdio' }, nil
        end
        untrusted = untrusted or candidate
      end
    end
  end
  local exe = vim.fn.exepath('driveros-lsp')
  if exe ~= '' then
    return { exe, '--stdio' }, nil
  end
  if untrusted then
    return nil, ('driveros-lsp is in the workspace (%s) but not trusted: a repository\'s own '
      .. '.venv is its code. Trust it with `:edit %s | trust` (or put driveros-lsp on PATH, '
      .. 'or set `cmd`).'):format(untrusted, vim.fn.fnameescape(untrusted))
  end
  return nil, MISSING
end

M.ROOT_MARKERS = { '.git', 'pyproject.toml', 'package.json', 'go.mod', 'Cargo.toml' }

---The workspace root for a buffer: the nearest directory with a project marker, else the
---file's own directory (a single file outside any project), else the current directory (a
---file whose directory does not exist yet). nil for a buffer that is no file (no name, or a
---`scheme://` name): the server is not started for it.
---@param bufnr integer
---@return string|nil
function M.root_dir(bufnr)
  local name = vim.api.nvim_buf_get_name(bufnr)
  if name == '' or name:match('^%a[%w+.-]*://') then
    return nil
  end
  local found = vim.fs.root(bufnr, M.ROOT_MARKERS)
  if found then
    return found
  end
  local dir = vim.fs.dirname(vim.fs.normalize(vim.fn.fnamemodify(name, ':p')))
  if dir and vim.fn.isdirectory(dir) == 1 then
    return dir
  end
  return vim.fn.getcwd()
end

---The running driveros client for a buffer (or any running one).
---@param bufnr? integer
---@return vim.lsp.Client|nil
function M.client(bufnr)
  local clients = vim.lsp.get_clients({ name = 'driveros', bufnr = bufnr })
  if #clients == 0 then
    clients = vim.lsp.get_clients({ name = 'driveros' })
  end
  return clients[1]
end

---Run a server command. `callback(err, result)` is called on the main loop.
---@param command string one of protocol.CMD_*
---@param argument table the command's single argument object
---@param callback? fun(err: lsp.ResponseError|nil, result: any)
---@param bufnr? integer
function M.exec(command, argument, callback, bufnr)
  local client = M.client(bufnr)
  if not client then
    vim.notify('DriverOS: the driveros language server is not running in this buffer '
      .. '(vim.lsp.enable("driveros") and open a file)', vim.log.levels.ERROR)
    return
  end
  if next(argument) == nil then
    argument = vim.empty_dict() -- an empty Lua table would be sent as a JSON array
  end
  client:request('workspace/executeCommand', { command = command, arguments = { argument } },
    function(err, result)
      if err then
        vim.notify(('DriverOS: %s failed: %s'):format(command, err.message or vim.inspect(err)),
          vim.log.levels.ERROR)
      end
      if callback then
        callback(err, result)
      end
    end, bufnr)
end

M.protocol = protocol
M.MISSING_MESSAGE = MISSING

return M
