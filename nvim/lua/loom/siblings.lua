-- Siblings side by side: a float listing every sibling of a node with its own text; <CR>
-- shows the one under the cursor in place of the current one, `d` compares it with the
-- current one (two windows in diff mode), `q` closes.
local loom = require("loom")

local P = {}
local api = vim.api

local function wrap(text, width)
  local out = {}
  for _, para in ipairs(vim.split(text, "\n", { plain = true })) do
    local line = ""
    for word in para:gmatch("%S+") do
      if line ~= "" and vim.fn.strdisplaywidth(line .. " " .. word) > width then
        out[#out + 1] = line
        line = word
      else
        line = line == "" and word or (line .. " " .. word)
      end
    end
    out[#out + 1] = line
  end
  return out
end

--- The float's lines for `siblings` (the server's loom.siblings data), and which sibling
--- each line belongs to.
function P.render(siblings, width)
  local lines, owner = {}, {}
  for _, s in ipairs(siblings) do
    local head = ("%s %d/%d [%s] %s"):format(s.current and "●" or " ", s.index, s.count, s.label, s.author)
    if s.request then
      head = head .. (" · one of %d from one request"):format(s.request)
    end
    if s.marks and s.marks ~= "" then
      head = head .. " · " .. s.marks
    end
    if s.children and s.children > 0 then
      head = head .. (" · %d continuation%s"):format(s.children, s.children == 1 and "" or "s")
    end
    lines[#lines + 1] = head
    owner[#lines] = s
    local body = (s.text and s.text ~= "") and s.text or "(no text)"
    for _, l in ipairs(wrap(body, width - 4)) do
      lines[#lines + 1] = "    " .. l
      owner[#lines] = s
    end
    lines[#lines + 1] = ""
    owner[#lines] = s -- (<CR> on the gap after a sibling, G then <CR>, takes that sibling)
  end
  return lines, owner
end

--- Open the picker for the node `args` names ({uri, node} or {uri, line, character}).
--- The server answers a page of the siblings (100; `offset`, `limit`): `m` in the float,
--- or <CR> on its last line, loads the next page.
function P.open(args, exec)
  P.fetch(args, exec, function(data)
    P.show(args.uri, data.siblings or {}, exec, P.page_of(args, data))
  end)
end

--- Ask the server for a page of siblings; `fn(data)` runs on the main loop with the answer.
function P.fetch(args, exec, fn)
  exec("loom.siblings", args, {
    on_done = function(result, ok)
      if not ok or type(result) ~= "table" or type(result.data) ~= "table" then
        return
      end
      vim.schedule(function()
        fn(result.data)
      end)
    end,
  })
end

--- Where the next page starts and how many there are, from an answer (nil: no more).
function P.page_of(args, data)
  local next_ = data.next
  if next_ == nil or next_ == vim.NIL then
    return nil
  end
  return { args = args, next = next_, total = data.total or next_ }
end

function P.show(uri, siblings, exec, page)
  if #siblings == 0 then
    loom.notify("no siblings")
    return
  end
  local width = math.min(100, math.max(40, vim.o.columns - 10))
  local lines, owner = P.render(siblings, width)
  local more_line
  if page then
    lines[#lines + 1] = ("… %d more (m: the next %d)"):format(page.total - page.next,
      math.min(100, page.total - page.next))
    more_line = #lines
  end
  local buf = api.nvim_create_buf(false, true)
  api.nvim_buf_set_lines(buf, 0, -1, false, lines)
  vim.bo[buf].modifiable = false
  vim.bo[buf].bufhidden = "wipe"
  vim.bo[buf].filetype = "loomsiblings"
  local height = math.min(#lines, math.max(5, vim.o.lines - 8))
  local win = api.nvim_open_win(buf, true, {
    relative = "editor", width = width, height = height, style = "minimal", border = "rounded",
    row = math.floor((vim.o.lines - height) / 2) - 1, col = math.floor((vim.o.columns - width) / 2),
    title = (" Siblings of [%s]: <CR> show · d compare · q close "):format(
      (vim.tbl_filter(function(s) return s.current end, siblings)[1] or siblings[1]).label),
  })
  vim.wo[win].wrap = false
  vim.wo[win].cursorline = true
  for i, s in ipairs(siblings) do -- start on the current one
    if s.current then
      for l = 1, #lines do
        if owner[l] == s then
          api.nvim_win_set_cursor(win, { l, 0 })
          break
        end
      end
      break
    end
    if i == #siblings then
      api.nvim_win_set_cursor(win, { 1, 0 })
    end
  end
  vim.b[buf].loom_siblings = siblings
  local function chosen()
    return owner[api.nvim_win_get_cursor(win)[1]]
  end
  local function close()
    if api.nvim_win_is_valid(win) then
      api.nvim_win_close(win, true)
    end
  end
  local function map(lhs, fn)
    vim.keymap.set("n", lhs, fn, { buffer = buf, nowait = true, silent = true })
  end
  local function more()
    if not page then
      return
    end
    local args = vim.tbl_extend("force", page.args, { offset = page.next })
    P.fetch(args, exec, function(data)
      close()
      local all = vim.list_extend(vim.list_slice(siblings), data.siblings or {})
      local b, w = P.show(uri, all, exec, P.page_of(page.args, data))
      -- on the first of the new page
      local first = (data.siblings or {})[1]
      local at = b and vim.api.nvim_buf_get_lines(b, 0, -1, false) or {}
      for l, text in ipairs(at) do
        if first and text:find(("%d/%d [" ):format(first.index, first.count), 1, true) then
          pcall(api.nvim_win_set_cursor, w, { l, 0 })
          break
        end
      end
    end)
  end
  map("q", close)
  map("<Esc>", close)
  map("m", more)
  map("<CR>", function()
    if more_line and api.nvim_win_get_cursor(win)[1] == more_line then
      more()
      return
    end
    local s = chosen()
    close()
    if s and not s.current then
      exec("loom.switchTo", { uri = uri, node = s.id }, { commits = true, echo = true })
    end
  end)
  map("d", function()
    local s = chosen()
    local current = vim.tbl_filter(function(x) return x.current end, siblings)[1]
    close()
    if s and current and s.id ~= current.id then
      require("loom.commands").compare(current.uri, s.uri)
    end
  end)
  return buf, win
end

return P
