"""What the server loads after ``initialize`` is answered, in a thread, so that the first
open, hover and completion cost what later ones do (bench/bench_startup.py).

Two kinds of first-time work: importing the rest of Loom (``CORE``, what a path's first
open needs, then ``MODULES``), and cattrs writing
a function for each LSP message type the first time it meets one (9 ms for the first
completion list: more than the completion itself). ``converter`` meets them here."""

from __future__ import annotations

from typing import Any

from lsprotocol import types as lsp

#: what a path's first open needs (``textDocumentContent``: the workspace and the views)
CORE = ("loom.app", "loom.lsp.documents")
#: the rest: what answering, the settings and the features need
MODULES = (
    "loom.lsp.args", "loom.lsp.settings", "loom.commands.results", "loom.store.backend",
    *(f"loom.lsp.features.{name}" for name in (
        "collaborator", "command_lines", "completion", "decorations", "diagnostics",
        "editing", "files", "generation", "identity", "library", "lookup", "navigation",
        "outage", "probabilities", "scoring", "semantic_delta", "suggestions", "sync")),
)

_DOC = lsp.TextDocumentIdentifier(uri="loom://path/T/n")
_AT = lsp.Position(line=0, character=0)
_RANGE = lsp.Range(start=_AT, end=_AT)
_MD = lsp.MarkupContent(kind=lsp.MarkupKind.Markdown, value="x")


def _samples() -> dict[str, tuple[Any, Any]]:
    """method → (params, a result shaped like Loom's answers)."""
    item = lsp.CompletionItem(
        label="x", kind=lsp.CompletionItemKind.Reference, detail="x", documentation=_MD,
        sort_text="x", filter_text="x", text_edit=lsp.TextEdit(range=_RANGE, new_text="x"),
        command=lsp.Command(title="x", command="x"))
    return {
        lsp.TEXT_DOCUMENT_COMPLETION: (
            lsp.CompletionParams(text_document=_DOC, position=_AT, context=lsp.CompletionContext(
                trigger_kind=lsp.CompletionTriggerKind.TriggerCharacter,
                trigger_character=" ")),
            lsp.CompletionList(is_incomplete=False, items=[item])),
        lsp.TEXT_DOCUMENT_HOVER: (
            lsp.HoverParams(text_document=_DOC, position=_AT),
            lsp.Hover(contents=_MD, range=_RANGE)),
        lsp.TEXT_DOCUMENT_DEFINITION: (
            lsp.DefinitionParams(text_document=_DOC, position=_AT),
            lsp.Location(uri=_DOC.uri, range=_RANGE)),
        lsp.TEXT_DOCUMENT_CODE_LENS: (
            lsp.CodeLensParams(text_document=_DOC),
            [lsp.CodeLens(range=_RANGE, command=lsp.Command(title="x", command="x",
                                                             arguments=[{"uri": "x"}]))]),
        lsp.TEXT_DOCUMENT_INLAY_HINT: (
            lsp.InlayHintParams(text_document=_DOC, range=_RANGE),
            [lsp.InlayHint(position=_AT, label="x", padding_left=True)]),
        lsp.TEXT_DOCUMENT_SEMANTIC_TOKENS_FULL: (
            lsp.SemanticTokensParams(text_document=_DOC),
            lsp.SemanticTokens(data=[0, 0, 1, 0, 0], result_id="1")),
        lsp.TEXT_DOCUMENT_SEMANTIC_TOKENS_FULL_DELTA: (
            lsp.SemanticTokensDeltaParams(text_document=_DOC, previous_result_id="1"),
            lsp.SemanticTokensDelta(edits=[lsp.SemanticTokensEdit(start=0, delete_count=0,
                                                                  data=[0])])),
        lsp.TEXT_DOCUMENT_DOCUMENT_LINK: (
            lsp.DocumentLinkParams(text_document=_DOC),
            [lsp.DocumentLink(range=_RANGE, target="x")]),
        lsp.TEXT_DOCUMENT_FOLDING_RANGE: (
            lsp.FoldingRangeParams(text_document=_DOC),
            [lsp.FoldingRange(start_line=0, end_line=1)]),
        lsp.TEXT_DOCUMENT_INLINE_COMPLETION: (
            lsp.InlineCompletionParams(
                text_document=_DOC, position=_AT, context=lsp.InlineCompletionContext(
                    trigger_kind=lsp.InlineCompletionTriggerKind.Automatic)),
            lsp.InlineCompletionList(items=[lsp.InlineCompletionItem(insert_text="x")])),
        lsp.WORKSPACE_TEXT_DOCUMENT_CONTENT: (
            lsp.TextDocumentContentParams(uri=_DOC.uri),
            lsp.TextDocumentContentResult(text="x")),
    }


def converter(conv: Any) -> None:
    """Each request Loom answers most, structured as it arrives and its answer
    unstructured as it leaves, once; and the notifications an editor sends as it types."""
    for method, (params, result) in _samples().items():
        request, response, _params, _options = lsp.METHOD_TO_TYPES[method]
        conv.structure(conv.unstructure(request(id=1, params=params)), request)
        conv.unstructure(response(id=1, result=result))
    text = lsp.VersionedTextDocumentIdentifier(uri=_DOC.uri, version=2)
    for method, params in (
            (lsp.TEXT_DOCUMENT_DID_OPEN, lsp.DidOpenTextDocumentParams(
                text_document=lsp.TextDocumentItem(uri=_DOC.uri, language_id="loom",
                                                   version=1, text="x"))),
            (lsp.TEXT_DOCUMENT_DID_CHANGE, lsp.DidChangeTextDocumentParams(
                text_document=text, content_changes=[lsp.TextDocumentContentChangePartial(
                    range=_RANGE, text="x")])),
            (lsp.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS, lsp.PublishDiagnosticsParams(
                uri=_DOC.uri, diagnostics=[lsp.Diagnostic(range=_RANGE, message="x")]))):
        notification = lsp.METHOD_TO_TYPES[method][0]
        conv.structure(conv.unstructure(notification(params=params)), notification)
