-- Feed the plugin's handlers the server's payloads ($PAYLOADS, built from the server's models)
-- and record every field the Lua code reads from them, present or not: each object is a proxy
-- that logs the path of each key read. Arrays stay arrays (LuaJIT's # and ipairs ignore
-- metatables) with proxied elements; free-form maps ($PAYLOADS.opaque) are handed over as they are.
local H = dofile(vim.env.DRIVEROS_TEST_LUA .. '/helpers.lua')
local P = vim.json.decode(io.open(vim.env.PAYLOADS):read('*a'), { luanil = { object = true, array = true } })

local reads = {}
local seen = {}
local opaque = {}
for _, key in ipairs(P.opaque) do
  opaque[key] = true
end

local function wrap(value, feed, path)
  if type(value) ~= 'table' then
    return value
  end
  if next(value) == nil or vim.islist(value) then
    local out = {}
    for i, v in ipairs(value) do
      out[i] = wrap(v, feed, vim.list_extend(vim.list_slice(path), { '[]' }))
    end
    return out
  end
  return setmetatable({}, {
    __index = function(_, key)
      local at = vim.list_extend(vim.list_slice(path), { key })
      local id = feed .. ':' .. table.concat(at, '.')
      if not seen[id] then
        seen[id] = true
        table.insert(reads, { feed = feed, path = at })
      end
      if opaque[key] then
        return value[key]
      end
      return wrap(value[key], feed, at)
    end,
  })
end

local server = require('driveros.server')
server.exec = function(command, _, callback)
  if callback then
    callback(nil, wrap(P.results[command], 'command:' .. command, {}))
  end
end
-- every question gets its first choice: "Accept" in a review, the first run in a list
vim.ui.select = function(items, _, on_choice)
  on_choice(items[1])
end
vim.ui.input = function(_, on_confirm)
  on_confirm('feedback')
end

require('driveros').setup({ trace = { auto_open = false }, review = { auto_open = false } })
local trace = require('driveros.trace')
local review = require('driveros.review')
local commands = require('driveros.commands')

-- driveros/trace: every event type the trace carries
trace.open('r1')
for i, params in ipairs(P.trace) do
  trace.on_trace(nil, wrap(params, 'trace:' .. i, {}), {})
end
trace.flush('r1')
trace.quickfix('r1') -- the semantic answer's locations

-- driveros/proposal: a council verdict and a council error, each reviewed file by file
for i, params in ipairs(P.proposals) do
  review.on_proposal(nil, wrap(params, 'proposal:' .. i, {}), {})
  trace.flush(params.runId)
  if params.state == 'proposed' then
    review.start(params.runId)
  end
end

-- command results the plugin reads
vim.cmd('edit ' .. vim.fn.fnameescape(P.source))
vim.diagnostic.set(vim.api.nvim_create_namespace('payload-test'), 0, { { lnum = 0, col = 0, message = 'boom' } })
commands.run('a task')
commands.fix(false)
commands.fix(true)
commands.runs()
commands.cancel('r1')

H.finish({ reads = reads })
