"""Branching the middle in a real headless Neovim (issue 46, item 1): select a span in
visual mode, fill it (`<leader>lf`, and `:Loom fill`), see the first alternative in its
place with the text around it and below it unchanged, cycle the versions in the sibling
picker (`:Loom siblings`), accept one; the buffer stays clean. Same harness as
``test_nvim_writer.py`` (the demo, the plugin from ``nvim/``, the real server, a local
wire-format server as the model)."""

from __future__ import annotations

import itertools
import time

import pytest

from tests.e2e import test_nvim_plugin as harness
from tests.e2e import test_nvim_writer as writer
from tests.e2e.fake_provider import LLAMA_INFILL, FakeProvider, llama_infill_stream
from tests.e2e.test_nvim_plugin import Demo, Editor, wait_for

template = harness.template
demo = harness.demo
editor = harness.editor
fake = writer.fake

pytestmark = pytest.mark.nvim

SPAN = "Her hand found the latch"
SAID = {1: "Her fingers closed on the cold iron", 2: "She reached for the bolt"}


def select(editor: Editor, text: str) -> None:
    """Visual mode over ``text`` (on one line), as a person selects it."""
    editor.nvim.input("<Esc>")
    editor.set_cursor_on(text)
    editor.nvim.input("v" + (f"{len(text) - 1}l" if len(text) > 1 else ""))
    wait_for(lambda: editor.lua("return vim.fn.mode()") == "v", 5, "visual mode")


def test_select_fill_cycle_the_versions_and_accept_one(fake: FakeProvider, editor: Editor,
                                                      demo: Demo) -> None:
    asked = itertools.count(1)
    fake.set_default(LLAMA_INFILL, lambda _r: llama_infill_stream(SAID[next(asked) % 2 + 1]))
    editor.open(demo.uri(demo.tip))
    before = editor.text
    assert SPAN in before
    editor.lua("require('loom').config.default_n = 2; return true")
    sent_before = len(fake.requests_to(LLAMA_INFILL))
    # the mapping in visual mode: the selection itself
    select(editor, SPAN)
    editor.nvim.input("\\lf")
    wait_for(lambda: any(m.startswith("✓ filling") for m in editor.messages()), 20,
             "✓ filling …")
    done = next(m for m in editor.messages() if m.startswith("✓ filling"))
    assert 'with 2 versions...' in done and f'("{SPAN}")' in done, done
    wait_for(lambda: any(t in editor.text for t in SAID.values()), 10, "the first version")
    shown = next(t for t in SAID.values() if t in editor.text)
    assert editor.text == before.replace(SPAN, shown)  # the text around it, unchanged
    assert len(fake.requests_to(LLAMA_INFILL)) == sent_before + 2
    body = fake.requests_to(LLAMA_INFILL)[-1].json
    assert body["input_prefix"].endswith("She stopped at the gate. ")
    assert not editor.lua("return vim.bo.modified")
    # the sibling picker lists the versions; <CR> on the other shows it in the span's place
    other = next(t for t in SAID.values() if t != shown)
    editor.set_cursor_on(shown)
    editor.cmd("Loom siblings")
    wait_for(lambda: editor.lua("return vim.bo.filetype") == "loomsiblings", 10,
             "the sibling picker")
    rows = editor.lines
    assert any(other in row for row in rows) and any("version of [" in row for row in rows), rows
    editor.set_cursor_on(other)
    editor.nvim.input("<CR>")
    wait_for(lambda: other in editor.text, 10, "the other version in the span's place")
    assert editor.text == before.replace(SPAN, other)
    # accepted: it stays (a save writes nothing, the buffer is clean)
    time.sleep(0.3)
    editor.cmd("w")
    time.sleep(0.3)
    assert editor.text == before.replace(SPAN, other)
    assert not editor.lua("return vim.bo.modified")
    versions = demo.scalar("SELECT count(*) FROM node WHERE version_of = (SELECT id FROM "
                           "node WHERE content LIKE ? AND version_of IS NULL)", f"%{SPAN}%")
    assert versions == 2


def test_loom_fill_fills_the_last_visual_selection(fake: FakeProvider, editor: Editor,
                                                   demo: Demo) -> None:
    fake.set_default(LLAMA_INFILL, llama_infill_stream("A latch"))
    editor.open(demo.uri(demo.tip))
    before = editor.text
    select(editor, SPAN)
    editor.nvim.input("<Esc>")
    editor.cmd("Loom fill 1")
    wait_for(lambda: "A latch" in editor.text, 20, "the filled span")
    assert editor.text == before.replace(SPAN, "A latch")
    wait_for(lambda: any(m.startswith("✓ filling") and "with 1 version..." in m
                         for m in editor.messages()), 10, "✓ filling … with 1 version")
