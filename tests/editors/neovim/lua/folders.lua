-- More than one folder in a real Neovim: a second workspace folder is added
-- (vim.lsp.buf.add_workspace_folder); a task without a file asks which folder through
-- Neovim's own window/showMessageRequest handler (vim.ui.select, answered with the second
-- folder here) and
-- runs there; a task naming both folders proposes files in each.
local H = dofile(vim.env.DRIVEROS_TEST_LUA .. '/helpers.lua')
local root = vim.fn.getcwd()
local second = vim.env.SECOND
local out = { asked = {} }

local buf = H.start(root .. '/calc.py')
vim.lsp.buf.add_workspace_folder(second)

vim.ui.select = function(items, opts, on_choice)
  table.insert(out.asked, {
    prompt = opts.prompt,
    titles = vim.tbl_map(function(i)
      return i.title
    end, items),
  })
  for _, item in ipairs(items) do
    if item.title == second then -- Neovim names a workspace folder by its path
      return on_choice(item)
    end
  end
  on_choice(nil)
end

local server = require('driveros.server')
local protocol = require('driveros.protocol')
local runs = require('driveros.runs')

local function start(argument)
  local answer
  server.exec(protocol.CMD_AGENT_START, argument, function(err, result)
    answer = { err = err and (err.message or tostring(err)) or nil, run = result and result.runId }
  end, buf)
  H.wait(30000, function()
    return answer ~= nil
  end, 'the start answer')
  return answer
end

local function proposal_uris(run_id)
  H.wait(60000, function()
    local run = runs.by_id[run_id]
    return run ~= nil and run.proposal ~= nil and #run.proposal > 0
  end, 'the proposal of ' .. tostring(run_id))
  local uris = {}
  for _, f in ipairs(runs.by_id[run_id].proposal) do
    table.insert(uris, f.uri)
  end
  table.sort(uris)
  return uris
end

local asked = start({ task = 'write here' })
out.asked_start = asked
if asked.run then
  out.asked_uris = proposal_uris(asked.run)
end
local named = start({
  task = 'write in both',
  folders = { vim.uri_from_fname(root), vim.uri_from_fname(second) },
})
out.named_start = named
if named.run then
  out.named_uris = proposal_uris(named.run)
end
H.finish(out)
