from __future__ import annotations

from lsprotocol import types as lsp

from tests.lsp.conftest import Editor, demo_uri


async def test_content_and_completion(editor: Editor) -> None:
    uri = demo_uri(editor.db)
    res = await editor.client.workspace_text_document_content_async(
        lsp.TextDocumentContentParams(uri=uri))
    assert res.text.startswith("The house stood empty")
    editor.open(uri, res.text)
    editor.append(uri, "\n→ vi")
    end = editor.pos(uri, len(editor.texts[uri]))
    items = await editor.client.text_document_completion_async(lsp.CompletionParams(
        text_document=lsp.TextDocumentIdentifier(uri=uri), position=end))
    labels = [i.label for i in items.items]
    assert "view" in labels
