"""``Generation`` over a fake host (``fake_host.py``): a continue streams the model's
pieces into the editor, lands the first continuation as a node at the path's end, and a
cancel puts the text back as it was with nothing written."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from loom.commands import syntax
from loom.lsp.features import generation as generation_module
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


async def test_a_continue_streams_and_lands_a_node(f: Features) -> None:
    f.host.app.executor.subject = Subject([[" The", " cat", " sat", "."], [" A dog."]])
    uri = _open(f)
    ws = f.host.app.ws
    root = ws.position(ws.human(), ws.trees()[0][0])[1]
    result = await f.generation.continue_(uri, syntax.Continue(n=2))
    assert result.ok, result.text
    first, second = (ws.node(i) for i in result.data["created"])
    assert (first.content, second.content) == (" The cat sat.", " A dog.")
    assert result.text.splitlines()[0] == f"✓ 2 continuations from [{root.label}]"
    # pieces reached the editor before the node landed, then the node itself
    streamed = [text for u, text in f.host.edits if u == uri]
    assert any(text.startswith("Once upon a time. The") and text != streamed[-1]
               for text in streamed)
    assert f.host.client[uri] == "Once upon a time. The cat sat."
    doc = f.host.docs.open[uri]
    assert doc.view.tip is not None and doc.view.tip.id == first.id
    assert [s.node for s in doc.session.segments] == [root.id, first.id]
    assert not f.generation.busy and not doc.generating


async def test_a_cancelled_continue_restores_the_text_and_writes_nothing(f: Features) -> None:
    subject = Subject([[" The", " cat"]], hold=True)
    f.host.app.executor.subject = subject
    uri = _open(f)
    f.host.append(uri, " Typed.")
    ws = f.host.app.ws
    tree = ws.trees()[0][0]
    running = asyncio.ensure_future(f.generation.continue_(uri, syntax.Continue(n=1)))
    await asyncio.to_thread(subject.started.wait, 5.0)
    for _ in range(200):  # the first piece shows in the editor
        if f.host.client[uri].endswith(" Typed. The"):
            break
        await asyncio.sleep(0.005)
    assert f.host.client[uri] == "Once upon a time. Typed. The"
    nodes = ws.node_count(tree)  # the typed text was committed before generating
    assert f.generation.cancel()
    result = await running
    assert result.ok and result.data.get("cancelled"), result.text
    assert result.text == "✓ generation cancelled: nothing was added"
    assert ws.node_count(tree) == nodes
    assert f.host.client[uri] == "Once upon a time. Typed."
    assert not f.generation.cancel()  # nothing left to cancel
