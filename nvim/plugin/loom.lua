-- Loom: nothing runs until require("loom").setup{} is called. Filetype for *.loom files.
if vim.g.loaded_loom then
  return
end
vim.g.loaded_loom = true
vim.filetype.add({ extension = { loom = "loom" } })
