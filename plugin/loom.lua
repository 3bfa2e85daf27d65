-- The repository's top folder as a plugin (lazy.nvim, vim.pack, packer and vim-plug load it
-- as it is cloned): the plugin itself is nvim/, so put that on 'runtimepath' right after this
-- folder and load it as nvim/plugin/loom.lua does.
local root = vim.fn.fnamemodify(debug.getinfo(1, "S").source:sub(2), ":p:h:h")
local nvim = vim.fs.joinpath(root, "nvim")
local rtp = vim.opt.runtimepath:get()
if not vim.tbl_contains(rtp, nvim) then
  local at = #rtp + 1
  for i, path in ipairs(rtp) do
    if vim.fs.normalize(path) == vim.fs.normalize(root) then
      at = i + 1
      break
    end
  end
  table.insert(rtp, at, nvim)
  vim.opt.runtimepath = rtp
end
dofile(vim.fs.joinpath(nvim, "plugin", "loom.lua"))
