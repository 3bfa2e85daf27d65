-- `loom serve` for Neovim 0.11's vim.lsp.config: `vim.lsp.enable("loom")` (the plugin does
-- it when it loads) attaches it to *.loom files; override fields with
-- `vim.lsp.config("loom", { … })`, or pass options to require("loom").setup{}.
return require("loom").lsp_config()
