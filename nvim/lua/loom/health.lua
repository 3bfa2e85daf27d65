-- :checkhealth loom
local M = {}

-- `loom doctor`'s checks (which model serves each purpose; whether the local model starts
-- here, its CPU and build, a timed short generation), through the running client's server
-- (`loom/doctor`) or, without one, the command line (`loom doctor --json`).
local function models(h, probe, client)
  h.start("Models (loom doctor)")
  local checks
  if client then
    local res = client:request_sync("loom/doctor", { generate = true }, 90000)
    if not res or res.err or not res.result then
      h.error("loom/doctor failed: " .. vim.inspect(res and (res.err or res) or "timeout"))
      return
    end
    checks = res.result.checks
  elseif probe then
    local cmd = vim.list_extend(vim.deepcopy(probe), { "doctor", "--json" })
    local ok, res = pcall(function()
      return vim.system(cmd, { text = true }):wait(90000)
    end)
    local decoded = ok and res and res.stdout and res.stdout ~= "" and vim.json.decode(res.stdout)
    if not decoded then
      h.error(table.concat(cmd, " ") .. " failed: " .. ((res and res.stderr) or tostring(res)))
      return
    end
    checks = decoded.checks
  else
    return
  end
  local report = { ok = h.ok, warn = h.warn, error = h.error, info = h.info }
  local section
  for _, c in ipairs(checks or {}) do
    if c.section ~= section then
      section = c.section
      h.info("— " .. section)
    end
    local fn = report[c.status] or h.info
    if c.hint and c.hint ~= vim.NIL and (c.status == "warn" or c.status == "error") then
      fn(c.text, { c.hint })
    else
      fn(c.text)
    end
  end
end

function M.check()
  local h = vim.health
  M.probe = nil
  h.start("Neovim")
  if vim.fn.has("nvim-0.11") == 1 then
    h.ok("Neovim " .. tostring(vim.version()))
  else
    h.error("Neovim ≥ 0.11 is needed (vim.lsp.config, vim.lsp.enable)", { "upgrade Neovim" })
  end

  local loom = require("loom")
  h.start("Loom server")
  if not loom.did_setup then
    h.warn("require('loom').setup{} has not been called", { "call it from your init.lua" })
  end
  local cmd = loom.server_cmd()
  h.info("server command: " .. table.concat(cmd, " "))
  local exe = cmd[1]
  if vim.fn.executable(exe) ~= 1 then
    h.error(exe .. " is not executable", { "pip install loom (or set cmd = {...} in setup)" })
  else
    -- `loom --help` (or `python -m loom.cli --help`): the command without `serve` and its args
    local probe = {}
    for _, part in ipairs(cmd) do
      if part == "serve" then
        break
      end
      probe[#probe + 1] = part
    end
    local help = vim.list_extend(vim.deepcopy(probe), { "--help" })
    local ok, res = pcall(function()
      return vim.system(help, { text = true }):wait(10000)
    end)
    if ok and res and res.code == 0 then
      h.ok(table.concat(help, " ") .. " runs")
      M.probe = probe
    else
      h.error(table.concat(help, " ") .. " failed: " .. ((res and (res.stderr or "")) or tostring(res)))
    end
  end
  local db = loom.config.db
  if db then
    local path = vim.fn.fnamemodify(db, ":p")
    if vim.fn.filereadable(path) == 1 then
      h.ok("database: " .. path)
    else
      h.warn("database " .. path .. " does not exist yet (the server creates it)")
    end
  else
    h.info("database: the server's default ($LOOM_DB or the user data dir)")
  end

  h.start("Client")
  local client = loom.client(false)
  if not client then
    h.warn("the loom client is not running", { "open a loom buffer: :Loom open" })
    models(h, M.probe, nil)
    return
  end
  h.ok(("client %d running (%s), position encoding %s"):format(client.id,
    client.initialized and "initialized" or "starting", client.offset_encoding))
  local buf = vim.api.nvim_get_current_buf()
  local name = vim.api.nvim_buf_get_name(buf)
  if name:match("^loom:") then
    if vim.lsp.buf_is_attached(buf, client.id) then
      h.ok("attached to this buffer (" .. name .. ")")
    else
      h.error("not attached to this loom buffer", { ":e! to re-read it" })
    end
  end
  local n = 0
  for b in pairs(client.attached_buffers or {}) do
    if vim.api.nvim_buf_is_valid(b) then
      n = n + 1
    end
  end
  h.info(("%d buffer%s attached"):format(n, n == 1 and "" or "s"))
  models(h, M.probe, client)
end

return M
