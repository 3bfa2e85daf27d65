-- A path's continuations as ghost text at the end of a loom buffer.
--
-- Neovim 0.11 has no inline-completion client, so the plugin asks the server's
-- `textDocument/inlineCompletion` itself and shows the offered continuation as virtual
-- text after the last character (the first line inline, the others as virtual lines).
-- Keys (loom buffers, normal and insert mode; loom.keymaps sets them, each also a
-- <Plug>(loom-suggestion-…)): <M-]>/<M-[> next/previous (asks when none is shown), <M-l>
-- accept, <M-Right> accept a word, <M-C-Right> accept a line, <M-h> dismiss. Accepting runs `loom.acceptSuggestion` with the accepted text: the server makes
-- it the current path (a part of it splits the continuation there) and inserts it.
local loom = require("loom")

local S = {}
local api = vim.api

S.ns = api.nvim_create_namespace("loom_suggest")
local state = {} -- buf → { items, index, typed, tick }

local function client_of(buf)
  for _, c in ipairs(vim.lsp.get_clients({ bufnr = buf, name = "loom" })) do
    return c
  end
  return nil
end

--- The position just after the buffer's last character (in the client's encoding).
local function end_position(buf, client)
  local last = api.nvim_buf_line_count(buf) - 1
  local line = api.nvim_buf_get_lines(buf, last, last + 1, false)[1] or ""
  local character = vim.str_utfindex(line, client.offset_encoding or "utf-16", #line, false)
  return { line = last, character = character }, last, #line
end

--- The text of the buffer in a range given in the client's encoding.
local function text_in(buf, client, range)
  local enc = client.offset_encoding or "utf-16"
  local function byte(pos)
    local line = api.nvim_buf_get_lines(buf, pos.line, pos.line + 1, false)[1] or ""
    return vim.str_byteindex(line, enc, pos.character, false)
  end
  local lines = api.nvim_buf_get_text(buf, range.start.line, byte(range.start), range["end"].line,
    byte(range["end"]), {})
  return table.concat(lines, "\n")
end

function S.clear(buf)
  buf = (buf == nil or buf == 0) and api.nvim_get_current_buf() or buf
  if api.nvim_buf_is_valid(buf) then
    api.nvim_buf_clear_namespace(buf, S.ns, 0, -1)
  end
  state[buf] = nil
end

--- What is shown now: { node, text (the whole continuation), typed, ghost, index, count }.
function S.current(buf)
  buf = (buf == nil or buf == 0) and api.nvim_get_current_buf() or buf
  local st = state[buf]
  if not st or #st.items == 0 then
    return nil
  end
  local item = st.items[st.index]
  local text = type(item.insertText) == "table" and item.insertText.value or item.insertText
  local args = item.command and item.command.arguments and item.command.arguments[1] or {}
  return { node = args.node, text = text, typed = st.typed[st.index] or "",
           ghost = text:sub(#(st.typed[st.index] or "") + 1), index = st.index,
           count = #st.items }
end

local function render(buf)
  api.nvim_buf_clear_namespace(buf, S.ns, 0, -1)
  local cur = S.current(buf)
  if not cur or cur.ghost == "" then
    return
  end
  local last = api.nvim_buf_line_count(buf) - 1
  local line = api.nvim_buf_get_lines(buf, last, last + 1, false)[1] or ""
  local lines = vim.split(cur.ghost, "\n", { plain = true })
  local label = cur.count > 1 and ("  (%d/%d)"):format(cur.index, cur.count) or ""
  local opts = { virt_text = { { lines[1], "LoomSuggestion" } }, virt_text_pos = "inline",
                 hl_mode = "combine" }
  if #lines > 1 then
    local extra = {}
    for i = 2, #lines do
      extra[#extra + 1] = { { lines[i] .. (i == #lines and label or ""), "LoomSuggestion" } }
    end
    opts.virt_lines = extra
  else
    opts.virt_text[2] = { label, "LoomSuggestionCount" }
  end
  api.nvim_buf_set_extmark(buf, S.ns, last, #line, opts)
end

--- Ask the server for the suggestions at the end of `buf` and show the first (or keep the
--- one shown); `cb(count)` afterwards.
function S.fetch(buf, cb)
  buf = (buf == nil or buf == 0) and api.nvim_get_current_buf() or buf
  local client = client_of(buf)
  if not client then
    if cb then cb(0) end
    return
  end
  local pos = end_position(buf, client)
  local uri = require("loom.buffers").uri(buf)
  if not uri then
    if cb then cb(0) end
    return
  end
  local params = { textDocument = { uri = uri }, position = pos, context = { triggerKind = 1 } }
  local tick = api.nvim_buf_get_changedtick(buf)
  client:request("textDocument/inlineCompletion", params, function(err, result)
    if err or not api.nvim_buf_is_valid(buf) or api.nvim_buf_get_changedtick(buf) ~= tick then
      if cb then cb(0) end
      return
    end
    local items = result and (result.items or result) or {}
    local before = S.current(buf)
    local typed, index = {}, 1
    for i, item in ipairs(items) do
      typed[i] = item.range and text_in(buf, client, item.range) or ""
      local args = item.command and item.command.arguments and item.command.arguments[1] or {}
      if before and args.node == before.node then
        index = i
      end
    end
    state[buf] = { items = items, index = index, typed = typed }
    render(buf)
    if cb then cb(#items) end
  end, buf)
end

--- Show the next (`delta` 1) or previous (-1) suggestion; ask for them when none is shown.
function S.cycle(delta, buf)
  buf = (buf == nil or buf == 0) and api.nvim_get_current_buf() or buf
  local st = state[buf]
  if not st or #st.items == 0 then
    S.fetch(buf, function(n)
      if n == 0 then
        loom.notify("no suggestions here (:Loom suggest makes some)")
      end
    end)
    return
  end
  st.index = (st.index - 1 + delta) % #st.items + 1
  render(buf)
end

local function accepted_text(cur, how)
  if how == "word" then
    local word = cur.ghost:match("^%s*[^%s]+") or cur.ghost
    return cur.typed .. word
  elseif how == "line" then
    local line = cur.ghost:match("^\n?[^\n]*\n?") or cur.ghost
    return cur.typed .. line
  end
  return cur.text
end

--- Accept the shown suggestion: all of it (`how` nil), its next word or its next line.
function S.accept(how, buf)
  buf = (buf == nil or buf == 0) and api.nvim_get_current_buf() or buf
  local cur = S.current(buf)
  if not cur or not cur.node then
    return false
  end
  local text = accepted_text(cur, how)
  S.clear(buf)
  require("loom.commands").exec("loom.acceptSuggestion",
    { uri = require("loom.buffers").uri(buf), node = cur.node, text = text },
    { buf = buf, commits = true, on_done = function(_, ok)
      if ok and #text < #cur.text then
        vim.schedule(function()
          S.fetch(buf) -- the rest of it, offered again
        end)
      end
      if ok then
        vim.schedule(function()
          local win = vim.fn.bufwinid(buf)
          if win ~= -1 then
            local last = api.nvim_buf_line_count(buf)
            local line = api.nvim_buf_get_lines(buf, last - 1, last, false)[1] or ""
            api.nvim_win_set_cursor(win, { last, #line })
          end
        end)
      end
    end })
  return true
end

--- Dismiss the shown suggestions; the server logs it (the preference log).
function S.dismiss(buf)
  buf = (buf == nil or buf == 0) and api.nvim_get_current_buf() or buf
  local shown = S.current(buf) ~= nil
  S.clear(buf)
  if shown then
    require("loom.commands").exec("loom.dismissSuggestion", { uri = require("loom.buffers").uri(buf) }, { buf = buf })
  end
end

--- Buffer-local autocommands (loom buffers); the keys are loom.keymaps'.
function S.attach(buf)
  local group = api.nvim_create_augroup("loom_suggest_" .. buf, { clear = true })
  api.nvim_create_autocmd({ "TextChanged", "TextChangedI" }, {
    group = group,
    buffer = buf,
    desc = "Loom: keep the suggestion in step with what is typed",
    callback = function()
      if state[buf] then
        api.nvim_buf_clear_namespace(buf, S.ns, 0, -1)
        vim.defer_fn(function()
          if state[buf] and api.nvim_buf_is_valid(buf) then
            S.fetch(buf)
          end
        end, 150)
      end
    end,
  })
end

return S
