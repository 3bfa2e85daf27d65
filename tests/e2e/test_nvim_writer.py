"""The writer's loom in a real headless Neovim (issue 14): typing commands at human speed,
labels and messages that stay out of the way, bookmarks, search, the tree picture and the
sibling picker. Same harness as ``test_nvim_plugin.py`` (the demo database, the plugin
from ``nvim/``, the real server)."""

from __future__ import annotations

import time

import pytest

from tests.e2e.test_nvim_plugin import (  # noqa: F401 - fixtures used by name
    Demo,
    Editor,
    demo,
    editor,
    loom_cli,
    template,
    wait_for,
)

pytestmark = pytest.mark.nvim


def type_slowly(editor: Editor, text: str, delay: float = 0.15) -> None:
    """Type ``text`` one key at a time, as a person does (150 ms a key by default)."""
    for ch in text:
        editor.nvim.input("<lt>" if ch == "<" else ch)
        time.sleep(delay)


def test_typing_a_command_at_human_speed_is_never_rewritten(editor: Editor, demo: Demo) -> None:
    """Finding 1: with Neovim's default completeopt (menu,popup) the auto-triggered
    completion inserted its first item while the user typed."""
    editor.cmd("set completeopt=menu,popup")  # what `loom demo` leaves: Neovim's default
    editor.open(demo.uri(demo.tip))
    cot = editor.lua("return vim.bo.completeopt")
    assert "noselect" in cot or "noinsert" in cot, cot
    for typed in ("→ continue n:3", '→ annotate root "a quiet start"', "→ view root full"):
        editor.nvim.input("<Esc>Go")
        type_slowly(editor, typed)
        time.sleep(0.6)  # let a late completion answer arrive
        editor.nvim.input("<Esc>")
        wait_for(lambda: editor.lua("return vim.fn.mode()") == "n", 5, "normal mode")
        assert editor.lines[-1] == typed, editor.lines[-1]


def test_arrow_typed_as_ascii_becomes_the_arrow(editor: Editor, demo: Demo) -> None:
    """`->` then a space at the start of a line is turned into `→ ` (the docs say how to
    type `→` directly: the digraph CTRL-K - >)."""
    editor.open(demo.uri(demo.tip))
    editor.nvim.input("Go")
    type_slowly(editor, "-> view root", 0.05)
    editor.nvim.input("<Esc>")
    wait_for(lambda: editor.lines[-1] == "→ view root", 5, "the arrow")
    # in prose, an arrow stays what it is
    editor.nvim.input("Go")
    type_slowly(editor, "she went -> there", 0.02)
    editor.nvim.input("<Esc>")
    wait_for(lambda: editor.lines[-1] == "she went -> there", 5, "prose untouched")
