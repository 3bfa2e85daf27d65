"""`:Loom continue` with any of `→ continue`'s options, in a real headless Neovim against
the real server, the subject model a local fake that records each request (issue 44,
item 5): the plugin passes what is typed as it is, and the server reads it with the
grammar of a typed `→ continue` line. Same harness as ``test_nvim_plugin.py``."""

from __future__ import annotations

import pytest

from tests.e2e import test_nvim_plugin as harness
from tests.e2e import test_nvim_writer as writer
from tests.e2e.fake_provider import OPENAI_COMPLETIONS, FakeProvider, openai_completion_stream
from tests.e2e.test_nvim_plugin import Demo, Editor, wait_for

template = harness.template
demo = harness.demo
editor = harness.editor
fake = writer.fake

pytestmark = pytest.mark.nvim


def test_loom_continue_sends_the_options_typed_to_the_model(fake: FakeProvider, editor: Editor,
                                                            demo: Demo) -> None:
    """`:Loom continue` passed only N and TOKENS: temperature, top_p, seed or models
    could not be asked from Neovim. (The fake answers each request as asked.)"""
    editor.open(demo.uri(demo.tip))
    editor.cmd("Loom continue temperature:0.3 n:2 seed:7")
    wait_for(lambda: any(m.startswith("✓ 2 continuations") for m in editor.messages()), 20,
             "✓ 2 continuations")
    assert "Loom: generating (→ continue n:2 temperature:0.3 seed:7)… (:Loom cancel to stop)" \
        in editor.messages(), editor.messages()  # what is asked, as the server read it
    asked = [r.json for r in fake.requests_to(OPENAI_COMPLETIONS)]
    assert asked and all(b["temperature"] == 0.3 for b in asked), asked
    assert sum(b.get("n", 1) for b in asked) == 2, asked
    assert sorted(b["seed"] for b in asked) == [7, 8], asked  # continuation i: seed + i


def test_a_mistyped_option_is_refused_as_the_typed_line_is(fake: FakeProvider, editor: Editor,
                                                           demo: Demo) -> None:
    """An option `→ continue` does not take: the grammar's ✗ with its hint, nothing asked
    of the model and nothing committed; a near-miss is read, and said."""
    editor.open(demo.uri(demo.tip))
    nodes = demo.scalar("SELECT count(*) FROM node")
    editor.cmd("Loom continue n:2 bogus:1")
    wait_for(lambda: any("INVALID_SYNTAX" in m for m in editor.messages()), 20, "the ✗")
    refused = next(m for m in editor.messages() if "INVALID_SYNTAX" in m)
    assert refused.startswith('✗ INVALID_SYNTAX: unknown option "bogus:" for continue'), refused
    assert not any("generating" in m for m in editor.messages()), editor.messages()
    assert fake.requests_to(OPENAI_COMPLETIONS) == []
    assert demo.scalar("SELECT count(*) FROM node") == nodes
    fake.script(OPENAI_COMPLETIONS, openai_completion_stream([" A dog barked."]))
    editor.cmd("Loom continue 1 temprature:0.5")
    wait_for(lambda: any(m.startswith("✓ 1 continuation") for m in editor.messages()), 20,
             "✓ 1 continuation")
    said = next(m for m in editor.messages() if m.startswith("✓ 1 continuation"))
    assert "(read as → continue temperature:0.5)" in said.splitlines()[0], said
    (asked,) = [r.json for r in fake.requests_to(OPENAI_COMPLETIONS)]
    assert asked["temperature"] == 0.5 and asked.get("n", 1) == 1, asked
