-- A user's init.lua: run $DRIVEROS_INIT (the README's Neovim snippet, verbatim) with the
-- plugin on 'runtimepath', open $DRIVEROS_FILE, start a run, and report every message the
-- user saw (vim.notify and the message history) plus the client's root and settings.
local H = dofile(vim.env.DRIVEROS_TEST_LUA .. '/helpers.lua')
local out = {}
dofile(vim.env.DRIVEROS_INIT)
local buf = H.open(vim.env.DRIVEROS_FILE)
local client = require('driveros.server').client(buf)
out.root_dir = client.config.root_dir
out.clients = #vim.lsp.get_clients({ name = 'driveros' })
out.workspace_folders = client.workspace_folders
-- a start is answered once the server has read the settings (any warning comes first)
local answered = false
client:request('workspace/executeCommand', {
  command = require('driveros.protocol').CMD_AGENT_START,
  arguments = { { task = vim.env.DRIVEROS_TASK or 'say hello' } },
}, function(err, result)
  out.start_error = err and err.message or vim.NIL
  out.run_id = result and result.runId or vim.NIL
  answered = true
end, buf)
H.wait(20000, function()
  return answered
end, 'the start command to be answered')
if vim.env.DRIVEROS_WAIT_PROPOSAL == '1' and out.run_id ~= vim.NIL then
  local function proposed()
    local run = require('driveros.runs').by_id[out.run_id]
    return run ~= nil and run.proposal ~= nil
  end
  local ok = vim.wait(120000, function()
    local run = require('driveros.runs').by_id[out.run_id]
    return run ~= nil and (run.proposal ~= nil or run.status == 'finished')
  end, 20)
  if ok and not proposed() then
    -- the result came first: the proposal follows it. The server settles a run's state before
    -- it sends the result, so its list says whether one is on its way.
    local listed
    require('driveros.server').exec(require('driveros.protocol').CMD_AGENT_LIST, {}, function(_, r)
      listed = r or {}
    end, buf)
    H.wait(20000, function()
      return listed ~= nil
    end, 'driveros.agent.list')
    for _, r in ipairs(listed.runs or {}) do
      if r.runId == out.run_id and r.state == 'proposed' then
        ok = vim.wait(20000, proposed, 20)
      end
    end
  end
  local run = require('driveros.runs').by_id[out.run_id]
  if not ok or not run.proposal then
    out.error = 'no proposal: ' .. vim.inspect(run)
    out.messages = vim.split(vim.fn.execute('messages'), '\n', { trimempty = true })
    H.finish(out)
  end
  out.proposal = vim.tbl_map(function(f)
    return { path = f.path, uri = f.uri }
  end, require('driveros.runs').by_id[out.run_id].proposal)
end
out.messages = vim.split(vim.fn.execute('messages'), '\n', { trimempty = true })
H.finish(out)
