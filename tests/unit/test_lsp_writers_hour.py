"""Issue 47, items 3, 5 and 6, over a fake host: what the editor says is what happened.

- ``→ continue n:0`` in the editor made three continuations (``n or default``); an
  explicit 0 is refused as the CLI refuses it, before anything is committed.
- A failed ``→ continue`` took the writer's line away and put its ✗ on a line of prose,
  where it stayed; now the line comes back with its ✗ under it, and a later success
  clears it.
- A typo's reading and a partial failure of ``models:`` were last lines, seen only in
  ``:Loom messages``; now they are on the first line, the one the editor shows."""

from __future__ import annotations

import asyncio
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from loom.commands import syntax
from loom.errors import LoomError
from loom.lsp.features import generation as generation_module
from loom.lsp.messages import read_as_first
from loom.uris import node_uri
from tests.unit.fake_host import Features, Subject, features


@pytest.fixture
def f(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Features:
    monkeypatch.setattr(generation_module, "STREAM_FLUSH_S", 0.005)
    return features(tmp_path / "loom.db")


def _open(f: Features) -> str:
    ws = f.host.app.ws
    tree = ws.create_tree("Cats", root_content="Once upon a time.")
    _node, tip = ws.position(ws.human(), tree)
    uri = node_uri(tree, tip)
    f.host.open(uri)
    return uri


class Failing:
    def generate(self, request: Any, on_delta: Any = None) -> Any:
        raise LoomError("MODEL_ERROR", "no API key for anthropic (claude-haiku)",
                        "set ANTHROPIC_API_KEY")


async def _settled(f: Features) -> None:
    for _ in range(100):
        await f.host.settle()
        if not f.generation.background and not f.generation.busy:
            return
        await asyncio.sleep(0.01)


@pytest.mark.parametrize("typed", ["→ continue n:0", "→ continue tokens:0"])
async def test_an_explicit_zero_is_refused_and_nothing_is_committed(f: Features,
                                                                    typed: str) -> None:
    f.host.app.executor.subject = Subject([[" The cat."]])
    uri = _open(f)
    f.host.append(uri, " Typed.\n" + typed)
    ws = f.host.app.ws
    tree = ws.trees()[0][0]
    answer = await f.editing.save_text(uri, f.host.client[uri], run_commands=True)
    assert not answer["ok"] and answer["message"].startswith("✗ LIMIT_EXCEEDED"), answer
    # the save committed what was typed, as a save does; no continuation was made
    root = ws.node(tree.root)
    assert ws.node_count(tree) == 2 and [c.author_type for c in ws.children(root)] == ["human"]
    assert f.host.client[uri].endswith(typed)  # the line stays, with its ✗
    assert [d.message for d in f.published[-1].diagnostics][-1].startswith("✗ LIMIT_EXCEEDED")
    # the editor's own command too (Loom: Continue with n 0)
    direct = await f.generation.continue_(uri, syntax.Continue(n=0))
    assert not direct.ok and direct.code == "LIMIT_EXCEEDED"


async def test_a_failed_continue_puts_the_line_back_with_its_error(f: Features) -> None:
    f.host.app.executor.subject = Failing()
    uri = _open(f)
    line = "→ continue n:1"
    f.host.append(uri, " She waited.\n" + line)
    answer = await f.editing.save_text(uri, f.host.client[uri], run_commands=True)
    assert answer["ok"], answer  # the save answers at once: the generation runs on its own
    await _settled(f)
    assert f.host.client[uri] == "Once upon a time. She waited.\n" + line
    [diag] = f.published[-1].diagnostics
    assert diag.message.startswith("✗ MODEL_ERROR: no API key") and diag.range.start.line == 1
    # with a model that answers, the same line runs again, lands, and its ✗ is gone
    f.host.app.executor.subject = Subject([[" The door opened."]])
    answer = await f.editing.save_text(uri, f.host.client[uri], run_commands=True)
    await _settled(f)
    assert f.host.client[uri] == "Once upon a time. She waited. The door opened."
    assert f.published[-1].diagnostics == []


def test_a_typos_reading_goes_on_the_first_line() -> None:
    text = "✓ generating 2 continuations from [a7x2]...\n  [b1] \"x\"\n(read as → continue n:2)"
    assert read_as_first(text) == ("✓ generating 2 continuations from [a7x2]... "
                                   "(read as → continue n:2)\n  [b1] \"x\"")


async def test_a_typo_read_as_continue_says_so_on_the_line_shown(f: Features) -> None:
    f.host.app.executor.subject = Subject([[" The cat."]])
    uri = _open(f)
    f.host.append(uri, "\n→ contineu n:2 tokens:15")
    answer = await f.editing.save_text(uri, f.host.client[uri], run_commands=True)
    assert answer["message"].startswith(
        "✓ generating 2 continuations (read as → continue n:2 tokens:15)…"), answer["message"]
    await _settled(f)
    shown = [r.text for r in f.host.shown]
    assert shown and shown[-1].splitlines()[0].endswith("(read as → continue n:2 tokens:15)")


async def test_a_partial_failure_of_models_is_on_the_first_line(f: Features) -> None:
    class Partly:
        def generate(self, request: Any, on_delta: Any = None) -> Any:
            comp = SimpleNamespace(index=0, text=" A dog.", finish_reason="stop",
                                   logprobs=None, usage=None, model="local")
            return SimpleNamespace(completions=[comp], model="local", provider="fake",
                                   params={}, usage={}, latency_ms=1.0, raw=[],
                                   failures=["gpt-mini: no API key"])

    f.host.app.executor.subject = Partly()
    uri = _open(f)
    result = await f.generation.continue_(uri, syntax.Continue(n=1))
    assert result.ok, result.text
    assert result.text.splitlines()[0].endswith(
        "✓ 1 of 2 continuations from [" + result.text.split("[")[1].split("]")[0]
        + "] (gpt-mini: no API key)"), result.text
