-- Every action as a `<Plug>(loom-…)` mapping, and the default keys that point at them.
--
-- The defaults leave Neovim's own keys alone: siblings are `]n`/`[n` (`]s`/`[s` are the
-- spelling motions, which a prose tool needs), `CTRL-]` stays the tag jump (in a loom
-- buffer it goes to the node under the cursor, through the server's definition), `gd`
-- stays Neovim's, and a ghost-text suggestion is dismissed with `<M-h>` (left of `<M-l>`,
-- accept). `K` is Neovim's own LSP hover. Map a `<Plug>` yourself and its default is not
-- set; `keymaps = { next_sibling = "<C-n>", diff = false }` changes or drops single keys;
-- `keymaps = false` sets none.
local K = {}

--- name, <Plug> name, default key, modes, description. `action` names a function of
--- loom.commands' `C.actions`; suggestion keys work in insert mode too.
K.list = {
  { name = "continue", key = "<leader>lc", desc = "continue (commit, then generate)" },
  { name = "fill", key = "<leader>lf", modes = { "x" }, desc = "fill the selection: alternatives for it" },
  { name = "next_sibling", key = "]n", desc = "next sibling of the node under the cursor" },
  { name = "prev_sibling", key = "[n", desc = "previous sibling of the node under the cursor" },
  { name = "siblings", key = "<leader>li", desc = "siblings side by side" },
  { name = "diff", key = "<leader>ld", desc = "compare with the next sibling" },
  { name = "run", key = "<leader>lr", desc = "run the → line" },
  { name = "annotate", key = "<leader>la", desc = "annotate the node" },
  { name = "branch", key = "<leader>lb", desc = "branch here" },
  { name = "bookmark", key = "<leader>lm", desc = "bookmark the node" },
  { name = "prune", key = "<leader>lh", desc = "prune the node (hide its subtree)" },
  { name = "search", key = "<leader>l/", desc = "search every tree" },
  { name = "commit", key = "<leader>lw", desc = "commit" },
  { name = "tree", key = "<leader>lt", desc = "tree overview" },
  { name = "picture", key = "<leader>lg", desc = "the tree as a picture" },
  { name = "cancel", key = "<leader>lx", desc = "cancel generation or exploration" },
  { name = "ask", key = "<leader>lq", desc = "ask the collaborator" },
  { name = "probabilities", key = "<leader>lp", desc = "token probabilities on/off" },
  { name = "score", key = "<leader>le", desc = "score the writer's words on/off" },
  { name = "suggest", key = "<leader>ls", desc = "suggest continuations (ghost text)" },
  { name = "alternatives", key = "<leader>lo", desc = "alternatives at the cursor (branch from one)" },
  { name = "goto_node", key = false, desc = "go to the node under the cursor (CTRL-] does it too)" },
  { name = "suggestion_next", key = "<M-]>", modes = { "n", "i" }, suggestion = true, desc = "next suggestion" },
  { name = "suggestion_prev", key = "<M-[>", modes = { "n", "i" }, suggestion = true, desc = "previous suggestion" },
  { name = "suggestion_accept", key = "<M-l>", modes = { "n", "i" }, suggestion = true, desc = "accept the suggestion" },
  { name = "suggestion_accept_word", key = "<M-Right>", modes = { "n", "i" }, suggestion = true, desc = "accept a word of the suggestion" },
  { name = "suggestion_accept_line", key = "<M-C-Right>", modes = { "n", "i" }, suggestion = true, desc = "accept a line of the suggestion" },
  { name = "suggestion_dismiss", key = "<M-h>", modes = { "n", "i" }, suggestion = true, desc = "dismiss the suggestion" },
}

--- `<Plug>(loom-next-sibling)` for `next_sibling`.
function K.plug(name)
  return "<Plug>(loom-" .. name:gsub("_", "-") .. ")"
end

--- The global `<Plug>` mappings (once, when the plugin loads). Each first makes sure the
--- plugin is set up, then runs its action on the current buffer.
function K.define()
  for _, m in ipairs(K.list) do
    vim.keymap.set(m.modes or "n", K.plug(m.name), function()
      require("loom").ensure()
      require("loom.commands").action(m.name)
    end, { desc = "Loom: " .. m.desc, silent = true })
  end
end

--- The key for action `m` under the `keymaps` option (true, false or a table of keys).
local function key_for(m, option)
  if option == false then
    return nil
  end
  if type(option) == "table" and option[m.name] ~= nil then
    return option[m.name] or nil
  end
  return m.key or nil
end

local OURS = "Loom (default): "

--- Whether the user mapped `plug` in `mode`: globally, or in `buf` (not one of our
--- defaults; hasmapto() would look at the current buffer, which need not be `buf`).
local function user_mapped(buf, plug, mode)
  for _, map in ipairs(vim.api.nvim_get_keymap(mode)) do
    if map.rhs == plug then
      return true
    end
  end
  for _, map in ipairs(vim.api.nvim_buf_get_keymap(buf, mode)) do
    if map.rhs == plug and not vim.startswith(map.desc or "", OURS) then
      return true
    end
  end
  return false
end

--- Buffer-local default keys for a loom buffer: action keys with `keymaps`, suggestion
--- keys with `suggestions` (and `keymaps` not false). A `<Plug>` the user mapped
--- somewhere keeps its own key only.
function K.apply(buf, cfg)
  for _, m in ipairs(K.list) do
    local wanted = (not m.suggestion) or cfg.suggestions
    local lhs = wanted and key_for(m, cfg.keymaps)
    if lhs then
      for _, mode in ipairs(m.modes or { "n" }) do
        if not user_mapped(buf, K.plug(m.name), mode) then
          vim.keymap.set(mode, lhs, K.plug(m.name),
            { buffer = buf, remap = true, silent = true, desc = OURS .. m.desc })
        end
      end
    end
  end
end

return K
