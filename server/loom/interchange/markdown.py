"""Markdown export of one path through a tree (root → ``tip``), for reading and sharing.

Layout: ``# title``, the tree's description as a paragraph, its system context (when it
has one) as a quoted block under **System context**, then the path:

- **buffer** mode: the path's text as continuous prose, exactly as it reads in the editor
  (node contents concatenated, nothing inserted between them);
- **dialogue** mode: one block per node, a ``**author** · 2024-05-01 14:03 UTC`` line, a
  blank line, then the content; an empty root is left out.

With ``annotations=True`` the annotations on path nodes are included: in dialogue mode as
a blockquote after their node (``> **author** · ann-3`` then the text); in buffer mode as
footnotes (``[^ann-3]`` after the node's text, the notes at the end), so the prose is not
broken mid-sentence. Excluded nodes are part of the text and are exported; pruned
annotations are not.
"""

from __future__ import annotations

from datetime import UTC, datetime

from loom.errors import LoomError
from loom.store.schema import Node, Tree
from loom.store.workspace import NodeRow, Workspace


def export_markdown(ws: Workspace, tree: Tree, tip: Node, *,
                    annotations: bool = False) -> str:
    if tip.tree_id != tree.id:
        raise LoomError("CROSS_TREE", f'node [{tip.label}] is not in tree "{tree.title}"',
                        "export a node of this tree, or name its own tree")
    path = [n for n in ws.path(tip) if n.kind != "annotation"]
    names = ws.participant_names()
    notes = {n.id: ws.children(n, "annotation") for n in path} if annotations else {}
    blocks = [f"# {' '.join(tree.title.split())}"]
    if tree.description.strip():
        blocks.append(tree.description.strip())
    if tree.system_context.strip():
        blocks.append("**System context**\n\n" + _quote(tree.system_context.strip()))
    if tree.mode == "buffer":
        blocks.extend(_prose(path, notes, names))
    else:
        blocks.extend(_dialogue(path, notes, names))
    return "\n\n".join(blocks) + "\n"


def _prose(path: list[NodeRow], notes: dict[str, list[Node]],
           names: dict[str, str]) -> list[str]:
    pieces: list[str] = []
    footnotes: list[str] = []
    for n in path:
        anns = notes.get(n.id) or []
        if not anns:
            pieces.append(n.content)
            continue
        core = n.content.rstrip()
        pieces.append(core + "".join(f"[^{a.label}]" for a in anns) + n.content[len(core):])
        for a in anns:
            body = a.content.strip().replace("\n", "\n    ")
            footnotes.append(f"[^{a.label}]: **{_name(a, names)}**: {body}")
    text = "".join(pieces).strip("\n")
    return [b for b in (text, "\n".join(footnotes)) if b]


def _dialogue(path: list[NodeRow], notes: dict[str, list[Node]],
              names: dict[str, str]) -> list[str]:
    blocks: list[str] = []
    for n in path:
        if n.kind == "root" and not n.content.strip():
            continue
        blocks.append(f"**{_name(n, names)}** · {_when(n)}\n\n{n.content.strip()}")
        for a in notes.get(n.id) or []:
            blocks.append(_quote(f"**{_name(a, names)}** · {a.label} · {_when(a)}\n\n"
                                 f"{a.content.strip()}"))
    return blocks


def _name(n: Node, names: dict[str, str]) -> str:
    return names.get(n.author_id, n.author_type)


def _when(n: Node) -> str:
    return datetime.fromtimestamp(n.created, UTC).strftime("%Y-%m-%d %H:%M UTC")


def _quote(text: str) -> str:
    return "\n".join(f"> {line}" if line else ">" for line in text.split("\n"))
