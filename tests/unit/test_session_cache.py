"""The editor session's caches give what the store gives: a path from the cache,
extended from a cached one, or walked again after a change that alters it, is always the
path ``Workspace.path`` walks; rendered views follow positions and versions."""

from __future__ import annotations

from loom.lsp.documents import OpenDocuments
from loom.lsp.session_cache import SessionCache
from loom.uris import node_uri


def _chain(ws, tree, parent, n, who):  # type: ignore[no-untyped-def]
    nodes = []
    for i in range(n):
        parent = ws.add_node(tree, parent, f" step {i}.", who)
        nodes.append(parent)
    return nodes


def _ids(rows) -> list[str]:  # type: ignore[no-untyped-def]
    return [r.id for r in rows]


def _spine(app, n):  # type: ignore[no-untyped-def]
    """A tree whose root has a chain of ``n`` nodes: (ws, human, tree, the chain)."""
    ws = app.ws
    human = ws.human()
    tree = ws.create_tree("t", root_content="Once.")
    return ws, human, tree, _chain(ws, tree, ws.node(tree.root), n, human)


def test_a_cached_path_is_the_stores_path_and_is_reused(app) -> None:  # type: ignore[no-untyped-def]
    ws, human, _tree, spine = _spine(app, 30)
    cache = SessionCache(ws, human)
    first = cache.path(spine[-1], prefer=(spine[-1].id,))
    assert _ids(first) == _ids(ws.path(spine[-1], prefer=(spine[-1].id,)))
    again = cache.path(spine[-1], prefer=(spine[-1].id,))
    assert _ids(again) == _ids(first) and cache.hits == 1


def test_a_new_child_or_sibling_extends_the_cached_path(app) -> None:  # type: ignore[no-untyped-def]
    ws, human, tree, spine = _spine(app, 20)
    cache = SessionCache(ws, human)
    cache.path(spine[-1], prefer=(spine[-1].id,))
    child = ws.add_node(tree, spine[-1], " more.", human)  # a continuation keeps the cache
    sibling = ws.add_node(tree, spine[10], " elsewhere.", human)
    below = _chain(ws, tree, sibling, 3, human)
    for tip in (child, sibling, below[-1]):
        got = cache.path(tip, prefer=(tip.id,))
        assert _ids(got) == _ids(ws.path(tip, prefer=(tip.id,)))
    assert ws.path_step(child.id)[1] == [spine[-1].id]


def test_a_version_on_the_path_walks_it_again(app) -> None:  # type: ignore[no-untyped-def]
    ws, human, tree, spine = _spine(app, 10)
    cache = SessionCache(ws, human)
    before = cache.path(spine[-1], prefer=(spine[-1].id,))
    version = ws.add_version(tree, spine[4], " changed.", human)
    after = cache.path(spine[-1], prefer=(spine[-1].id,))
    assert _ids(after) == _ids(ws.path(spine[-1], prefer=(spine[-1].id,)))
    assert version.id in _ids(after) and _ids(after) != _ids(before)
    # a new node below the versioned one has two sources: never extended, always walked
    child = ws.add_node(tree, spine[-1], " on.", human)
    assert _ids(cache.path(child, prefer=(child.id,))) == _ids(
        ws.path(child, prefer=(child.id,)))


def test_views_follow_the_participants_position(app) -> None:  # type: ignore[no-untyped-def]
    ws, human, tree, spine = _spine(app, 5)
    ws.set_position(human, tree, spine[-1], spine[-1])
    docs = OpenDocuments(ws, human, "utf-16", "s1")
    uri = node_uri(tree, spine[2])
    text, view = docs.text_for(uri)
    assert view.tip.id == spine[-1].id and text.endswith(" step 4.")
    other = ws.add_node(tree, spine[1], " elsewhere.", human)
    ws.set_position(human, tree, other, other)  # moved elsewhere: the view follows
    text, view = docs.text_for(node_uri(tree, spine[1]))
    assert view.tip.id == other.id and text.endswith(" elsewhere.")
    assert docs.peek(node_uri(tree, spine[1])).tip.id == other.id
