---@mod driveros.approval Answering the agent's approval questions (approval `ask`).
---@brief [[
---The server asks with a standard `window/showMessageRequest`: a message that starts with
---"driveros wants to " (tool, whole command with control characters escaped, tier) and the
---actions "Allow once", "Allow for this run", "Deny". The plugin asks through
---`vim.ui.select` (so picker plugins apply); any other request goes to Neovim's own handler.
---Closing the picker answers null: Deny.
---@brief ]]

local protocol = require('driveros.protocol')

local M = {}

---Is this request one of driveros' approval questions?
---@param params table
---@return boolean
function M.is_question(params)
  if type(params) ~= 'table' or type(params.message) ~= 'string' then
    return false
  end
  if not vim.startswith(params.message, protocol.ASK_MESSAGE_PREFIX) then
    return false
  end
  local actions = params.actions
  if type(actions) ~= 'table' or #actions ~= #protocol.ASK_ACTIONS then
    return false
  end
  for i, title in ipairs(protocol.ASK_ACTIONS) do
    if type(actions[i]) ~= 'table' or actions[i].title ~= title then
      return false
    end
  end
  return true
end

---The prompt: the server's question, line by line, under a header.
---@param message string
---@return string
function M.prompt(message)
  return 'DriverOS approval\n' .. message .. '\n'
end

---Handler for `window/showMessageRequest` on the driveros client. Runs in the RPC coroutine:
---it yields until the user picks (any vim.ui.select, synchronous or not).
function M.on_request(err, params, ctx, config)
  if not M.is_question(params) then
    return vim.lsp.handlers['window/showMessageRequest'](err, params, ctx, config)
  end
  local co, is_main = coroutine.running()
  local answered, answer = false, vim.NIL
  local function done(choice)
    answer = choice or vim.NIL
    answered = true
    if co and not is_main and coroutine.status(co) == 'suspended' then
      vim.schedule(function()
        coroutine.resume(co, answer)
      end)
    end
  end
  vim.ui.select(params.actions, {
    kind = 'driveros_approval',
    prompt = M.prompt(params.message),
    format_item = function(action)
      return action.title
    end,
  }, done)
  if answered then
    return answer
  end
  if co and not is_main then
    return coroutine.yield()
  end
  return vim.NIL -- no coroutine to wait in: nobody answered, which is Deny
end

return M
