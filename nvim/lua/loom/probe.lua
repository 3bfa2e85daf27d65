-- Start the server command on its own and do one LSP initialize round trip, for
-- :checkhealth loom: whether `loom serve` starts here and which version it reports. A
-- process of its own (not the editor's client), so the check also works before any loom
-- buffer is open, and a server that cannot start shows its stderr (a ModuleNotFoundError,
-- a bad --db) instead of a client that never attaches.
local P = {}

local function frame(msg)
  local body = vim.json.encode(msg)
  return ("Content-Length: %d\r\n\r\n%s"):format(#body, body)
end

--- The first complete JSON-RPC message in `buf` with id `id`, or nil.
local function find_reply(buf, id)
  local pos = 1
  while true do
    local hs, he = buf:find("\r\n\r\n", pos, true)
    if not hs then
      return nil
    end
    local len = tonumber(buf:sub(pos, hs - 1):match("[Cc]ontent%-[Ll]ength:%s*(%d+)"))
    if not len or #buf < he + len then
      return nil
    end
    local ok, msg = pcall(vim.json.decode, buf:sub(he + 1, he + len))
    if ok and type(msg) == "table" and msg.id == id then
      return msg
    end
    pos = he + len + 1
  end
end

--- Run `cmd`, send initialize, wait up to `timeout` ms for the answer, then shutdown and
--- exit. Returns { ok, name, version, ms, stderr, error }.
function P.initialize(cmd, timeout)
  timeout = timeout or 20000
  local out, err = {}, {}
  local started = vim.uv.hrtime()
  local ok, proc = pcall(vim.system, cmd, {
    stdin = true,
    stdout = function(_, data)
      if data then
        out[#out + 1] = data
      end
    end,
    stderr = function(_, data)
      if data then
        err[#err + 1] = data
      end
    end,
  })
  if not ok then
    return { ok = false, error = tostring(proc), stderr = "" }
  end
  proc:write(frame({
    jsonrpc = "2.0",
    id = 1,
    method = "initialize",
    params = {
      processId = vim.fn.getpid(),
      rootUri = vim.NIL,
      capabilities = vim.empty_dict(),
      clientInfo = { name = "loom checkhealth" },
    },
  }))
  local reply, exited
  vim.wait(timeout, function()
    reply = find_reply(table.concat(out), 1)
    exited = proc:is_closing()
    return reply ~= nil or exited
  end, 20)
  local ms = (vim.uv.hrtime() - started) / 1e6
  if reply then
    pcall(proc.write, proc, frame({ jsonrpc = "2.0", id = 2, method = "shutdown" }))
    pcall(proc.write, proc, frame({ jsonrpc = "2.0", method = "exit" }))
    pcall(proc.write, proc, nil)
  end
  -- past the wait, vim.system kills it (code 124)
  local done = proc:wait(reply and 3000 or 500)
  local stderr = table.concat(err)
  if not reply then
    return {
      ok = false,
      ms = ms,
      stderr = stderr,
      error = exited and ("exited with code " .. tostring(done.code)) or ("no answer in " .. timeout .. " ms"),
    }
  end
  if reply.error then
    return { ok = false, ms = ms, stderr = stderr, error = vim.inspect(reply.error) }
  end
  local info = (reply.result or {}).serverInfo or {}
  return { ok = true, ms = ms, name = info.name, version = info.version, stderr = stderr }
end

return P
