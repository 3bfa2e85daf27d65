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

-- Token probabilities (:Loom probabilities, :Loom score), confident to surprising:
-- Solarized's accents, made to be read on dark and light backgrounds alike, with their
-- 256-colour neighbours for terminals without 'termguicolors' (tmux without RGB: before,
-- only the bold underline of the least likely showed there).
H.probabilities = {
  { "probVeryHigh", "LoomProbVeryHigh", { fg = "#268bd2", ctermfg = 33 } },
  { "probHigh", "LoomProbHigh", { fg = "#2aa198", ctermfg = 37 } },
  { "probMid", "LoomProbMid", { fg = "#b58900", ctermfg = 136 } },
  { "probLow", "LoomProbLow", { fg = "#cb4b16", ctermfg = 166 } },
  { "probVeryLow", "LoomProbVeryLow", { fg = "#dc322f", ctermfg = 160, bold = true, underline = true } },
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
  for _, p in ipairs(H.probabilities) do
    set(0, p[2], vim.tbl_extend("force", p[3], { default = true }))
    set(0, "@lsp.mod." .. p[1], { link = p[2], default = true })
  end
  -- ghost text of a suggested continuation, and its "(k/n)"
  set(0, "LoomSuggestion", { link = "Comment", default = true })
  set(0, "LoomSuggestionCount", { link = "NonText", default = true })
end

function H.setup()
  H.apply()
  vim.api.nvim_create_autocmd("ColorScheme", {
    group = vim.api.nvim_create_augroup("loom_highlight", { clear = true }),
    callback = H.apply,
  })
end

return H
