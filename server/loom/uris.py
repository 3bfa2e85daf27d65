"""``loom:`` URIs: the tree overview, the path view through a node, documents, traces, and
the conversation with a collaborator."""

from __future__ import annotations

from urllib.parse import quote

from loom.store.schema import Node, Tree


def tree_uri(tree: Tree) -> str:
    return f"loom://tree/{tree.id}"


def node_uri(tree: Tree, node: Node) -> str:
    return f"loom://path/{tree.id}/{node.local_id}"


def doc_uri(name: str) -> str:
    return f"loom://doc/{quote(name, safe='')}"


def conversation_uri(agent: str, tree: Tree | str) -> str:
    tree_id = tree if isinstance(tree, str) else tree.id
    return f"loom://conversation/{quote(agent, safe='')}/{tree_id}"
