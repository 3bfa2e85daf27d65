"""``loom:`` URIs: the tree overview, the path view through a node, documents, traces, and
the conversation with a collaborator. Tree and path URIs end with the tree's title
(``loom://path/TREE/NODE/The%20House``), which readers ignore."""

from __future__ import annotations

from typing import TYPE_CHECKING
from urllib.parse import quote

if TYPE_CHECKING:
    from loom.store.schema import Node, Tree


def title_segment(title: str) -> str:
    """The tree's title as the URI's last segment: editors name a tab (and a Neovim
    buffer) after it, so people see the title rather than ids. It is decoration: the
    server reads the ids before it, and a renamed tree's old URIs still open."""
    return quote(title.strip() or "untitled", safe="")


def tree_uri(tree: Tree) -> str:
    return f"loom://tree/{tree.id}/{title_segment(tree.title + ' (tree)')}"


def node_uri(tree: Tree, node: Node) -> str:
    return f"loom://path/{tree.id}/{node.local_id}/{title_segment(tree.title)}"
