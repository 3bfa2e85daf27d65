"""Trees made, imported and exported from the editor, through the executor.

The server writes and reads files only inside the workspace folders the client opened;
anywhere else the client reads or writes the file itself (after its own open or save
dialog) and sends or receives the text. A path in a request is never trusted beyond that."""

from __future__ import annotations

from pathlib import Path

from loom.commands import syntax
from loom.commands.results import Result
from loom.errors import LoomError
from loom.lsp.host import Host
from loom.uris import node_uri, tree_uri


def inside(path: Path, roots: list[Path]) -> bool:
    """Whether ``path`` (resolved, symlinks followed) lies inside one of ``roots``."""
    try:
        real = path.expanduser().resolve()
    except OSError:
        return False
    for root in roots:
        try:
            real.relative_to(root.resolve())
            return True
        except (ValueError, OSError):
            continue
    return False


class Files:
    def __init__(self, host: Host) -> None:
        self.host = host

    def _check_path(self, path: str, verb: str) -> Path:
        target = Path(path)
        if not target.is_absolute() or not inside(target, self.host.roots()):
            raise LoomError(
                "PERMISSION_DENIED", f"the server {verb}s files only inside the workspace "
                f"folder, not {path}",
                f"{verb} without a path: the editor then "
                f"{'reads' if verb == 'read' else 'writes'} the file itself")
        return target

    def new_tree(self, title: str, mode: str, text: str) -> dict[str, object]:
        host = self.host
        cmd = syntax.NewTree(title=title, mode=mode, text=text)  # type: ignore[arg-type]
        actor = host.actor(None)
        result = host.execute_now(cmd, actor)
        if not result.ok:
            return {"result": result}
        tree = host.app.ws.tree(result.data["tree"])
        root = host.app.ws.node(result.data["node"])
        return {"result": result, "tree": tree.id, "uri": node_uri(tree, root)}

    async def import_(self, path: str | None, content: str | None,
                      name: str | None) -> tuple[Result, list[dict[str, str]]]:
        host = self.host
        if path and content is None:
            self._check_path(path, "read")
        cmd = syntax.Import(path=path if content is None else None, content=content,
                         name=name or (Path(path).name if path else None))
        result = await host.execute(cmd, host.actor(None))
        trees = []
        for tree_id in result.data.get("trees", []) if result.ok else []:
            tree = host.app.ws.tree(tree_id)
            # pathUri: the path through the file's current/selected node, where the
            # importer placed the participant (open it there, not on the overview)
            _node, tip = host.app.ws.position(host.docs.participant, tree)
            trees.append({"id": tree.id, "title": tree.title, "uri": tree_uri(tree),
                          "pathUri": node_uri(tree, tip)})
        return result, trees

    async def export(self, tree: str, fmt: str, path: str | None,
                     node: str | None) -> Result:
        host = self.host
        if path:
            self._check_path(path, "write")
        cmd = syntax.Export(tree=tree or None, format=fmt, path=path,  # type: ignore[arg-type]
                         node=node)
        return await host.execute(cmd, host.actor(None))
