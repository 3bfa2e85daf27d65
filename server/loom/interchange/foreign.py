"""Writing the other looms' files: a tree's Open Loom document, then the writer of the
format asked for (each in the shape that loom's own loader reads; see docs/openloom.md).
What a format cannot hold comes back with the data, for the export's report."""

from __future__ import annotations

import importlib

from loom.interchange.openloom.render import ExportOptions
from loom.interchange.written import Written
from loom.store.schema import Tree
from loom.store.workspace import Workspace

#: format → (module, function, the loom's name as people say it)
WRITERS: dict[str, tuple[str, str, str]] = {
    "socketteer": ("loom.interchange.socketteer_write", "write_socketteer", "socketteer/loom"),
    "loomsidian": ("loom.interchange.loomsidian_write", "write_loomsidian", "loomsidian"),
    "miniloom": ("loom.interchange.miniloom_write", "write_miniloom", "MiniLoom"),
    "tapestry": ("loom.interchange.tapestry_write", "write_tapestry", "Tapestry Loom"),
}


def is_foreign(fmt: str) -> bool:
    return fmt in WRITERS


def loom_name(fmt: str) -> str:
    return WRITERS[fmt][2]


def export_foreign(ws: Workspace, tree: Tree, fmt: str, options: ExportOptions) -> Written:
    """``tree`` in another loom's format: its Open Loom document (media inline: no other
    loom reads a bundle), then that format's writer."""
    from loom.interchange.openloom import export_document

    module, function, _name = WRITERS[fmt]
    document, _members = export_document(ws, [tree], options.model_copy(
        update={"media": "inline"}))
    write = getattr(importlib.import_module(module), function)
    written: Written = write(document, 0)
    return written
