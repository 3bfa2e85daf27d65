-- Minimal init for the end-to-end tests: the real plugin against the real server.
-- Environment: LOOM_PLUGIN_DIR (…/nvim), LOOM_PYTHON (the venv's python), LOOM_DB.
vim.opt.runtimepath:prepend(assert(vim.env.LOOM_PLUGIN_DIR, "LOOM_PLUGIN_DIR"))
vim.opt.swapfile = false
vim.opt.shadafile = "NONE"
vim.opt.hidden = true
vim.opt.completeopt = { "menuone", "noselect", "popup" }
-- messages from vim.notify are kept for the test to read
_G.loom_messages = {}
vim.notify = function(msg, level)
  table.insert(_G.loom_messages, { msg = tostring(msg), level = level })
end
vim.cmd("runtime plugin/loom.lua")
require("loom").setup({
  cmd = { assert(vim.env.LOOM_PYTHON), "-m", "loom.cli", "--db", assert(vim.env.LOOM_DB), "serve" },
  db = vim.env.LOOM_DB,
})
