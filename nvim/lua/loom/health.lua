-- :checkhealth loom: Neovim, the server (started for an initialize round trip, its version
-- against the plugin's), the database, the client, and `loom doctor`'s model checks.
local M = {}

local INSTALL = "install it: pipx install loom-lsp   (or: uv tool install loom-lsp)"

--- Start the server command for an initialize round trip and compare versions.
function M.server(h, cmd, plugin_version)
  local probe = require("loom.probe").initialize(cmd, 20000)
  if not probe.ok then
    local stderr = vim.trim(probe.stderr or "")
    local last = stderr ~= "" and stderr:gsub("\n+$", ""):match("([^\n]*)$") or ""
    local advice = { INSTALL, "run it by hand to see why: " .. table.concat(cmd, " ") }
    local missing = last:match("No module named '([%w_%.]+)'")
    if missing and missing:match("^loom") then
      table.insert(advice, 1, "that Python has no Loom: install it, or set cmd to the `loom` that pipx installed")
    elseif missing then
      table.insert(advice, 1, ("its Python environment lacks %s: pipx install --force loom-lsp"):format(missing))
    end
    h.error(("`%s` did not start: %s%s"):format(table.concat(cmd, " "), probe.error or "?",
      last ~= "" and (" — " .. last) or ""), advice)
    return
  end
  h.ok(("`%s` answers initialize in %d ms: %s %s"):format(table.concat(cmd, " "), probe.ms,
    probe.name or "?", probe.version or "(no version)"))
  -- `loom doctor` (models) with the same command, without `serve` and what follows it
  local base = {}
  for _, part in ipairs(cmd) do
    if part == "serve" then
      break
    end
    base[#base + 1] = part
  end
  M.probe = base
  if probe.version == plugin_version then
    h.ok("the plugin and the server are both version " .. plugin_version)
  elseif probe.version then
    h.warn(("the plugin is version %s, the server %s"):format(plugin_version, probe.version), {
      "update the one that is behind: pipx upgrade loom-lsp, or your plugin manager's update (:Lazy update loom)",
    })
  else
    h.warn("the server did not report a version (serverInfo)", { "pipx upgrade loom-lsp" })
  end
end

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
    h.info("setup() has not run: the options are vim.g.loom's, or the defaults")
  end
  local opts = loom.options()
  local cmd = loom.server_cmd(opts)
  h.info("server command: " .. table.concat(cmd, " "))
  M.probe = nil
  local exe = cmd[1]
  if vim.fn.executable(exe) ~= 1 then
    h.error(("`%s` is not an executable: the Loom server is not installed (or not on $PATH)"):format(exe), {
      INSTALL,
      'or point the plugin at it: server_path = "/path/to/bin/loom" (vim.g.loom or setup(); :help loom-server)',
    })
  else
    M.server(h, cmd, loom.version)
  end
  local db = opts.db
  if db then
    local path = vim.fn.fnamemodify(db, ":p")
    if db:match("^postgres") then
      h.info("database: PostgreSQL (" .. db:gsub("://[^@/]*@", "://…@") .. ")")
    elseif vim.fn.filereadable(path) == 1 then
      h.ok("database: " .. path)
    elseif vim.fn.isdirectory(vim.fn.fnamemodify(path, ":h")) == 1 then
      h.warn("database " .. path .. " does not exist yet (the server creates it)")
    else -- what the server answers: it makes no folders (a mistyped path would be a new workspace)
      local dir = vim.fn.fnamemodify(path, ":h")
      local quoted = dir:match("^[%w@%%+=:,./_-]+$") and dir or vim.fn.shellescape(dir) -- (as shlex.quote)
      h.error(("there is no folder %s for the database %s: the server refuses it"):format(dir, path), {
        ("create the folder first (mkdir -p %s), or give a path in one that exists"):format(quoted),
      })
    end
  else
    h.info("database: the server's default ($LOOM_DB or the user data dir)")
  end
  h.start("Client")
  local client = loom.client(false)
  if not client then
    h.info("the loom client is not running yet: it starts with the first loom buffer (:Loom open)")
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
