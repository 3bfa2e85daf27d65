"""Offsets in a buffer and LSP positions, in the encoding the client negotiated (the one
conversion every feature that answers with ranges shares)."""

from __future__ import annotations

from lsprotocol import types as lsp

from loom.lsp.documents import OpenDoc
from loom.lsp.positions import TextDoc


def offset_of(doc: OpenDoc, pos: lsp.Position) -> int:
    """The character offset in ``doc``'s text of a client position."""
    return doc.session.doc.offset_at(pos.line, pos.character)


def range_of(text_doc: TextDoc, start: int, end: int) -> lsp.Range:
    """The client range of the characters ``[start, end)`` of ``text_doc``."""
    return lsp.Range(lsp.Position(*text_doc.position_at(start)),
                     lsp.Position(*text_doc.position_at(end)))
