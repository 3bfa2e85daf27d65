"""The demo tree: a short story with branches, annotations, links and a document."""

from __future__ import annotations

from loom.app import App
from loom.model import permissions as perms
from loom.store.schema import Tree
from loom.store.workspace import Workspace

TITLE = "The House at the End of the Lane"

NOTES = """# Character notes

Background notes on Marie and her return to the village.

## Motivation

Her reluctance isn't about the house—it's about the pattern. Every place she has loved
has been taken from her: first her father's workshop, then the flat in Lyon, and now
her mother's house. Returning means admitting she wants to stay.

Key beats:
- Summer 1987: Father leaves
- 2009: The flat in Lyon is sold
- Present: the letter from the notary

## Setting

A village in the Jura, late October. The lane is lined with walnut trees; the house
has green shutters that her mother repainted every spring.
"""


def create_demo(ws: Workspace) -> Tree:
    """Create (or return the existing) demo tree."""
    for tree, _ in ws.trees(include_archived=True):
        if tree.title == TITLE:
            return tree
    human = ws.human()
    model = ws.subject()
    collaborator = ws.ensure_participant("collaborator", "model", "collaborator",
                                         perms.ROLES["research collaborator"], loom_aware=True)
    tree = ws.create_tree(
        TITLE, "buffer",
        description="A short story about Marie returning to her late mother's house.",
        root_content="The house stood empty at the end of the lane.",
        author=human,
    )
    root = ws.node(tree.root)
    n1 = ws.add_node(tree, root, " She hadn't visited since her mother's death,", human)
    m1 = ws.add_node(tree, n1, " and the windows seemed to watch her approach with "
                     "something like reproach.", model)
    m2 = ws.add_node(tree, n1, " and the walnut trees had dropped their leaves across the "
                     "path as if to hide it.", model)
    m3 = ws.add_node(tree, n1, " though the key still hung on the nail behind the shutter, "
                     "where it had always been.", model)
    h2 = ws.add_node(tree, m1, " She stopped at the gate. Her hand found the latch before "
                     "her mind did.", human)
    m4 = ws.add_node(tree, h2, " Inside, the kitchen smelled of cold ash and lavender, and "
                     "the clock on the wall had stopped at twenty past four.", model)
    ws.add_node(tree, h2, " The gate was locked. Of course it was locked.", model)
    ws.add_node(tree, m3, " She let herself in, and the house exhaled.", model)
    ws.add_node(tree, m2, " She walked the last few metres slowly, counting the shutters.",
                human)
    ws.add_node(tree, m1, " Marie, the narrator, never sees the house again.", model)
    ws.add_node(tree, n1, "Marie's reluctance stems from her childhood, not the house.",
                collaborator, kind="annotation")
    ws.add_node(tree, m1, "Key turning point—the house as a witness.", collaborator,
                kind="annotation")
    ws.add_node(tree, m4, "The stopped clock: keep it, it pays off later.", human,
                kind="annotation")
    notes = ws.create_document("character notes", NOTES, human)
    ws.add_link(tree, n1, human, target_kind="doc", target_doc=notes, section="motivation",
                note="why she stayed away")
    ws.add_link(tree, m3, collaborator, target_kind="node", target_node=m4,
                note="the key and the clock: two ways into the house")
    ws.set_position(human, tree, m4, m4)
    ws.set_position(collaborator, tree, m2, ws.descend(m2))
    return tree


def open_in_editor(app: App, tree: Tree, db: str | None) -> int:
    """Open the demo in the editor; until the editor integration exists, draw it and say
    how to explore it from the command line."""
    from loom.commands.context import Actor

    actor = Actor(app.ws.human(), tree)
    print(app.executor.execute("→ tree", actor).text)
    print()
    here = app.ws.position(actor.participant, tree)[0].local_id
    print(app.executor.execute(f"→ view branch:{here} as:prose", actor).text)
    print()
    print(f'Explore it: loom shell "{tree.title}"   (try → help, → list continuations)')
    return 0
