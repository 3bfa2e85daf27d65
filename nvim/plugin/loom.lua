-- Loom: `:Loom`, the `<Plug>(loom-…)` mappings, `*.loom` files and `loom://` buffers, with
-- or without require("loom").setup{} (options may also come from vim.g.loom). No server
-- starts until a loom buffer is opened or :Loom is used.
if vim.g.loaded_loom then
  return
end
vim.g.loaded_loom = true
require("loom.boot").load()
