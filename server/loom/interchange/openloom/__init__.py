"""Open Loom 2.0, as published by Intrinsic Labs: the format for sharing trees between looms.

``read`` interprets and repairs a document, ``load`` writes it, ``render`` writes Loom's
trees back in the published shape, ``legacy`` converts what earlier Loom versions wrote.
docs/openloom.md has the field-by-field mapping and the conformance checklist.
"""

from __future__ import annotations

from typing import Any

from loom.interchange.files import ImportLimits
from loom.interchange.openloom import legacy
from loom.interchange.openloom.load import MediaSource, import_document
from loom.interchange.openloom.read import DocumentIn, read_document
from loom.interchange.openloom.render import ExportOptions, render_document
from loom.interchange.openloom.snapshot import IC, load, load_shared
from loom.interchange.report import ImportReport
from loom.store.schema import Participant, Tree
from loom.store.workspace import Workspace

__all__ = ["ExportOptions", "export_document", "export_openloom", "import_openloom",
           "parse_openloom"]


def parse_openloom(data: Any) -> DocumentIn:
    """The document read and repaired (INVALID_SYNTAX only when nothing is left to read);
    a file in Loom's earlier dialect is converted first."""
    if isinstance(data, dict) and legacy.is_legacy(data):
        data = legacy.convert(data)
    return read_document(data)


def import_openloom(ws: Workspace, data: Any, *, author: Participant | None = None,
                    trust_permissions: bool = False, media_source: MediaSource | None = None,
                    limits: ImportLimits | None = None) -> ImportReport:
    """Import every tree of an Open Loom document (or of Loom's earlier dialect)."""
    fmt = "Open Loom"
    if isinstance(data, dict) and legacy.is_legacy(data):
        data, fmt = legacy.convert(data), "Open Loom as earlier Loom versions wrote it"
    doc = read_document(data)
    if fmt == "Open Loom":
        fmt = f"Open Loom {doc.version}"
    return import_document(ws, doc, person=author or ws.human(),
                           trust_permissions=trust_permissions, media_source=media_source,
                           limits=limits, format=fmt)


def _person(ws: Workspace, tree: Tree, options: ExportOptions) -> str | None:
    if options.participant:
        p = ws.find_participant(options.participant)
        return p.id if p else None
    ic = (tree.extra or {}).get(IC) or {}
    if ic.get("person"):
        return str(ic["person"])
    p = ws.find_participant("human")
    return p.id if p else None


def export_document(ws: Workspace, trees: list[Tree], options: ExportOptions | None = None,
                    ) -> tuple[dict[str, Any], dict[str, bytes]]:
    """The trees as one Open Loom document, and the media files a bundle needs (empty
    when the document stands alone)."""
    options = options or ExportOptions()
    fresh = [ws.tree(t.id) for t in trees]  # (as stored now: a caller's copy may be older)
    snaps = [load(ws, t, _person(ws, t, options)) for t in fresh]
    return render_document(snaps, load_shared(ws, snaps), options, ws.clock())


def export_openloom(ws: Workspace, tree: Tree | list[Tree],
                    options: ExportOptions | None = None) -> dict[str, Any]:
    """The document alone (media as ``data:`` URIs, so that it stands alone)."""
    options = (options or ExportOptions()).model_copy(update={"media": "inline"}) \
        if options is None or options.media == "auto" else options
    doc, _ = export_document(ws, tree if isinstance(tree, list) else [tree], options)
    return doc
