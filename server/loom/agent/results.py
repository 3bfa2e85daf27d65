"""What a command's result shows the collaborator: the editors' short previews of the
nodes a ``list`` or ``continue`` names, replaced by their whole text when that fits the
result threshold (issue 25: each option cost the model a ``→ view … full`` the human never
needed, who reads them in the buffer)."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from loom.commands import ast
from loom.commands.results import Result
from loom.render.text import preview, quote
from loom.store.workspace import Workspace


def named_nodes(cmd: ast.Command, result: Result) -> Sequence[str]:
    """The ids of the nodes a successful ``list … continuations`` or ``continue`` shows as
    previews (none for any other result)."""
    if not result.ok:
        return ()
    if isinstance(cmd, ast.List) and cmd.what == "continuations":
        return result.data.get("items") or ()
    if isinstance(cmd, ast.Continue):
        return result.data.get("created") or ()
    return ()


def with_full_texts(ws: Workspace, cmd: ast.Command, result: Result, threshold: int,
                    count: Callable[[str], int]) -> str:
    """``result``'s text, each node preview it shows in full when all of them fit
    ``threshold`` tokens; else as it was."""
    text = result.text
    ids = named_nodes(cmd, result)
    if not ids:
        return text
    full = text
    for node_id in ids:
        node = ws.find_node(node_id)
        if node is None:
            continue
        short = quote(preview(node.content) or "(empty)")
        whole = quote(node.content) if node.content else quote("(empty)")
        if short != whole:
            full = full.replace(short, whole, 1)
    return full if full != text and count(full) <= threshold else text
