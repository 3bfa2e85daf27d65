-- Run by tests/e2e/test_nvim_loading.py after an init that loads the plugin one way or
-- another (lazy.nvim, a package in pack/*/start or pack/*/opt, a runtimepath entry): what
-- a user would find, written as JSON to $LOOM_PROBE_OUT. Environment: LOOM_PROBE_FILE (a
-- .loom file), LOOM_PROBE_URI (a loom: path), LOOM_PROBE_TAGS (JSON: every tag of
-- doc/loom.txt), LOOM_PROBE_OUT.
local out = { errors = {}, help_elsewhere = {}, untagged = {} }
local function attached()
  return vim.wait(20000, function()
    for _, c in ipairs(vim.lsp.get_clients({ bufnr = 0, name = "loom" })) do
      if c.initialized then
        return true
      end
    end
    return false
  end, 20)
end
local function try(what, fn)
  local ok, err = pcall(fn)
  if not ok then
    table.insert(out.errors, what .. ": " .. tostring(err))
  end
  return ok
end

out.command_before_use = vim.fn.exists(":Loom") == 2
out.plug_before_use = vim.fn.maparg("<Plug>(loom-next-sibling)", "n") ~= ""
out.setup_before_use = package.loaded["loom"] ~= nil and require("loom").did_setup or false
out.clients_before_use = #vim.lsp.get_clients()

try("the .loom file", function()
  vim.cmd.edit(vim.fn.fnameescape(vim.env.LOOM_PROBE_FILE))
  out.file_filetype = vim.bo.filetype
  out.file_attached = attached()
end)
try("the loom: buffer", function()
  vim.cmd.edit(vim.fn.fnameescape(vim.env.LOOM_PROBE_URI))
  out.uri_attached = attached()
  out.uri_text = table.concat(vim.api.nvim_buf_get_lines(0, 0, -1, false), "\n")
  out.uri_modified = vim.bo.modified
  local maps = {}
  for _, m in ipairs(vim.api.nvim_buf_get_keymap(0, "n")) do
    maps[m.lhs] = m.rhs or ""
  end
  out.maps = maps
  out.tagfunc = vim.bo.tagfunc
end)
out.version = package.loaded["loom"] and require("loom").version or nil

--- `:help SUBJECT`: the help file it opened and the line the cursor is on.
local function help(subject)
  local ok = pcall(vim.cmd.help, subject)
  if not ok then
    return nil, nil
  end
  return vim.fn.expand("%:t"), vim.fn.getline("."), vim.fn.getline(vim.fn.line(".") + 1)
end

try(":help loom", function()
  out.help_file = help("loom")
  out.help_plug_line = select(2, help("<Plug>(loom-next-sibling)"))
  out.help_install_line = select(2, help("loom-install"))
  -- every tag of loom.txt leads there (lazy.nvim makes `loom-…` tags of README.md's
  -- headings: one the same as ours would make :help go either way)
  for _, tag in ipairs(vim.json.decode(vim.env.LOOM_PROBE_TAGS or "[]")) do
    local file = help(tag)
    if file ~= "loom.txt" then
      table.insert(out.help_elsewhere, tag .. " → " .. tostring(file))
    end
  end
  -- every :Loom subcommand and <Plug> mapping, from the plugin's own tables, has a tag
  -- on the line above its entry
  local names = require("loom.commands").names()
  out.subcommands = names
  for _, name in ipairs(names) do
    local file, line, below = help("loom-" .. name)
    if file ~= "loom.txt" or not line:find("*loom-" .. name .. "*", 1, true)
        or not below:find(":Loom " .. name, 1, true) and not below:find(" " .. name, 1, true) then
      table.insert(out.untagged, ":Loom " .. name)
    end
  end
  local keymaps = require("loom.keymaps")
  for _, m in ipairs(keymaps.list) do
    local plug = keymaps.plug(m.name)
    local file, line = help(plug)
    if file ~= "loom.txt" or not line:find("*" .. plug .. "*", 1, true) then
      table.insert(out.untagged, plug)
    end
  end
end)
local f = assert(io.open(assert(vim.env.LOOM_PROBE_OUT), "w"))
f:write(vim.json.encode(out))
f:close()
vim.cmd("qa!")
