"""Interchange: files in, files out. The entry points the CLI and the executor call:

- ``import_file(ws, path, *, author=None)`` / ``import_bytes(ws, data, name)`` /
  ``import_data(ws, parsed_json, name=...)`` → ``ImportReport``: the format is recognised
  by content, never by extension (Open Loom 2.x, files of earlier Loom versions, Open Loom
  v1, socketteer/loom, loomsidian, MiniLoom, exoloom; a ZIP is an Open Loom bundle).
  Every format becomes an Open Loom 2.0 document first (``adapters``), which one importer
  repairs and writes in one transaction: a damaged file leaves the database as it was.
- ``export_tree(ws, tree, fmt, options)`` → ``str`` (Open Loom JSON, Markdown, the Loom
  Protocol) or ``bytes`` (an Open Loom bundle, when the tree holds media files).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Literal

from loom.errors import LoomError
from loom.interchange.files import (
    ImportLimits,
    parse_json,
    read_source,
    refuse_beyond_memory,
)
from loom.interchange.heap import collector_paused
from loom.interchange.openloom.render import ExportOptions
from loom.interchange.report import ImportedTree, ImportReport
from loom.store.schema import Node, Participant, Tree
from loom.store.workspace import Workspace

__all__ = ["ExportOptions", "ImportLimits", "ImportReport", "ImportedTree", "detect_format",
           "export_tree", "import_bytes", "import_data", "import_file"]

OPEN_LOOM = "open-loom"


def invalid(message: str, hint: str | None = None) -> LoomError:
    """A malformed file: the message says where (the path of the bad field) and what."""
    return LoomError("INVALID_SYNTAX", message, hint)


def detect_format(data: Any) -> str:
    """The name of the format of parsed JSON (see ``adapters.FORMATS``)."""
    from loom.interchange.detect import detect

    return detect(data)[0]


def import_data(ws: Workspace, data: Any, *, name: str | None = None,
                author: Participant | None = None, trust_permissions: bool = False,
                media_source: Any = None, limits: ImportLimits | None = None) -> ImportReport:
    """Import parsed JSON of any supported format; ``name`` titles trees that have none."""
    from loom.interchange.detect import detect
    from loom.interchange.openloom import import_openloom
    from loom.interchange.openloom.load import import_document
    from loom.interchange.openloom.read import read_document

    with collector_paused():
        fmt, convert = detect(data)
        if convert is None:
            return import_openloom(ws, data, author=author,
                                   trust_permissions=trust_permissions,
                                   media_source=media_source, limits=limits)
        document, notes = convert(data, name)
        report = import_document(ws, read_document(document), person=author or ws.human(),
                                 limits=limits, format=fmt)
    report.notes.extend(notes)
    return report


def import_bytes(ws: Workspace, data: bytes, name: str, *, author: Participant | None = None,
                 trust_permissions: bool = False,
                 limits: ImportLimits | None = None) -> ImportReport:
    """Import a file's bytes: a ZIP is an Open Loom bundle, a Tapestry Loom weave (its
    header) is read into an Open Loom document, anything else is JSON."""
    from loom.interchange.bundle import Bundle, is_zip
    from loom.interchange.files import TAPESTRY_MAGIC

    refuse_beyond_memory(len(data), name)
    limits = limits or ImportLimits.from_env()
    stem = Path(name).stem or name
    if data.startswith(TAPESTRY_MAGIC):
        from loom.interchange.tapestry import read_weave

        report = import_data(ws, read_weave(data, name), name=stem, author=author,
                             trust_permissions=trust_permissions, limits=limits)
        report.format = "Tapestry Loom weave"
        return report
    if is_zip(data):
        bundle = Bundle(data, name, limits)
        document = parse_json(bundle.document(), f"{name}: tree.openloom")
        if not (isinstance(document, dict) and document.get("format") == OPEN_LOOM):
            raise invalid(f"{name}: tree.openloom is not an Open Loom document",
                          'its top level says "format": "open-loom"')

        def member(path: str) -> bytes | None:
            return bundle.read(path) if bundle.has(path) else None

        return import_data(ws, document, name=stem, author=author,
                           trust_permissions=trust_permissions, media_source=member,
                           limits=limits)
    with collector_paused():  # (parsing builds the file's every object)
        return import_data(ws, parse_json(data, name), name=stem, author=author,
                           trust_permissions=trust_permissions, limits=limits)


def import_file(ws: Workspace, path: str | Path, *, author: Participant | None = None,
                trust_permissions: bool = False,
                limits: ImportLimits | None = None) -> ImportReport:
    """Read ``path`` (a regular file, at most ``limits.max_file_bytes``) and import it."""
    limits = limits or ImportLimits.from_env()
    p = Path(path).expanduser()
    return import_bytes(ws, read_source(p, limits), p.name, author=author,
                        trust_permissions=trust_permissions, limits=limits)


ExportFormat = Literal["openloom", "bundle", "md", "loom"]


def export_tree(ws: Workspace, tree: Tree, fmt: ExportFormat = "openloom",
                options: ExportOptions | None = None, *, node: Node | None = None
                ) -> str | bytes:
    """The tree as text (``openloom`` JSON, ``md`` Markdown of the path through ``node`` or
    the exporting participant's position, ``loom`` the Loom Protocol), or as an Open Loom
    bundle's bytes (``bundle``, or ``openloom`` when the tree's media files came in a
    bundle: the JSON alone could not hold them as they were)."""
    with collector_paused():
        return _export(ws, tree, fmt, options or ExportOptions(), node)


def _export(ws: Workspace, tree: Tree, fmt: ExportFormat, options: ExportOptions,
            node: Node | None) -> str | bytes:
    if fmt == "md":
        from loom.interchange.markdown import export_markdown

        if node is None:
            who = ws.find_participant(options.participant or "human")
            node = ws.position(who, tree)[1] if who else ws.descend(ws.node(tree.root))
        return export_markdown(ws, tree, node)
    from loom.interchange.openloom import export_document

    if fmt == "bundle":
        options = options.model_copy(update={"media": "bundle"})
    elif fmt == "loom":
        options = options.model_copy(update={"media": "inline"})
    document, members = export_document(ws, [tree], options)
    if fmt == "loom":
        from loom.protocol import dumps

        return dumps(document)
    size = sum(len(t.get("nodes") or ()) for t in document["trees"])
    # Indented for people to read; a very large tree compact (indenting JSON is slow).
    text = json.dumps(document, ensure_ascii=False, indent=2 if size <= 20_000 else None)
    if members or fmt == "bundle":
        from loom.interchange.bundle import write_bundle

        return write_bundle(text, members)
    return text
