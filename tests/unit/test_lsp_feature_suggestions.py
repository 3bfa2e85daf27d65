"""``Suggestions`` over a fake host (``fake_host.py``): suggest generates continuations
without moving, they are offered at the end of the buffer, and words accepted one by one
grow one node (the cut moves), not a node per word."""

from __future__ import annotations

from pathlib import Path

import pytest

from loom.commands import syntax
from loom.uris import node_uri
from tests.unit.fake_host import Features, Subject, features


@pytest.fixture
def f(tmp_path: Path) -> Features:
    f = features(tmp_path / "loom.db")
    f.host.app.executor.subject = Subject([[" The cat sat on the mat."], [" A dog barked."]])
    return f


async def test_suggest_then_accept_word_by_word_grows_one_node(f: Features) -> None:
    ws = f.host.app.ws
    tree = ws.create_tree("Cats", root_content="Once upon a time.")
    _node, root = ws.position(ws.human(), tree)
    uri = node_uri(tree, root)
    f.host.open(uri)
    doc = f.host.docs.open[uri]

    offered = await f.suggestions.suggest(uri, syntax.Continue(n=2))
    assert offered.ok, offered.text
    assert doc.view.tip is not None and doc.view.tip.id == root.id  # it stayed
    items = f.suggestions.items(doc, len(f.host.client[uri]))
    assert sorted(s.text for s in items) == [" A dog barked.", " The cat sat on the mat."]
    cat = next(s for s in items if s.text.startswith(" The"))

    word = await f.suggestions.accept(uri, cat.node, " The", inserted=False)
    assert word.ok, word.text
    assert f.host.client[uri] == "Once upon a time. The"
    head = word.data["node"]
    assert ws.node(head).content == " The"
    nodes = ws.node_count(tree)  # the split: a head, and the rest after it

    [rest] = f.suggestions.items(doc, len(f.host.client[uri]))  # offered after the word
    assert rest.text == " cat sat on the mat."
    more = await f.suggestions.accept(uri, rest.node, " cat", inserted=False)
    assert more.ok, more.text
    assert more.data["node"] == head and ws.node(head).content == " The cat"
    assert ws.node_count(tree) == nodes  # the same node grew: no node per word
    assert f.host.client[uri] == "Once upon a time. The cat"
    assert doc.view.tip is not None and doc.view.tip.id == head
    [rest] = f.suggestions.items(doc, len(f.host.client[uri]))
    assert rest.text == " sat on the mat."
