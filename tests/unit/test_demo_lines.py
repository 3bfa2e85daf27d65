"""What `loom demo` prints after Neovim exits: the lines that give one's own Neovim the
plugin it ran with, its database and its `loom` (issue 47: the demo ran `nvim -u <a
temporary init>` and said nothing; with .venv/bin off the PATH, as scripts/run.sh leaves
it, the plugin then found no server)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from loom.demo import own_neovim


def test_the_server_is_named_when_path_has_another_or_none(monkeypatch: pytest.MonkeyPatch
                                                           ) -> None:
    monkeypatch.setenv("PATH", "/nonexistent")
    text = own_neovim(Path("/src/loom/nvim"), "/notes/stories.db")
    loom = Path(sys.executable).parent / "loom"
    assert '  vim.opt.rtp:append("/src/loom/nvim")\n' in text
    assert (f'  vim.g.loom = {{ db = "/notes/stories.db", server_path = "{loom}" }}\n'
            in text)
    assert text.startswith("To use Loom in your own Neovim, add these lines to its init.lua")
    assert ":Loom open" in text and ":help loom-install" in text


def test_no_server_path_when_path_finds_this_loom(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", str(Path(sys.executable).parent))
    text = own_neovim(Path("/src/loom/nvim"), "/notes/stories.db")
    assert '  vim.g.loom = { db = "/notes/stories.db" }\n' in text


def test_paths_are_lua_strings_as_typed(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", str(Path(sys.executable).parent))
    text = own_neovim(Path("/home/zoë/loom/nvim"), '/tmp/a "b".db')
    assert 'vim.opt.rtp:append("/home/zoë/loom/nvim")' in text  # no \u escape
    assert 'db = "/tmp/a \\"b\\".db"' in text
