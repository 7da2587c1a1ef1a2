---@mod driveros.health :checkhealth driveros

local M = {}

local KEY_VARS = { 'OPENAI_API_KEY', 'OPENROUTER_API_KEY', 'X_AI_API_KEY', 'ANTHROPIC_API_KEY' }

---The `driveros` command beside the language server (same install), else on PATH.
---@param lsp_cmd string[]|nil
---@return string|nil
local function driveros_cli(lsp_cmd)
  if lsp_cmd and lsp_cmd[1] then
    local server = vim.fn.exepath(lsp_cmd[1])
    local beside = vim.fs.joinpath(vim.fs.dirname(server ~= '' and server or lsp_cmd[1]), 'driveros')
    if vim.fn.executable(beside) == 1 then
      return beside
    end
  end
  local exe = vim.fn.exepath('driveros')
  return exe ~= '' and exe or nil
end

---`driveros doctor --format json` for the current directory: the report, or nil and why.
---@param cli string
---@return table|nil report
---@return string|nil err
local function doctor(cli)
  local res = vim.system({ cli, 'doctor', '--format', 'json', '--workspace', vim.fn.getcwd() }, { text = true }):wait(30000)
  local ok, report = pcall(vim.json.decode, res.stdout or '', { luanil = { object = true, array = true } })
  if ok and type(report) == 'table' and type(report.facts) == 'table' then
    return report, nil
  end
  local why = (ok and type(report) == 'table' and report.error) or vim.trim(res.stderr or '')
  return nil, why ~= '' and why or ('exit status ' .. tostring(res.code))
end

---The provider as the server will see it: through `driveros doctor` (environment, the user
---config file, a trusted workspace's .env), never showing a key's value.
---@param lsp_cmd string[]|nil
function M.check_provider(lsp_cmd)
  local health = vim.health
  local cli = driveros_cli(lsp_cmd)
  local report, err
  if cli then
    report, err = doctor(cli)
  else
    err = 'the `driveros` command was not found beside driveros-lsp or on PATH'
  end
  if not report then
    health.warn('cannot ask `driveros doctor` about the provider: ' .. err, {
      'install driveros in the environment driveros-lsp comes from (pip install driveros)',
    })
    local present = {}
    for _, name in ipairs(KEY_VARS) do
      if (vim.env[name] or '') ~= '' then
        table.insert(present, name)
      end
    end
    if (vim.env.OLLAMA_HOST or '') ~= '' then
      table.insert(present, 'OLLAMA_HOST')
    end
    if #present > 0 then
      health.ok('in the environment: ' .. table.concat(present, ', ') .. ' (values not shown)')
    else
      health.info('no provider key in the environment (the user config file was not checked)')
    end
    return
  end
  for _, c in ipairs(report.checks or {}) do
    if c.section == 'provider' and c.status ~= 'ok' and c.name ~= 'provider' then
      health.warn(c.detail, c.fix and { c.fix } or nil)
    end
  end
  local provider = report.facts.provider or {}
  if provider.name then
    local detail = ''
    for _, c in ipairs(report.checks or {}) do
      if c.section == 'provider' and c.name == 'provider' then
        detail = c.detail
      end
    end
    health.ok('provider: ' .. detail)
    if provider.key_var then
      health.ok(provider.key_var .. ' is set (value not shown)')
    end
    return
  end
  local ws = report.facts.workspace or {}
  local config_home = vim.env.XDG_CONFIG_HOME or vim.fs.joinpath(vim.env.HOME or '~', '.config')
  local advice = {
    'export one of ' .. table.concat(KEY_VARS, ', ') .. ' (or OLLAMA_HOST) before starting Neovim',
    'or put it in your user config file, '
      .. vim.fs.joinpath(config_home, 'driveros', 'env')
      .. ' (KEY=value lines, read for every workspace)',
  }
  if ws.trusted == true then
    table.insert(advice, 'or in this workspace\'s .env (the workspace is trusted)')
  else
    table.insert(advice, 'a .env in this workspace is not read: the workspace is not trusted (`driveros trust` it only after reading it)')
  end
  health.warn('no provider configured (checked by `driveros doctor`)', advice)
end

function M.check()
  local health = vim.health
  health.start('driveros: Neovim')
  local v = vim.version()
  local version = ('%d.%d.%d'):format(v.major, v.minor, v.patch)
  if vim.fn.has('nvim-0.11') == 1 then
    health.ok('Neovim ' .. version)
  else
    health.error('Neovim ' .. version .. ' is too old', { 'driveros needs Neovim 0.11 or newer' })
  end

  health.start('driveros: language server')
  local cmd, err = require('driveros.server').resolve_cmd(vim.fn.getcwd())
  if not cmd then
    health.error(err)
  else
    local res = vim.system({ cmd[1], '--version' }, { text = true }):wait(10000)
    local out = vim.trim((res.stdout or '') .. (res.stderr or ''))
    if res.code == 0 and out ~= '' then
      health.ok(('driveros-lsp found: %s (%s)'):format(cmd[1], out))
    else
      health.warn(('driveros-lsp found at %s but `--version` failed: %s'):format(cmd[1], out))
    end
  end
  local clients = vim.lsp.get_clients({ name = 'driveros' })
  if #clients > 0 then
    health.ok(('%d driveros client%s running'):format(#clients, #clients == 1 and '' or 's'))
  else
    health.info('no driveros client is running (vim.lsp.enable("driveros") and open a file)')
  end

  health.start('driveros: providers')
  M.check_provider(cmd)

  health.start('driveros: docker sandbox tiers')
  if vim.fn.executable('docker') == 0 then
    health.info('docker not found: only the local sandbox tier is available')
  else
    local res = vim.system({ 'docker', 'info', '--format', '{{json .Runtimes}}' }, { text = true }):wait(10000)
    if res.code ~= 0 then
      health.warn('docker is installed but the daemon does not answer: ' .. vim.trim(res.stderr or ''))
    else
      health.ok('docker daemon answers')
      if (res.stdout or ''):find('runsc', 1, true) then
        health.ok('gVisor (runsc) runtime available: --untrusted runs are possible')
      else
        health.info('no gVisor (runsc) runtime: untrusted runs will be refused')
      end
    end
  end
end

return M
