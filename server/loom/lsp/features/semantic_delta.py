"""``textDocument/semanticTokens/full/delta``: the semantic tokens of a document as an edit
of the client's previous result.

A long buffer with the probability colours on is tens of thousands of tokens (a few
hundred kilobytes of JSON) and editors ask for them again after every keystroke; typing
changes a few near the cursor. Each document keeps its last result; a delta request is
answered with the one edit that turns it into the new one (common prefix and suffix kept),
or with the whole result when the client's id is not the last one."""

from __future__ import annotations

import itertools

from lsprotocol import types as lsp

_CHUNK = 512


def common_edit(old: list[int], new: list[int]) -> tuple[int, int, list[int]]:
    """``(start, delete_count, data)``: the one replacement turning ``old`` into ``new``."""
    p = _prefix(old, new)
    rest = min(len(old), len(new)) - p
    s = _prefix(old[::-1][:rest], new[::-1][:rest]) if rest else 0
    return p, len(old) - p - s, new[p:len(new) - s]


def _prefix(a: list[int], b: list[int]) -> int:
    n = min(len(a), len(b))
    i = 0
    while i < n and a[i:i + _CHUNK] == b[i:i + _CHUNK]:
        i += _CHUNK
    if i >= n:
        return n
    for k, (x, y) in enumerate(zip(a[i:i + _CHUNK], b[i:i + _CHUNK], strict=False)):
        if x != y:
            return i + k
    return min(i + _CHUNK, n)


class SemanticResults:
    """The last semantic-tokens result of each document (by URI)."""

    def __init__(self) -> None:
        self._ids = itertools.count(1)
        self._last: dict[str, tuple[str, list[int]]] = {}
        self._data: dict[str, tuple[object, list[int]]] = {}  # uri → (revision key, data)

    def cached(self, uri: str, key: object) -> list[int] | None:
        """The tokens computed for this revision of the document, if they were."""
        found = self._data.get(uri)
        return found[1] if found is not None and found[0] == key else None

    def keep(self, uri: str, key: object, data: list[int]) -> None:
        self._data[uri] = (key, data)

    def full(self, uri: str, data: list[int]) -> tuple[str, list[int]]:
        """Remember ``data`` as the document's result: ``(result id, data)``."""
        rid = str(next(self._ids))
        self._last[uri] = (rid, data)
        return rid, data

    def delta(self, uri: str, previous: str, data: list[int]
              ) -> tuple[str, tuple[int, int, list[int]] | None]:
        """``(result id, edit)``, the edit None when the client's previous result is not
        the last one (then it gets the whole ``data``)."""
        last = self._last.get(uri)
        rid, _ = self.full(uri, data)
        if last is None or last[0] != previous:
            return rid, None
        return rid, common_edit(last[1], data)

    def lsp_full(self, uri: str, data: list[int]) -> lsp.SemanticTokens:
        """``semanticTokens/full``: all of ``data``, remembered (``full``)."""
        rid, data = self.full(uri, data)
        return lsp.SemanticTokens(data=data, result_id=rid)

    def lsp_delta(self, uri: str, previous: str, data: list[int]
                  ) -> lsp.SemanticTokens | lsp.SemanticTokensDelta:
        """``semanticTokens/full/delta``: the one edit from the client's previous result,
        or all of ``data`` (``delta``)."""
        rid, edit = self.delta(uri, previous, data)
        if edit is None:
            return lsp.SemanticTokens(data=data, result_id=rid)
        start, deleted, new = edit
        return lsp.SemanticTokensDelta(result_id=rid, edits=[
            lsp.SemanticTokensEdit(start=start, delete_count=deleted, data=new)])

    def forget(self, uri: str) -> None:
        self._last.pop(uri, None)
        self._data.pop(uri, None)
