-- Run by tests/e2e/test_nvim_loading.py after an init that loads the plugin one way or
-- another (lazy.nvim's loader, :packadd, pack/*/start, a runtimepath entry): what a user
-- would find, written as JSON to $LOOM_PROBE_OUT. Environment: LOOM_PROBE_FILE (a .loom
-- file), LOOM_PROBE_URI (a loom: path), LOOM_PROBE_OUT.
local out = { errors = {} }
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
try(":help loom", function()
  vim.cmd("help loom")
  out.help_file = vim.fn.expand("%:t")
  vim.cmd("help <Plug>(loom-next-sibling)")
  out.help_plug_line = vim.fn.getline(".")
  vim.cmd("help loom-install")
  out.help_install_line = vim.fn.getline(".")
end)
local f = assert(io.open(assert(vim.env.LOOM_PROBE_OUT), "w"))
f:write(vim.json.encode(out))
f:close()
vim.cmd("qa!")
