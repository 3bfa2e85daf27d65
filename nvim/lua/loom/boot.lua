-- What loading the plugin does, once, before any setup(): the `loom` filetype, the `:Loom`
-- command, the `<Plug>(loom-…)` mappings, the `loom://` read/write and LspAttach
-- autocommands, `vim.lsp.enable("loom")` and the help tags. plugin/loom.lua calls it when
-- Neovim (or a plugin manager, through the repository's top-level plugin/loom.lua) loads
-- plugins; setup() calls it too, for a config that puts `nvim/` on the runtime path after
-- plugin/ files were sourced. Each trigger sets the plugin up with vim.g.loom's options on
-- first use (require("loom").ensure()).
local M = {}

local loaded = false

--- Generate nvim/doc/tags when missing or older than loom.txt: plugin managers make help
--- tags for a plugin's top-level doc/, and this plugin's lives in the repository's nvim/.
--- A read-only install (a system package) is left as it is.
function M.helptags()
  local root = vim.fn.fnamemodify(debug.getinfo(1, "S").source:sub(2), ":p:h:h:h") -- nvim/
  local doc = vim.fs.joinpath(root, "doc")
  local txt = vim.uv.fs_stat(vim.fs.joinpath(doc, "loom.txt"))
  if not txt then
    return
  end
  local tags = vim.uv.fs_stat(vim.fs.joinpath(doc, "tags"))
  if tags and tags.mtime.sec >= txt.mtime.sec then
    return
  end
  pcall(vim.cmd.helptags, vim.fn.fnameescape(doc))
end

function M.load()
  if loaded then
    return
  end
  loaded = true
  local api = vim.api
  vim.filetype.add({ extension = { loom = "loom" } })

  api.nvim_create_user_command("Loom", function(opts)
    require("loom").ensure()
    require("loom.commands").dispatch(opts)
  end, {
    nargs = "*",
    complete = function(arglead, cmdline)
      require("loom").ensure()
      return require("loom.commands").complete(arglead, cmdline)
    end,
    desc = "Loom: open | new | tree | picture | continue | fill | suggest | branch | next | prev | siblings | diff | bookmark | tag | rate | prune | delete | search | annotate | run | commit | import | export | cancel | status | ask | stop | probabilities | score | alternatives",
  })

  require("loom.keymaps").define()

  local group = api.nvim_create_augroup("loom", { clear = true })
  api.nvim_create_autocmd("BufReadCmd", {
    group = group,
    pattern = "loom://*",
    desc = "Loom: read a loom: document from the server",
    callback = function(ev)
      require("loom").ensure()
      require("loom.buffers").on_read(ev)
    end,
  })
  api.nvim_create_autocmd({ "BufWriteCmd", "FileWriteCmd" }, {
    group = group,
    pattern = "loom://*",
    desc = "Loom: commit the buffer / save the document",
    callback = function(ev)
      require("loom").ensure()
      require("loom.buffers").on_write(ev)
    end,
  })
  api.nvim_create_autocmd("LspAttach", {
    group = group,
    desc = "Loom: buffer-local completion, inlay hints and keys",
    callback = function(ev)
      local client = vim.lsp.get_client_by_id(ev.data.client_id)
      if client and client.name == "loom" then
        require("loom").ensure()
        require("loom.buffers").on_lsp_attach(ev)
      end
    end,
  })
  if vim.fn.has("nvim-0.11") == 1 then
    -- *.loom files attach through lsp/loom.lua (loom:// buffers, buftype=acwrite, which
    -- vim.lsp.enable skips, are attached when they are read)
    vim.lsp.enable("loom")
  end
  M.helptags()
end

return M
