-- Messages too long for the command line, shown without a hit-enter prompt.
--
-- Neovim's own vim.notify echoes a multi-line (or wider than the command line) message and
-- then waits: "Press ENTER or type command to continue". A generation finishing in the
-- background while the writer types ("✓ 3 continuations from [bby4ps]" and a line per
-- continuation) would take their next keystroke. So the first line is echoed, cut to fit
-- and saying where the rest is (it stays in :messages), and the whole message shows in a
-- float in the top right corner, its long lines wrapped between words, that closes by
-- itself after a few seconds or at the writer's next move (an error: at the next move
-- only); `:Loom messages` lists every message of the session in full.
local T = {}
local api = vim.api

local HIGHLIGHT = {
  [vim.log.levels.ERROR] = "ErrorMsg",
  [vim.log.levels.WARN] = "WarningMsg",
}
local MAX_LINES = 12
local MORE = " (:Loom messages)" -- after an echoed line, when the message has more

--- Every message of the session, in full (`:Loom messages`).
T.history = {}

local state = { win = nil, buf = nil, timer = nil }

--- Does `msg` fit the command line without a prompt?
function T.fits(msg)
  return not msg:find("\n", 1, true) and vim.fn.strdisplaywidth(msg) < vim.v.echospace
end

--- Is vim.notify still Neovim's own (a notification plugin handles long messages itself)?
function T.builtin_notify()
  local info = debug.getinfo(vim.notify, "S")
  return info ~= nil and type(info.source) == "string" and info.source:find("vim/_editor.lua", 1, true) ~= nil
end

local function cut(line, width)
  if vim.fn.strdisplaywidth(line) <= width then
    return line
  end
  return vim.fn.strcharpart(line, 0, math.max(width - 1, 1)) .. "…"
end

-- A line folded to `width` columns between words (a word wider than that is cut across):
-- a refusal's folder or hint read to its end (before: each line was cut at the float).
local function wrap(line, width)
  local out = {}
  local indent = line:match("^%s*")
  if vim.fn.strdisplaywidth(indent) > width / 2 then
    indent = ""
  end
  while vim.fn.strdisplaywidth(line) > width do
    local head = vim.fn.strcharpart(line, 0, width)
    local at = head:match(".*()%s%S") -- the last space before a word, within the width
    if at and at > #indent + 1 then
      head = line:sub(1, at - 1)
    end
    out[#out + 1] = head
    line = indent .. line:sub(#head + 1):gsub("^%s+", "")
  end
  out[#out + 1] = line
  return out
end

local function close()
  pcall(api.nvim_del_augroup_by_name, "LoomToast")
  if state.timer then
    state.timer:stop()
    state.timer:close()
    state.timer = nil
  end
  if state.win and api.nvim_win_is_valid(state.win) then
    api.nvim_win_close(state.win, true)
  end
  state.win = nil
end

--- Show `msg` as a corner float for a few seconds, its first line echoed.
function T.show(msg, level)
  table.insert(T.history, msg)
  local lines = vim.split(msg, "\n", { plain = true })
  local width = math.max(math.min(math.floor(vim.o.columns * 0.6), 100), 20)
  local shown, more = {}, 0
  for _, l in ipairs(lines) do
    for _, part in ipairs(wrap(l, width)) do
      if #shown < MAX_LINES then
        shown[#shown + 1] = part
      else
        more = more + 1
      end
    end
  end
  if more > 0 then
    shown[#shown] = ("… %d more lines (:Loom messages)"):format(more + 1)
  end
  local w = 1
  for _, l in ipairs(shown) do
    w = math.max(w, vim.fn.strdisplaywidth(l))
  end
  local echo = lines[1]
  if #lines > 1 or vim.fn.strdisplaywidth(echo) >= vim.v.echospace then
    echo = cut(echo, math.max(vim.v.echospace - 1 - #MORE, 10)) .. MORE
  end
  api.nvim_echo({ { echo, HIGHLIGHT[level] or "None" } }, true, {})
  close()
  if not (state.buf and api.nvim_buf_is_valid(state.buf)) then
    state.buf = api.nvim_create_buf(false, true)
    vim.bo[state.buf].bufhidden = "hide"
  end
  api.nvim_buf_set_lines(state.buf, 0, -1, false, shown)
  local ok, win = pcall(api.nvim_open_win, state.buf, false, {
    relative = "editor",
    anchor = "NE",
    row = 1,
    col = vim.o.columns,
    width = w,
    height = #shown,
    style = "minimal",
    border = "rounded",
    focusable = false,
    noautocmd = true,
    zindex = 250,
  })
  if not ok then
    return
  end
  state.win = win
  vim.wo[win].winhighlight = "Normal:NormalFloat,FloatBorder:" .. (HIGHLIGHT[level] or "FloatBorder")
  if level ~= vim.log.levels.ERROR then -- (an error waits for the writer to have seen it)
    state.timer = vim.uv.new_timer()
    state.timer:start(math.min(3000 + 500 * #shown, 8000), 0, vim.schedule_wrap(close))
  end
  -- it covers prose: the writer's next move (after a moment to read it) puts it away
  local since = vim.uv.now()
  api.nvim_create_autocmd({ "CursorMoved", "CursorMovedI", "InsertEnter", "WinScrolled" }, {
    group = api.nvim_create_augroup("LoomToast", { clear = true }),
    callback = function()
      if vim.uv.now() - since > 1500 then
        close()
        return true
      end
    end,
  })
end

--- A reading is what a command shows rather than what it did: `→ view`, `→ tree`, `→ list`,
--- `→ help` answer in the seeds' formats, which begin with neither ✓ nor ✗. A float that
--- closes by itself is no place to read them (before, all but their first line were seen
--- only in `:Loom messages`).
function T.is_reading(msg)
  if type(msg) ~= "string" or not msg:find("\n", 1, true) then
    return false
  end
  local first = msg:match("^%s*(.-)\n") or msg
  return not (vim.startswith(first, "✓") or vim.startswith(first, "✗"))
end

local reading = { buf = nil }

--- Show a reading in a window below the current one that stays until closed (`q`), the
--- cursor left where the writer was; the next reading replaces it.
function T.reading(msg)
  table.insert(T.history, msg)
  local lines = vim.split(msg, "\n", { plain = true })
  api.nvim_echo({ { cut(lines[1], math.max(vim.v.echospace - 1, 10)), "None" } }, true, {})
  if not (reading.buf and api.nvim_buf_is_valid(reading.buf)) then
    reading.buf = api.nvim_create_buf(false, true)
    vim.bo[reading.buf].bufhidden = "hide"
    pcall(api.nvim_buf_set_name, reading.buf, "Loom reading")
    vim.keymap.set("n", "q", "<Cmd>close<CR>", { buffer = reading.buf, desc = "Loom: close the reading" })
  end
  vim.bo[reading.buf].modifiable = true
  api.nvim_buf_set_lines(reading.buf, 0, -1, false, lines)
  vim.bo[reading.buf].modifiable = false
  local win = vim.fn.bufwinid(reading.buf)
  if win == -1 then
    local from = api.nvim_get_current_win()
    vim.cmd(("botright %dsplit"):format(math.max(math.min(#lines, 12), 3)))
    win = api.nvim_get_current_win()
    api.nvim_win_set_buf(win, reading.buf)
    vim.wo[win].wrap = true
    vim.wo[win].linebreak = true
    vim.wo[win].winfixheight = true
    if api.nvim_win_is_valid(from) then
      api.nvim_set_current_win(from)
    end
  else
    api.nvim_win_set_height(win, math.max(math.min(#lines, 12), 3))
  end
end

--- `:Loom messages`: the session's messages, in full, in a scratch buffer.
function T.list()
  local buf = api.nvim_create_buf(false, true)
  local lines = {}
  for _, m in ipairs(T.history) do
    vim.list_extend(lines, vim.split(m, "\n", { plain = true }))
    lines[#lines + 1] = ""
  end
  api.nvim_buf_set_lines(buf, 0, -1, false, #lines > 0 and lines or { "(no messages yet)" })
  vim.bo[buf].modifiable = false
  vim.cmd("botright split")
  api.nvim_win_set_buf(0, buf)
end

return T
