-- The tree as a picture in a float: one cell a node (● your path, ◉ your position,
-- ○ others, ★ bookmarks), chains joined by ─, branches by ┬ ├ └ │. The footer shows the
-- text of the node under the cursor; <CR> (or a double click) opens its path; `s` writes
-- the SVG picture and opens it in the browser; q closes.
local loom = require("loom")

local P = {}
local api = vim.api

--- The node of the cell at or just left of `col` on `line` (1-based line, 0-based byte).
function P.node_at(cells_by_line, line, col)
  local best
  for _, c in ipairs(cells_by_line[line] or {}) do
    if c.byte <= col and (not best or c.byte > best.byte) then
      best = c
    end
  end
  return best
end

function P.open(tree, uri)
  local res, err = loom.request_sync("loom/picture", { tree = tree or "", uri = uri })
  if not res then
    loom.notify(loom.failure(err), vim.log.levels.ERROR)
    return
  end
  return P.show(res)
end

function P.show(res)
  local lines = res.map.lines
  local buf = api.nvim_create_buf(false, true)
  api.nvim_buf_set_lines(buf, 0, -1, false, lines)
  vim.bo[buf].modifiable = false
  vim.bo[buf].bufhidden = "wipe"
  vim.bo[buf].filetype = "loompicture"
  -- cells by line, with the byte column of each glyph (the glyphs are multibyte)
  local cells = {}
  for _, cell in ipairs(res.map.cells) do
    local line, col, id = cell[1] + 1, cell[2], cell[3]
    local text = lines[line] or ""
    local byte = vim.str_byteindex(text, "utf-32", col, false)
    cells[line] = cells[line] or {}
    table.insert(cells[line], { byte = byte, id = id })
  end
  local width = 10
  for _, l in ipairs(lines) do
    width = math.max(width, vim.fn.strdisplaywidth(l) + 2)
  end
  width = math.min(math.max(width, 72), vim.o.columns - 6) -- room for the footer's text
  local height = math.min(#lines, vim.o.lines - 8)
  local win = api.nvim_open_win(buf, true, {
    relative = "editor", width = width, height = math.max(height, 1), style = "minimal",
    border = "rounded", row = 2, col = math.floor((vim.o.columns - width) / 2),
    title = (" %s: <CR> open · s SVG · q close "):format(res.tree.title),
    footer = " ", footer_pos = "left",
  })
  vim.wo[win].wrap = false
  vim.wo[win].cursorline = true
  local ns = api.nvim_create_namespace("loom_picture")
  for line, list in pairs(cells) do
    for _, c in ipairs(list) do
      local node = res.nodes[c.id] or {}
      local group = c.id == res.position and "LoomPosition" or (node.model and "LoomModel" or "LoomHuman")
      api.nvim_buf_set_extmark(buf, ns, line - 1, c.byte, {
        end_col = c.byte + #(lines[line]:sub(c.byte + 1):match("^[%z\1-\127\194-\244][\128-\191]*") or " "),
        hl_group = group,
      })
    end
  end
  local function current()
    local pos = api.nvim_win_get_cursor(win)
    return P.node_at(cells, pos[1], pos[2])
  end
  local function describe()
    local c = current()
    local node = c and res.nodes[c.id]
    local footer = node and (" [%s]%s %s "):format(node.label, node.bookmarked and " ★" or "", node.text) or " "
    pcall(api.nvim_win_set_config, win, { footer = footer:sub(1, width - 2), footer_pos = "left" })
  end
  api.nvim_create_autocmd("CursorMoved", { buffer = buf, callback = describe })
  local function close()
    if api.nvim_win_is_valid(win) then
      api.nvim_win_close(win, true)
    end
  end
  local function open_node()
    local c = current()
    local node = c and res.nodes[c.id]
    if node then
      close()
      vim.cmd.edit(vim.fn.fnameescape(node.uri))
    end
  end
  local function map(lhs, fn)
    vim.keymap.set("n", lhs, fn, { buffer = buf, nowait = true, silent = true })
  end
  map("q", close)
  map("<Esc>", close)
  map("<CR>", open_node)
  map("<2-LeftMouse>", open_node)
  map("s", function()
    P.browse(res)
  end)
  -- start on the position
  for line, list in pairs(cells) do
    for _, c in ipairs(list) do
      if c.id == res.position then
        api.nvim_win_set_cursor(win, { line, c.byte })
      end
    end
  end
  describe()
  vim.b[buf].loom_picture = res.tree
  return buf, win
end

--- Write the SVG picture to a file and open it in the browser (vim.ui.open).
function P.browse(res)
  local file = vim.fn.tempname() .. ".svg"
  local f = io.open(file, "w")
  if not f then
    loom.notify("✗ NOT_FOUND: cannot write " .. file, vim.log.levels.ERROR)
    return
  end
  f:write(res.svg)
  f:close()
  vim.g.loom_picture_file = file
  local ok, err = pcall(vim.ui.open, file)
  if not ok then
    loom.notify(("the picture is in %s (%s)"):format(file, tostring(err)))
  else
    loom.notify("the picture is in " .. file)
  end
  return file
end

return P
