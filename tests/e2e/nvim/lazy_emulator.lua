-- An init.lua that loads one plugin spec the way lazy.nvim (v11) loads a non-lazy plugin,
-- for tests/e2e/test_nvim_loading.py: lazy.nvim itself is on none of the registries this
-- project installs from. What it does, from lazy.nvim's lua/lazy/core/loader.lua:
--   * lazy.setup turns 'loadplugins' off and loads every plugin itself;
--   * startup: sources $VIMRUNTIME/filetype.lua, runs each spec's `init(plugin)`, then
--     for each start plugin: puts plugin.dir on 'runtimepath' (add_to_rtp), sources
--     plugin.dir/plugin/**/*.{lua,vim} in sorted order and plugin.dir/ftdetect inside
--     `augroup filetypedetect` (packadd/ftdetect), then `config(plugin, opts)` or, with
--     only `opts`, require(main).setup(opts);
--   * the original 'runtimepath' entries' plugin/ files are sourced after that, and a
--     path added during init or config is not among them;
--   * help tags are generated for plugin.dir/doc when a plugin is installed.
-- Environment: LOOM_LAZY_SPEC (a file returning the spec), LOOM_LAZY_DIR (the clone),
-- LOOM_LAZY_OPTS (JSON: the user's opts).
vim.go.loadplugins = false
vim.opt.swapfile = false
vim.opt.shadafile = "NONE"
local spec = dofile(assert(vim.env.LOOM_LAZY_SPEC))
local plugin = vim.tbl_extend("force", spec, {
  dir = assert(vim.env.LOOM_LAZY_DIR),
  name = vim.fs.basename(vim.env.LOOM_LAZY_DIR),
  opts = vim.json.decode(vim.env.LOOM_LAZY_OPTS or "{}"),
})

local function source_runtime(dir)
  local files = {}
  if vim.uv.fs_stat(dir) then
    for name, kind in vim.fs.dir(dir, { depth = 10 }) do
      local ext = name:sub(-4)
      if (kind == "file" or kind == "link") and (ext == ".lua" or ext == ".vim") then
        files[#files + 1] = dir .. "/" .. name
      end
    end
  end
  table.sort(files)
  for _, path in ipairs(files) do
    vim.cmd("source " .. vim.fn.fnameescape(path))
  end
end

if vim.uv.fs_stat(plugin.dir .. "/doc") then -- on install
  vim.cmd.helptags(vim.fn.fnameescape(plugin.dir .. "/doc"))
end
vim.cmd("source " .. vim.fn.fnameescape(vim.env.VIMRUNTIME .. "/filetype.lua"))
if plugin.init then
  plugin.init(plugin)
end
vim.opt.runtimepath:append(plugin.dir)
source_runtime(plugin.dir .. "/plugin")
vim.cmd("augroup filetypedetect")
source_runtime(plugin.dir .. "/ftdetect")
vim.cmd("augroup END")
if type(plugin.config) == "function" then
  plugin.config(plugin, plugin.opts)
elseif plugin.opts then
  require(assert(plugin.main, "lazy.nvim finds no main module: the repository has no lua/")).setup(plugin.opts)
end
