-- Loom for Neovim ≥ 0.11: configures the `loom serve` language server, makes `loom://`
-- buffers readable and writable, and adds the :Loom command. setup() is optional: the
-- plugin sets itself up with vim.g.loom's options (or the defaults) on first use.
local M = {}

M.version = require("loom.version")

M.defaults = {
  cmd = nil, -- the server command; default: `LOOM [--db DB] serve`, LOOM from M.find_server
  server_path = nil, -- the `loom` executable (default: loom on $PATH, else the one installed with the plugin)
  db = nil, -- SQLite file (also sent as initializationOptions.database)
  participant = nil, -- who the editor acts as (server default: "human")
  keymaps = true, -- default keys in loom buffers: false for none, or { next_sibling = "]v", diff = false, … } (:h loom-mappings)
  completion = true, -- vim.lsp.completion with autotrigger in loom buffers
  inlay_hints = true, -- node boundaries as inlay hints
  markers = "siblings", -- which boundaries get one: "siblings" (where there is a choice) or "all"
  default_n = 3, -- continuations per :Loom continue
  default_tokens = nil,
  run_on_save = nil, -- server default: true
  probabilities = false, -- colour model text by token probability from the start (:Loom probabilities toggles)
  suggestions = true, -- a path's continuations as ghost text at the end, with their keys
  timeout = 10000, -- ms for blocking requests (read, save)
  root_dir = nil, -- working directory of the server
}

M.config = vim.deepcopy(M.defaults)
M.did_setup = false

--- The plugin's own folder (nvim/, or the copy a wheel carries).
local function plugin_root()
  return vim.fn.fnamemodify(debug.getinfo(1, "S").source:sub(2), ":p:h:h:h")
end

--- The `loom` installed with the plugin, for when it is not on $PATH: a checkout's nvim/
--- sits beside the .venv/ that scripts/run.sh and scripts/test.sh make, and the copy a
--- wheel carries (<prefix>/lib/pythonX.Y/site-packages/loom/editors/nvim) beside that
--- installation's <prefix>/bin/loom (pipx's venv, say).
function M.beside_plugin(root)
  root = vim.fs.normalize(root or plugin_root())
  local candidates = {
    vim.fs.joinpath(vim.fs.dirname(root), ".venv", "bin", "loom"),
    vim.fs.joinpath(vim.fs.dirname(root), ".venv", "Scripts", "loom.exe"),
  }
  local prefix = root:match("^(.*)/lib/python[%d.]+/site%-packages/loom/editors/nvim$")
  if prefix then
    table.insert(candidates, vim.fs.joinpath(prefix, "bin", "loom"))
  end
  prefix = root:match("^(.*)/[Ll]ib/site%-packages/loom/editors/nvim$")
  if prefix then
    table.insert(candidates, vim.fs.joinpath(prefix, "Scripts", "loom.exe"))
  end
  for _, path in ipairs(candidates) do
    if vim.fn.executable(path) == 1 then
      return path
    end
  end
  return nil
end

--- The `loom` executable: `server_path`, else `loom` on $PATH, else the one installed with
--- the plugin (M.beside_plugin); nil when there is none.
function M.find_server(opts)
  opts = opts or M.config
  if opts.server_path then
    local path = vim.fn.expand(opts.server_path)
    return vim.fn.executable(path) == 1 and path or nil
  end
  local exe = vim.fn.exepath("loom")
  if exe ~= "" then
    return exe
  end
  return M.beside_plugin()
end

--- The server command from the configuration: `cmd`, else `LOOM [--db DB] serve` with the
--- `loom` M.find_server finds (the bare name `loom` when it finds none: see M.missing).
function M.server_cmd(opts)
  opts = opts or M.config
  if opts.cmd then
    return type(opts.cmd) == "string" and { opts.cmd } or opts.cmd
  end
  local cmd = { M.find_server(opts) or (opts.server_path and vim.fn.expand(opts.server_path)) or "loom" }
  if opts.db then
    vim.list_extend(cmd, { "--db", vim.fn.fnamemodify(opts.db, ":p") })
  end
  table.insert(cmd, "serve")
  return cmd
end

--- Why the server cannot be started with `cmd` (the client's command), or nil when its
--- program is there: what is missing, and how to point the plugin at `loom`.
function M.missing(cmd, opts)
  opts = opts or M.options()
  local exe = type(cmd) == "table" and cmd[1] or nil
  if type(cmd) == "function" or (exe and vim.fn.executable(exe) == 1) then
    return nil
  end
  -- short lines: the corner float of a long message (loom.toast) is 60% of the width
  local how = 'set server_path = "/path/to/bin/loom" (:help loom-server)'
  if opts.cmd or (exe ~= "loom" and not opts.server_path) then
    return ("✗ the loom language server command is not an executable: %s\n  hint: fix cmd, or %s")
      :format(tostring(exe), how)
  elseif opts.server_path then
    return ("✗ server_path is not an executable: %s\n  hint: %s"):format(exe, how)
  end
  return "✗ the loom language server was not found: no `loom` on $PATH nor beside the plugin\n"
    .. "  hint: pipx install loom-lsp, or " .. how
end

function M.init_options(opts)
  opts = opts or M.config
  local o = {
    documentProvider = "bufReadCmd",
    defaultN = opts.default_n,
    inlayHints = opts.inlay_hints and true or false,
    markers = opts.markers,
  }
  if opts.db then
    o.database = vim.fn.fnamemodify(opts.db, ":p")
  end
  if opts.participant then
    o.participant = opts.participant
  end
  if opts.default_tokens then
    o.defaultTokens = opts.default_tokens
  end
  if opts.run_on_save ~= nil then
    o.runOnSave = opts.run_on_save
  end
  if opts.probabilities then
    o.probabilities = true
  end
  return o
end

local function capabilities()
  local caps = vim.lsp.protocol.make_client_capabilities()
  caps.general = caps.general or {}
  caps.general.positionEncodings = { "utf-8", "utf-16" }
  return caps
end

--- The options in force: setup()'s, else vim.g.loom's over the defaults.
function M.options()
  if M.did_setup then
    return M.config
  end
  return vim.tbl_deep_extend("force", vim.deepcopy(M.defaults), vim.g.loom or {})
end

--- The client's configuration for vim.lsp.config (lsp/loom.lua returns it too).
function M.lsp_config(opts)
  opts = opts or M.options()
  return {
    cmd = M.server_cmd(opts),
    cmd_cwd = opts.root_dir,
    filetypes = { "loom" },
    workspace_required = false,
    root_dir = opts.root_dir,
    init_options = M.init_options(opts),
    settings = { loom = M.init_options(opts) },
    capabilities = capabilities(),
    handlers = require("loom.buffers").handlers(),
    -- Full-text sync: the server renders paths without a final newline, and Neovim's
    -- incremental sync assumes one (lines added at the end reach the server as "…\n"),
    -- which would leave the server's copy one character off the buffer.
    flags = { allow_incremental_sync = false },
  }
end

--- Configure and enable the client (see :help loom-config). Optional: without it the
--- plugin uses vim.g.loom's options on first use. Calling it again replaces them.
function M.setup(opts)
  M.config = vim.tbl_deep_extend("force", vim.deepcopy(M.defaults), vim.g.loom or {}, opts or {})
  M.did_setup = true
  -- what plugin/loom.lua does, for a config that puts nvim/ on the runtime path after
  -- Neovim sourced plugin/ files (a lazy.nvim `config` that appends it, as specs did
  -- before the repository's top-level plugin/loom.lua)
  require("loom.boot").load()
  vim.lsp.config("loom", M.lsp_config(M.config))
  -- Attaches to ordinary `*.loom` files; loom:// buffers (buftype=acwrite, which
  -- vim.lsp.enable skips) are attached by the BufReadCmd.
  vim.lsp.enable("loom")
  require("loom.highlight").setup()
  require("loom.commands").setup()
end

--- Set up with vim.g.loom's options unless setup() has run: what :Loom, the <Plug>
--- mappings and the loom:// autocommands call first.
function M.ensure()
  if not M.did_setup then
    M.setup()
  end
end

--- The running loom client, or nil. With `start`, start it (once per Neovim) and wait
--- until it is initialized; when it cannot, nil and why (M.missing, or "did not start").
function M.client(start)
  local found
  for _, c in ipairs(vim.lsp.get_clients({ name = "loom" })) do
    if not c:is_stopped() then
      found = c
      break
    end
  end
  if not found and start then
    M.ensure()
    local config = vim.lsp.config.loom
    local missing = M.missing(config.cmd)
    if missing then
      return nil, missing
    end
    local id = vim.lsp.start(config, { attach = false, silent = false })
    found = id and vim.lsp.get_client_by_id(id) or nil
  end
  if found and not found.initialized and start then
    vim.wait(M.config.timeout, function()
      return found.initialized or found:is_stopped()
    end, 10)
    if not found.initialized then
      found = nil
    end
  end
  if not found and start then
    local cmd = vim.lsp.config.loom.cmd
    return nil, ("the loom language server did not start: %s (:checkhealth loom)")
      :format(type(cmd) == "table" and table.concat(cmd, " ") or "cmd")
  end
  return found
end

--- A blocking request to the server: result, error message.
local function resolve_buf(bufnr)
  -- a real number: the client flushes pending didChange only for an exact bufnr (not 0)
  if bufnr == nil or bufnr == 0 then
    return vim.api.nvim_get_current_buf()
  end
  return bufnr
end

function M.request_sync(method, params, bufnr)
  bufnr = resolve_buf(bufnr)
  local client, why = M.client(true)
  if not client then
    return nil, why
  end
  local res, err = client:request_sync(method, params, M.config.timeout, bufnr)
  if not res then
    return nil, ("%s: %s"):format(method, err or "no answer")
  end
  if res.err then
    return nil, res.err.message or vim.inspect(res.err)
  end
  if type(res.result) == "table" and res.result.error then
    -- the server's custom requests answer {error = "✗ CODE: …"}; the whole answer third
    -- (a save that asks first says what in its data)
    return nil, res.result.error, res.result
  end
  return res.result
end

--- An asynchronous request; `cb(result, errmsg)`.
function M.request(method, params, cb, bufnr)
  bufnr = resolve_buf(bufnr)
  local client, why = M.client(true)
  if not client then
    cb(nil, why)
    return
  end
  client:request(method, params, function(err, result)
    if err then
      cb(nil, err.message or vim.inspect(err))
    elseif type(result) == "table" and result.error then
      cb(nil, result.error)
    else
      cb(result, nil)
    end
  end, bufnr)
end

--- For a statusline: "loom [label] d4" (with "…" while generating) in loom buffers.
function M.statusline()
  local st = vim.b.loom_status
  if type(st) ~= "table" or not st.label then
    return vim.b.loom and "loom" or ""
  end
  return ("loom [%s] d%s%s"):format(st.label, tostring(st.depth or "?"), st.generating and " …" or "")
end

--- The buffer as a person names it, for the status line: the tree's title (not its ULID,
--- not `%20`) and, in a path, where you are: `The House at the End of the Lane · [a7x2] d4`.
function M.title(buf)
  buf = buf or vim.api.nvim_get_current_buf()
  local name = vim.api.nvim_buf_get_name(buf)
  local kind, rest = name:match("^loom:/*([%a]+)/(.*)$")
  if not kind then
    return vim.fn.fnamemodify(name, ":~:.")
  end
  local title
  if kind == "path" then
    title = rest:match("^[^/]+/[^/]+/(.+)$")
  elseif kind == "tree" then
    title = rest:match("^[^/]+/(.+)$")
  else
    title = kind .. ": " .. rest
  end
  title = vim.uri_decode(title or rest)
  local st = vim.b[buf].loom_status
  if kind == "path" and type(st) == "table" and st.label then
    title = ("%s · [%s] d%s%s"):format(title, st.label, tostring(st.depth or "?"), st.generating and " …" or "")
  end
  return title
end

--- The tab line the plugin sets when the user has none ('tabline' empty): Neovim's own
--- (a window count, `+` when a buffer is modified, the name shortened), with a loom
--- buffer named by M.title() instead of `l//p/0/k/The%20House…`.
function M.tabline()
  local parts = {}
  local current = vim.api.nvim_get_current_tabpage()
  for i, tab in ipairs(vim.api.nvim_list_tabpages()) do
    local wins = vim.api.nvim_tabpage_list_wins(tab)
    local buf = vim.api.nvim_win_get_buf(vim.api.nvim_tabpage_get_win(tab))
    local modified = false
    for _, w in ipairs(wins) do
      modified = modified or vim.bo[vim.api.nvim_win_get_buf(w)].modified
    end
    local name = vim.api.nvim_buf_get_name(buf)
    local label
    if name:match("^loom:") then
      label = M.title(buf)
    elseif name == "" then
      label = "[No Name]"
    else
      label = vim.fn.pathshorten(vim.fn.fnamemodify(name, ":~:."))
    end
    local flags = (#wins > 1 and tostring(#wins) or "") .. (modified and "+" or "")
    parts[#parts + 1] = ("%%#%s#%%%dT %s%s "):format(tab == current and "TabLineSel" or "TabLine", i,
      flags ~= "" and (flags .. " ") or "", label:gsub("%%", "%%%%"))
  end
  local line = table.concat(parts) .. "%#TabLineFill#%T"
  if #vim.api.nvim_list_tabpages() > 1 then
    line = line .. "%=%#TabLine#%999XX"
  end
  return line
end

--- A failure as the user reads it: `✗ CODE: message` once (the server's answers already
--- carry the `✗`; a client-side error gets one).
function M.failure(err)
  local text = tostring(err)
  if text:find("^✗") then
    return text
  end
  return "✗ " .. text
end

local pending = {} -- messages of the last moments, shown together
local recent = {} -- message → when it was last shown (ms)

local function flush()
  local batch = pending
  pending = {}
  local now = vim.uv.now()
  local lines, seen, level = {}, {}, vim.log.levels.INFO
  local toast = require("loom.toast")
  for _, m in ipairs(batch) do
    -- a save's answer and the server's own message can say the same thing
    if not seen[m.msg] and now - (recent[m.msg] or -1e9) > 1500 then
      seen[m.msg] = true
      recent[m.msg] = now
      if toast.is_reading(m.msg) then
        toast.reading(m.msg) -- → view, → tree, → list…: a window that stays to be read
      else
        lines[#lines + 1] = m.msg
        level = math.max(level, m.level)
      end
    end
  end
  if #lines == 0 then
    return
  end
  local text = table.concat(lines, "\n")
  if toast.fits(text) then
    vim.notify(text, level, { title = "Loom" })
  else
    toast.show(text, level)
  end
end

function M.notify(msg, level)
  level = level or vim.log.levels.INFO
  -- Neovim's own vim.notify stops at a hit-enter prompt for a message longer than the
  -- command line, or for two in a row (and the prompt eats the writer's next keystroke):
  -- messages a moment apart are shown together, once, a long one in a corner float. A
  -- notification plugin's vim.notify is left to do its job.
  if type(msg) ~= "string" or not require("loom.toast").builtin_notify() then
    vim.notify(msg, level, { title = "Loom" })
    return
  end
  pending[#pending + 1] = { msg = msg, level = level }
  if #pending == 1 then
    vim.defer_fn(flush, 30)
  end
end

return M
