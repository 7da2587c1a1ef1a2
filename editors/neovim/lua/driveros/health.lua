---@mod driveros.health :checkhealth driveros

local M = {}

local KEY_VARS = { 'OPENAI_API_KEY', 'OPENROUTER_API_KEY', 'X_AI_API_KEY', 'ANTHROPIC_API_KEY' }

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
    health.ok('provider configured: ' .. table.concat(present, ', '))
  else
    health.warn('no provider key in the environment', {
      'set one of ' .. table.concat(KEY_VARS, ', ') .. ' or OLLAMA_HOST (a .env file in the workspace works too)',
    })
  end

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
