-- Highlight groups for the server's semantic tokens. Every group is `default`, so a
-- colour scheme or the user can override it (:hi LoomModel guifg=…).
local H = {}

H.links = {
  LoomModel = "Special", -- text a model wrote
  LoomHuman = "Normal", -- text a human wrote
  LoomArrow = "Operator",
  LoomVerb = "Statement",
  LoomNodeRef = "Tag",
  LoomFlag = "Identifier",
  LoomString = "String",
  LoomDocRef = "Underlined",
}

H.tokens = {
  loomModel = "LoomModel",
  loomHuman = "LoomHuman",
  loomArrow = "LoomArrow",
  loomVerb = "LoomVerb",
  loomNodeRef = "LoomNodeRef",
  loomFlag = "LoomFlag",
  loomString = "LoomString",
  loomDocRef = "LoomDocRef",
}

function H.apply()
  local set = vim.api.nvim_set_hl
  for group, target in pairs(H.links) do
    set(0, group, { link = target, default = true })
  end
  -- human edits inside model text, and the first character of each node
  set(0, "LoomEdited", { italic = true, default = true })
  set(0, "LoomNodeStart", { default = true })
  set(0, "LoomPosition", { link = "Search", default = true }) -- the position in the picture
  for token, group in pairs(H.tokens) do
    set(0, "@lsp.type." .. token, { link = group, default = true })
  end
  set(0, "@lsp.mod.edited", { link = "LoomEdited", default = true })
  set(0, "@lsp.mod.nodeStart", { link = "LoomNodeStart", default = true })
end

function H.setup()
  H.apply()
  vim.api.nvim_create_autocmd("ColorScheme", {
    group = vim.api.nvim_create_augroup("loom_highlight", { clear = true }),
    callback = H.apply,
  })
end

return H
