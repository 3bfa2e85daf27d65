"""render/ is pure: the ambient line and the tree drawing from plain values, and the
Workspace reads that gather those values."""

from __future__ import annotations

from loom.app import App
from loom.commands.context import Actor
from loom.render.ambient import Where, line
from loom.render.tree_drawing import Item, draw


def test_ambient_line_variants_from_plain_values() -> None:
    where = Where("a7x2", 7, "chapter 3", siblings=2, annotations=1, links=0,
                  path_texts=("# Title", "The house stood empty.", ""),
                  permissions=("loom_write", "loom_aware"), others=(("human", "c4m2"),))
    assert line(where, buffer_variant=True) == '⟨node:a7x2 mode:buffer doc:"chapter 3" words:5⟩'
    assert line(where, buffer_variant=False) == (
        "⟨node:a7x2 depth:7 siblings:2 annotations:1 links:0⟩")
    # seed 000: "When more orientation is needed, ambient context can include" the
    # permissions and who else is active: after the ambient line, whichever it is
    assert line(where, buffer_variant=False, extended=True) == (
        "⟨node:a7x2 depth:7 siblings:2 annotations:1 links:0⟩ ⟨permissions:aware,write⟩ "
        "⟨human active at c4m2⟩")
    assert line(where, buffer_variant=True, extended=True) == (
        '⟨node:a7x2 mode:buffer doc:"chapter 3" words:5⟩ ⟨permissions:aware,write⟩ '
        "⟨human active at c4m2⟩")


def test_tree_drawing_from_a_children_map() -> None:
    children = {"r": [Item("a", "a7x2")], "a": [Item("b", "b3k9"), Item("c", "c4m2")],
                "b": [Item("e", "e6p4")]}
    assert draw("", Item("r", "r001"), children, 5, "a") == [
        "[r001] → [a7x2]* (you are here)",
        "         ├→ [b3k9] → [e6p4] (leaf)",
        "         └→ [c4m2] (leaf)",
    ]
    # the note was left out when the current node was not where the drawing
    # started (a non-root leaf, drawn among the alternatives around it)
    assert draw("Root [r001] → ", Item("a", "a7x2"), children, 5, "e") == [
        "Root [r001] → [a7x2]",
        "              ├→ [b3k9] → [e6p4]* (you are here) (leaf)",
        "              └→ [c4m2] (leaf)",
    ]
    assert draw("", Item("r", "r001"), children, 1, None) == ["[r001] → [a7x2] → ... (2 more)"]


def test_continuation_map_holds_what_a_drawing_of_that_depth_needs(app: App) -> None:
    ws, h = app.ws, app.ws.human()
    tree = ws.create_tree("map", "dialogue", root_content="root")
    root = ws.node(tree.root)
    a = ws.add_node(tree, root, "a", h)
    b, c, d = (ws.add_node(tree, a, x, h) for x in "bcd")
    deep = ws.add_node(tree, b, "deep", h)
    ws.add_node(tree, deep, "deeper", h)
    ws.add_node(tree, c, "c's child", h)
    ws.add_node(tree, a, "note", h, kind="annotation")  # annotations are not continuations
    ws.set_flags(d, pruned=True)  # nor are pruned nodes
    found = ws.continuation_map(root.id, 2)
    assert found == {root.id: [(a.id, a.label)], a.id: [(b.id, b.label), (c.id, c.label)],
                     b.id: [(deep.id, deep.label)],
                     c.id: [(ws.children(c)[0].id, ws.children(c)[0].label)]}
    narrow = ws.continuation_map(root.id, 2, per_node=1)  # only b is followed below a
    assert set(narrow) == {root.id, a.id, b.id} and len(narrow[a.id]) == 2


def test_app_gathers_the_extended_ambient_line(app: App, clock) -> None:  # type: ignore[no-untyped-def]
    ws, h = app.ws, app.ws.human()
    tree = ws.create_tree("talk", "dialogue", root_content="Hello.")
    first = ws.add_node(tree, ws.node(tree.root), "One.", h)
    ws.add_node(tree, ws.node(tree.root), "Two.", h)
    other = ws.ensure_participant("ada", "human", "human", ["loom_aware"])
    ws.set_position(other, tree, first)
    ws.set_position(h, tree, first)
    line_ = app.ambient(Actor(h, tree), extended=True)
    assert line_ == (f"⟨node:{first.local_id} depth:1 siblings:1 annotations:0 links:0⟩ "
                     "⟨permissions:aware,write,generate,read,docwrite,crosstree⟩ "
                     f"⟨ada active at {first.label}⟩")
