"""An import's nodes are found by search (on SQLite they are queued for the index in one
statement at the end of the import, not row by row: ``fulltext.deferred``; the next search
indexes them), and nodes written after an import, or after an import that failed, are
indexed as before. On both backends."""

from __future__ import annotations

import copy
import re
from typing import Any

import pytest

from loom.errors import LoomError
from loom.interchange import import_data, import_file
from loom.store import reader
from loom.store.bulk import Bulk
from loom.store.schema import Node
from tests.unit.interchange_support import DEMO, MINIMAL


def _words(text: str) -> set[str]:
    return {w.lower() for w in re.findall(r"[a-z]{6,}", text, re.IGNORECASE)}


def test_imported_nodes_are_found_by_search(app: Any) -> None:
    tree = import_file(app.ws, DEMO).trees[0].tree
    nodes = list(Node.select().where(Node.tree == tree.id))
    # a word few nodes hold, so that every one of them is among the hits
    counts: dict[str, int] = {}
    for n in nodes:
        for w in _words(n.content):
            counts[w] = counts.get(w, 0) + 1
    word = min((w for w, c in counts.items() if 3 <= c <= 10), key=lambda w: (counts[w], w))
    holding = {n.id for n in nodes if word in n.content.lower()}
    found = {h.node.id for h in reader.search(app.ws, word, include_hidden=True)}
    assert holding <= found
    # a node added after the import is indexed as it is written
    added = app.ws.add_node(tree, app.ws.node(tree.root), " quixotically zanzibar",
                            app.ws.human())
    assert [h.node.id for h in reader.search(app.ws, "zanzibar")] == [added.id]


def test_after_a_failed_import_nodes_are_still_indexed(app: Any,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    ok = import_data(app.ws, copy.deepcopy(MINIMAL)).trees[0].tree
    real = Bulk.edges

    def failing(self: Bulk, rows: list[dict[str, Any]], dumps: Any = None) -> None:
        real(self, rows, dumps)
        raise LoomError("CONFLICT", "the disk said no")

    monkeypatch.setattr(Bulk, "edges", failing)
    with pytest.raises(LoomError):
        import_file(app.ws, DEMO)
    monkeypatch.setattr(Bulk, "edges", real)
    assert Node.select().count() == len(MINIMAL["trees"][0]["nodes"])  # nothing kept
    added = app.ws.add_node(ok, app.ws.node(ok.root), " quixotically zanzibar",
                            app.ws.human())
    assert [h.node.id for h in reader.search(app.ws, "zanzibar")] == [added.id]
