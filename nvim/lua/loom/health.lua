-- :checkhealth loom
local M = {}

function M.check()
  local h = vim.health
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
    table.insert(probe, "--help")
    local ok, res = pcall(function()
      return vim.system(probe, { text = true }):wait(10000)
    end)
    if ok and res and res.code == 0 then
      h.ok(table.concat(probe, " ") .. " runs")
    else
      h.error(table.concat(probe, " ") .. " failed: " .. ((res and (res.stderr or "")) or tostring(res)))
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
end

return M
