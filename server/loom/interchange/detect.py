"""Which loom wrote a file: each format module says whether it recognises the data, and
this module asks them in order (the only module that knows every format)."""

from __future__ import annotations

from typing import Any

import loom.interchange.bonsai as bonsai
import loom.interchange.exoloom as exoloom
import loom.interchange.loomsidian as loomsidian
import loom.interchange.miniloom as miniloom
import loom.interchange.openloom_v1 as openloom_v1
import loom.interchange.socketteer as socketteer
from loom.interchange.adapters import Converter, invalid


def detect(data: Any) -> tuple[str, Converter | None]:
    """(format name, converter); the converter is None for Open Loom itself."""
    if isinstance(data, dict) and "format" in data:
        if data["format"] == "open-loom":
            return "Open Loom", None
        raise invalid(f'format: "{data["format"]}" is not a format Loom reads',
                      'an Open Loom file has "format": "open-loom"')
    for module in (openloom_v1, miniloom, socketteer, exoloom, bonsai, loomsidian):
        if module.detect(data):
            return module.NAME, module.convert
    if not isinstance(data, dict):
        kind = {list: "array", str: "string", int: "number", float: "number",
                bool: "boolean", type(None): "null"}.get(type(data), type(data).__name__)
        raise invalid(f"the file's top level is a JSON {kind}, not a loom",
                      "Loom imports Open Loom, Open Loom v1, socketteer/loom, loomsidian, "
                      "MiniLoom, exoloom and Bonsai files")
    keys = ", ".join(sorted(map(str, data))[:8]) or "none"
    raise invalid(
        f"unrecognised file: top-level keys are {keys}",
        'expected Open Loom ("format": "open-loom"), socketteer/loom (a "root" with '
        '"children"), loomsidian ("nodes" with "parentId"), MiniLoom ("loomTree"), '
        'exoloom ("nodes" with "authorType"), Bonsai ("nodes" with "childrenIds", '
        '"pathNodes") or Open Loom v1 ("rootNodeId")')
