"""Diagnostics: a failed command line keeps its ``✗ CODE: message`` (and hint) under the
line until the line is fixed, run again or removed. Other features add theirs through
``providers`` (the least likely words of scored text, ``features/scoring.py``): one
``publishDiagnostics`` carries them all, so none clears another's."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from lsprotocol import types as lsp

from loom.commands.results import Result
from loom.lsp.documents import OpenDoc
from loom.lsp.host import Host


@dataclass
class Diag:
    line_text: str
    code: str
    message: str
    hint: str | None


class Diagnostics:
    def __init__(self, host: Host, publish: object) -> None:
        self.host = host
        self._publish = publish  # the server's publishDiagnostics sender
        self.by_uri: dict[str, list[Diag]] = {}
        #: more diagnostics of a document, computed when it is published
        self.providers: list[Callable[[OpenDoc], list[lsp.Diagnostic]]] = []

    def failed_lines(self, uri: str) -> set[str]:
        """Lines whose failure running them again would only repeat (a busy branch or a
        model error may well pass next time)."""
        return {d.line_text for d in self.by_uri.get(uri, [])
                if d.code not in ("CONFLICT", "MODEL_ERROR")}

    def publish(self, doc: OpenDoc) -> None:
        """Send the document's diagnostics, dropping those whose line is gone."""
        entries = self.by_uri.get(doc.uri, [])
        text_doc = doc.session.doc
        wanted = {d.line_text for d in entries}
        lines: dict[str, int] = {}
        if wanted:
            for i in range(text_doc.line_count):
                line = text_doc.line(i)
                if line in wanted:
                    lines.setdefault(line, i)
        kept, out = [], []
        for d in entries:
            line_no = lines.get(d.line_text)
            if line_no is None:
                continue
            kept.append(d)
            end = text_doc.position_at(text_doc.line_start(line_no) + len(d.line_text))[1]
            rng = lsp.Range(lsp.Position(line_no, 0), lsp.Position(line_no, end))
            related = None
            if d.hint:
                related = [lsp.DiagnosticRelatedInformation(
                    location=lsp.Location(uri=doc.uri, range=rng), message=f"hint: {d.hint}")]
            out.append(lsp.Diagnostic(range=rng, message=f"✗ {d.code}: {d.message}",
                                      severity=lsp.DiagnosticSeverity.Error, code=d.code,
                                      source="loom", related_information=related))
        self.by_uri[doc.uri] = kept
        for provider in self.providers:
            out += provider(doc)
        self._publish(lsp.PublishDiagnosticsParams(uri=doc.uri, diagnostics=out))  # type: ignore[operator]

    def add(self, doc: OpenDoc, line_text: str, result: Result) -> None:
        entries = [d for d in self.by_uri.get(doc.uri, []) if d.line_text != line_text]
        entries.append(Diag(line_text, result.code or "ERROR", result.message or result.text,
                            result.hint))
        self.by_uri[doc.uri] = entries
        self.publish(doc)

    def clear(self, doc: OpenDoc, line_text: str) -> None:
        before = self.by_uri.get(doc.uri, [])
        after = [d for d in before if d.line_text != line_text]
        if len(after) != len(before):
            self.by_uri[doc.uri] = after
            self.publish(doc)
