-- loom:// buffers: read with a blocking `loom/read`, write with `loom/save`, refresh on
-- `loom/documentChanged`, and keep 'modified' honest when the server edits the buffer.
local loom = require("loom")

local B = {}
local api = vim.api

-- buffer-local autocommands, kept when setup() runs again
B.buffer_group = api.nvim_create_augroup("loom_buffer_local", { clear = false })

--- The text of a buffer exactly as the LSP client sends it (lines, plus a final newline
--- when 'eol' is set).
function B.get_text(buf)
  local text = table.concat(api.nvim_buf_get_lines(buf, 0, -1, false), "\n")
  if vim.bo[buf].eol then
    text = text .. "\n"
  end
  return text
end

local function split(text)
  local lines = vim.split(text, "\n", { plain = true })
  local eol = false
  if #lines > 1 and lines[#lines] == "" then
    table.remove(lines)
    eol = true
  end
  return lines, eol
end

--- Replace the buffer's text with `text`, touching only the lines that differ and keeping
--- every window's view (cursor, scroll) where it was.
function B.set_text(buf, text)
  local new, eol = split(text)
  local old = api.nvim_buf_get_lines(buf, 0, -1, false)
  local views = {}
  for _, win in ipairs(vim.fn.win_findbuf(buf)) do
    views[win] = api.nvim_win_call(win, vim.fn.winsaveview)
  end
  local first = 1
  while first <= #old and first <= #new and old[first] == new[first] do
    first = first + 1
  end
  local old_last, new_last = #old, #new
  while old_last >= first and new_last >= first and old[old_last] == new[new_last] do
    old_last = old_last - 1
    new_last = new_last - 1
  end
  local modifiable = vim.bo[buf].modifiable
  vim.bo[buf].modifiable = true
  if first <= old_last or first <= new_last then
    api.nvim_buf_set_lines(buf, first - 1, old_last, false, vim.list_slice(new, first, new_last))
  end
  if vim.bo[buf].eol ~= eol then
    vim.bo[buf].eol = eol
  end
  vim.bo[buf].modifiable = modifiable
  for win, view in pairs(views) do
    local count = api.nvim_buf_line_count(buf)
    view.lnum = math.min(view.lnum, count)
    pcall(api.nvim_win_call, win, function()
      vim.fn.winrestview(view)
    end)
  end
end

function B.is_loom_name(name)
  return type(name) == "string" and name:match("^loom:") ~= nil
end

--- The loaded buffer named by a loom: URI, or nil.
function B.find(uri)
  for _, buf in ipairs(api.nvim_list_bufs()) do
    if api.nvim_buf_get_name(buf) == uri then
      return buf
    end
  end
  return nil
end

--- The loom: URI of a buffer (its name), or nil.
function B.uri(buf)
  buf = (buf == nil or buf == 0) and api.nvim_get_current_buf() or buf
  local name = api.nvim_buf_get_name(buf)
  if B.is_loom_name(name) then
    return name
  end
  if vim.bo[buf].filetype == "loom" and name ~= "" then
    return vim.uri_from_bufnr(buf)
  end
  return nil
end

--- TREE and NODE of a loom://path/TREE/NODE[/TITLE] or loom://tree/TREE[/TITLE] URI.
function B.parse(uri)
  if not uri then
    return {}
  end
  local kind, rest = uri:match("^loom:/*([%a]+)/(.*)$")
  if not kind then
    return {}
  end
  if kind == "path" then
    -- loom://path/TREE/NODE[/Title]: the title is for people
    local tree, node = rest:match("^([^/]+)/([^/]+)")
    return { kind = kind, tree = tree, node = node }
  elseif kind == "tree" then
    return { kind = kind, tree = rest:match("^([^/]+)") }
  end
  return { kind = kind, name = rest }
end

local function mark_clean(buf)
  if api.nvim_buf_is_valid(buf) then
    vim.bo[buf].modified = false
    vim.b[buf].loom_clean_tick = api.nvim_buf_get_changedtick(buf)
    vim.b[buf].loom_clean_text = B.get_text(buf)
  end
end
B.mark_clean = mark_clean

local function attach(buf)
  local client = loom.client(true)
  if client and not vim.lsp.buf_is_attached(buf, client.id) then
    vim.lsp.buf_attach_client(buf, client.id)
  end
  return client
end

--- BufReadCmd: fill `buf` from the server (blocking: a jump into this buffer must find
--- the text there before it moves the cursor).
function B.read(buf, uri)
  local res, err = loom.request_sync("loom/read", { uri = uri }, buf)
  local undolevels = vim.bo[buf].undolevels
  vim.bo[buf].undolevels = -1
  vim.bo[buf].buftype = "acwrite"
  vim.bo[buf].swapfile = false
  vim.bo[buf].fixendofline = false
  vim.bo[buf].modifiable = true
  if not res then
    api.nvim_buf_set_lines(buf, 0, -1, false, vim.split(loom.failure(err), "\n", { plain = true }))
    vim.bo[buf].modifiable = false
    vim.bo[buf].modified = false
    vim.bo[buf].undolevels = undolevels
    loom.notify(loom.failure(err), vim.log.levels.ERROR)
    return false
  end
  B.set_text(buf, res.text or "")
  vim.bo[buf].undolevels = undolevels
  -- 'modifiable' alone keeps a view read-only: with 'readonly' set, every refresh from the
  -- server warned "W10: Changing a readonly file" and :w failed with E45
  vim.bo[buf].modifiable = not res.readOnly
  vim.bo[buf].readonly = false
  local ft = res.languageId == "markdown" and "markdown" or "loom"
  if vim.bo[buf].filetype ~= ft then
    vim.bo[buf].filetype = ft
  end
  vim.b[buf].loom = { uri = uri, readOnly = res.readOnly, languageId = res.languageId }
  mark_clean(buf)
  attach(buf)
  if uri:match("^loom:/*path/") then
    loom.request("loom/status", { uri = uri }, function(st)
      if st and api.nvim_buf_is_valid(buf) and vim.b[buf].loom_status == nil then
        vim.b[buf].loom_status = st
      end
    end, buf)
  end
  return true
end

--- The writer's answer to a save that asked first (`data.confirm`: it would take away most
--- of the path): "branch", "replace", or nil (cancelled: nothing is saved).
function B.ask_save(ask)
  local buttons, keys = {}, {}
  for _, c in ipairs(ask.choices or {}) do
    local title = c.title or c.choice
    -- the accelerator: the first letter not taken by an earlier button
    local marked = title
    for i = 1, #title do
      local ch = title:sub(i, i):lower()
      if ch:match("%a") and not keys[ch] then
        keys[ch] = true
        marked = title:sub(1, i - 1) .. "&" .. title:sub(i)
        break
      end
    end
    buttons[#buttons + 1] = marked
  end
  buttons[#buttons + 1] = keys.c and "Ca&ncel" or "&Cancel"
  local picked = vim.fn.confirm(ask.question or "Save?", table.concat(buttons, "\n"), #buttons, "Warning")
  local choice = (ask.choices or {})[picked]
  return choice and choice.choice or nil
end

--- BufWriteCmd: commit the buffer (or save the document) through the server.
function B.write(buf, uri, confirm)
  local text = B.get_text(buf)
  local res, err, answer = loom.request_sync("loom/save", { uri = uri, text = text, confirm = confirm }, buf)
  local data = type(answer) == "table" and answer.data or nil
  local ask = not confirm and type(data) == "table" and data.confirm
  if type(ask) == "table" then
    local choice = B.ask_save(ask)
    if choice then
      return B.write(buf, uri, choice)
    end
    loom.notify("nothing was saved: undo (u) brings the text back", vim.log.levels.WARN)
    return false
  end
  if not res then
    loom.notify(loom.failure(err), vim.log.levels.ERROR)
    return false
  end
  local msg = res.message or (res.ok and "✓ saved" or "✗ not saved")
  if not res.ok then
    loom.notify(msg, vim.log.levels.ERROR)
    -- commands that failed keep their lines (with diagnostics); what did commit is clean
    return false
  end
  if res.uri and res.uri ~= uri then
    B.rename(buf, uri, res.uri)
  end
  mark_clean(buf)
  loom.notify(msg)
  return true
end

--- The document moved (the path's tip changed): show it under its new name.
function B.rename(buf, old, new)
  local client = loom.client(false)
  if client and vim.lsp.buf_is_attached(buf, client.id) then
    vim.lsp.buf_detach_client(buf, client.id) -- didClose for the old URI
  end
  api.nvim_buf_set_name(buf, new)
  -- nvim_buf_set_name leaves an unlisted buffer with the old name behind: drop it
  local stale = B.find(old)
  if stale and stale ~= buf and not vim.bo[stale].modified then
    pcall(api.nvim_buf_delete, stale, { force = true })
  end
  B.read(buf, new)
end

--- Re-read a loaded, unmodified buffer (keeping the cursor). Modified buffers are left
--- alone: the server sends them minimal edits instead, and unsaved text is never lost.
function B.refresh(uri)
  local buf = B.find(uri)
  if not buf or not api.nvim_buf_is_loaded(buf) then
    return
  end
  if vim.bo[buf].modified then
    return
  end
  local tick = api.nvim_buf_get_changedtick(buf)
  local res = loom.request_sync("loom/read", { uri = uri }, buf)
  if not res or res.text == nil then
    return
  end
  -- an edit of the server's arrived while waiting (a sibling switch): the text read is
  -- older than the buffer's now, and putting it back read as the switch undone
  if not api.nvim_buf_is_valid(buf) or api.nvim_buf_get_changedtick(buf) ~= tick then
    return
  end
  if res.text ~= B.get_text(buf) then
    B.set_text(buf, res.text)
  end
  mark_clean(buf)
  vim.bo[buf].modifiable = not res.readOnly
end

--- After the server edited buffers: a buffer that was clean stays clean (the edit is the
--- server's own state), and a modified one whose text is back to the last clean text is
--- clean again.
local function settle(before)
  for buf, was_modified in pairs(before) do
    if api.nvim_buf_is_valid(buf) and api.nvim_buf_is_loaded(buf) then
      if not was_modified then
        mark_clean(buf)
      elseif vim.b[buf].loom_clean_text == B.get_text(buf) then
        mark_clean(buf)
      end
    end
  end
end

local function edited_uris(edit)
  local uris = {}
  for uri in pairs(edit.changes or {}) do
    uris[#uris + 1] = uri
  end
  for _, change in ipairs(edit.documentChanges or {}) do
    if change.textDocument then
      uris[#uris + 1] = change.textDocument.uri
    end
  end
  return uris
end

function B.handlers()
  local h = {}
  h["loom/documentChanged"] = function(_, params)
    if params and params.uri then
      vim.schedule(function()
        B.refresh(params.uri)
      end)
    end
  end
  h["workspace/textDocumentContent/refresh"] = function(_, params)
    if params and params.uri then
      vim.schedule(function()
        B.refresh(params.uri)
      end)
    end
    return vim.NIL
  end
  h["loom/clean"] = function(_, params)
    if type(params) ~= "table" or not params.uri then
      return
    end
    vim.schedule(function()
      local buf = B.find(params.uri)
      -- only when the buffer is exactly the version the server checked: a keystroke since
      -- then is the user's and keeps the buffer modified
      if buf and api.nvim_buf_is_loaded(buf) and vim.lsp.util.buf_versions[buf] == params.version then
        mark_clean(buf)
      end
    end)
  end
  h["loom/status"] = function(_, params)
    if type(params) ~= "table" then
      return
    end
    vim.g.loom_status = params
    local buf = params.uri and B.find(params.uri)
    if buf then
      vim.b[buf].loom_status = params
    end
    vim.schedule(function()
      api.nvim_exec_autocmds("User", { pattern = "LoomStatus", modeline = false, data = params })
    end)
  end
  h["window/showMessage"] = function(_, params)
    if type(params) == "table" and params.message then
      local levels = { vim.log.levels.ERROR, vim.log.levels.WARN, vim.log.levels.INFO, vim.log.levels.DEBUG }
      local level = levels[params.type] or vim.log.levels.INFO
      vim.schedule(function()
        loom.notify(params.message, level)
      end)
    end
    return vim.NIL
  end
  h["workspace/applyEdit"] = function(err, params, ctx)
    local before = {}
    for _, uri in ipairs(edited_uris(params and params.edit or {})) do
      local buf = B.find(uri)
      if buf and B.is_loom_name(uri) and api.nvim_buf_is_loaded(buf) then
        before[buf] = vim.bo[buf].modified
        -- a read-only view can still be brought up to date by its server
        vim.bo[buf].modifiable = true
      end
    end
    -- the default handler prints "Workspace edit Loom" for a labelled edit: one line per
    -- streamed chunk. The edits are Loom's own; they need no announcement.
    if params then
      params.label = nil
    end
    local result = vim.lsp.handlers["workspace/applyEdit"](err, params, ctx)
    for buf in pairs(before) do
      local info = vim.b[buf].loom
      if info and info.readOnly then
        vim.bo[buf].modifiable = false
      end
    end
    settle(before)
    for buf in pairs(before) do
      if api.nvim_buf_is_valid(buf) then -- (after settle: resetting 'modified' bumps the tick)
        vim.b[buf].loom_server_tick = api.nvim_buf_get_changedtick(buf)
      end
    end
    -- Send the didChange for the edit before answering: the server treats the answer as
    -- "applied" and may compute its next edit from the text it expects us to have.
    local client = vim.lsp.get_client_by_id(ctx.client_id)
    if client then
      local ok, changetracking = pcall(require, "vim.lsp._changetracking")
      for buf in pairs(before) do
        if ok and changetracking.flush then
          pcall(changetracking.flush, client, buf)
        end
      end
    end
    return result
  end
  return h
end

--- Neovim 0.11 inserts only the first word of a plain-text textEdit ("→" of "→ view "):
--- make the whole new text the completed word (it replaces from the edit's start column).
function B.convert_item(item)
  local text = item.textEdit and item.textEdit.newText or item.insertText
  if type(text) == "string" and item.insertTextFormat ~= 2 and text:find("%s") then
    return { word = text }
  end
  return {}
end

--- The buffer's 'completeopt': the user's, plus `noinsert` and `noselect`. Completion
--- triggers on every `→`, space and `:` in a command line; without these Neovim's default
--- (menu,popup) inserts the first item while the user types on.
function B.completeopt(global)
  local opts = vim.split(global or vim.go.completeopt, ",", { trimempty = true })
  local have = {}
  for _, o in ipairs(opts) do
    have[o] = true
  end
  for _, o in ipairs({ "menuone", "noinsert", "noselect" }) do
    if not have[o] then
      opts[#opts + 1] = o
    end
  end
  return table.concat(opts, ",")
end

--- `->` (or `=>`) then a space at the start of a line becomes `→ `: the ASCII arrow works
--- as typed, and the buffer shows the one arrow the docs use. Prose is left alone.
function B.arrow_on_space(buf)
  api.nvim_create_autocmd("InsertCharPre", {
    group = B.buffer_group,
    buffer = buf,
    desc = "Loom: -> at the start of a line becomes →",
    callback = function()
      if vim.v.char ~= " " then
        return
      end
      local row, col = unpack(api.nvim_win_get_cursor(0))
      local line = api.nvim_get_current_line()
      local before = line:sub(1, col)
      local indent, arrow = before:match("^(%s*)([-=]>)$")
      if not arrow then
        return
      end
      vim.schedule(function()
        if not api.nvim_buf_is_valid(buf) then
          return
        end
        local now = api.nvim_buf_get_lines(buf, row - 1, row, false)[1] or ""
        local s = #indent
        if now:sub(s + 1, s + 3) == arrow .. " " then
          api.nvim_buf_set_text(buf, row - 1, s, row - 1, s + 2, { "→" })
          local cur = api.nvim_win_get_cursor(0)
          if cur[1] == row and cur[2] >= s + 2 then
            api.nvim_win_set_cursor(0, { row, cur[2] + #"→" - 2 })
          end
        end
      end)
    end,
  })
end

--- A loom buffer's look in window `win`: prose wraps between words, the status line (and
--- a default tab line) name the tree, not its ULID and %20s, and the overview folds. A
--- status or tab line of the user's own (lualine, …) is left alone (it has
--- loom.statusline() and loom.title()).
function B.dress(buf, win)
  if not (api.nvim_buf_is_valid(buf) and api.nvim_win_is_valid(win)) or api.nvim_win_get_buf(win) ~= buf then
    return
  end
  local kind = B.parse(api.nvim_buf_get_name(buf)).kind
  if kind ~= "tree" then
    -- prose: a paragraph is one long line; wrap it between words, not mid-word
    vim.wo[win][0].wrap = true
    vim.wo[win][0].linebreak = true
    vim.wo[win][0].breakindent = false
  else
    -- the overview: every branch folds (the server's folding ranges)
    vim.wo[win][0].foldmethod = "expr"
    vim.wo[win][0].foldexpr = "v:lua.vim.lsp.foldexpr()"
    vim.wo[win][0].foldlevel = 99
  end
  if vim.go.statusline == "" then
    vim.wo[win][0].statusline = "%<%{v:lua.require'loom'.title()} %h%m%r%=%-14.(%l,%c%V%) %P"
  end
  if vim.go.tabline == "" then
    vim.go.tabline = "%!v:lua.require'loom'.tabline()"
  end
end

--- Buffer-local setup when the loom client attaches: completion, inlay hints, keymaps.
local function on_attach(buf, client)
  local cfg = loom.config
  vim.bo[buf].completeopt = B.completeopt()
  if not vim.b[buf].loom_arrow then -- once per buffer (a renamed buffer attaches again)
    vim.b[buf].loom_arrow = true
    B.arrow_on_space(buf)
  end
  if cfg.completion and client:supports_method("textDocument/completion") then
    vim.lsp.completion.enable(true, client.id, buf, { autotrigger = true, convert = B.convert_item })
  end
  if cfg.inlay_hints and client:supports_method("textDocument/inlayHint") then
    vim.lsp.inlay_hint.enable(true, { bufnr = buf })
  end
  require("loom.keymaps").apply(buf, cfg) -- `keymaps = false`: none
  if cfg.suggestions then
    require("loom.suggest").attach(buf)
  end
  for _, win in ipairs(vim.fn.win_findbuf(buf)) do
    B.dress(buf, win)
  end
  if not vim.b[buf].loom_dressed then -- once per buffer (a renamed buffer attaches again)
    vim.b[buf].loom_dressed = true
    -- CTRL-] reads the buffer it jumps to before a window shows it: dress each window the
    -- buffer enters, or it showed the loom:// address and wrapped mid-word
    api.nvim_create_autocmd("BufWinEnter", {
      group = B.buffer_group,
      buffer = buf,
      desc = "Loom: the look of a loom buffer in this window",
      callback = function()
        B.dress(buf, api.nvim_get_current_win())
      end,
    })
  end
  if B.parse(api.nvim_buf_get_name(buf)).kind == "tree" then
    vim.keymap.set("n", "<CR>", function()
      local line = api.nvim_get_current_line()
      local id = line:match("%[([%w']+)%]")
      local info = B.parse(api.nvim_buf_get_name(buf))
      if id and info.tree then
        require("loom.commands").exec("loom.open", { tree = info.tree, node = id })
      end
    end, { buffer = buf, desc = "Loom: open the node on this line", silent = true })
  end
end

--- BufReadCmd loom://*: read the document from the server.
function B.on_read(ev)
  B.read(ev.buf, api.nvim_buf_get_name(ev.buf))
end

--- BufWriteCmd/FileWriteCmd loom://*: commit the buffer or save the document.
function B.on_write(ev)
  local buf = ev.buf
  local name = api.nvim_buf_get_name(buf)
  if ev.match ~= name and ev.file ~= name then
    -- `:w loom://other`: not supported, a loom: name maps to one document
    loom.notify("✗ write a loom: buffer with :w (no other name)", vim.log.levels.ERROR)
    return
  end
  local info = vim.b[buf].loom
  if info and info.readOnly then
    vim.bo[buf].modified = false
    loom.notify("this view is read-only: nothing to save")
    return
  end
  B.write(buf, name)
end

--- LspAttach: buffer-local completion, inlay hints and keys when the client is loom's.
function B.on_lsp_attach(ev)
  local client = vim.lsp.get_client_by_id(ev.data.client_id)
  if client and client.name == "loom" then
    on_attach(ev.buf, client)
  end
end

return B
