"""Random and malformed traffic: the server answers everything, crashes on nothing, and its
copy of the buffer stays exactly the editor's."""

from __future__ import annotations

import random

from lsprotocol import types as lsp

from tests.lsp.conftest import Editor, demo_uri

PIECES = ["a", " ", "\n", "→ view ", "︱", "é", "𝄞", "->", '"', "ann-1", "[abc]", "word "]


def _pos(rng: random.Random) -> lsp.Position:
    return lsp.Position(rng.choice([0, 1, 2, 5, 10_000]), rng.choice([0, 1, 3, 40, 10_000]))


async def test_random_traffic(editor: Editor) -> None:
    rng = random.Random(20261122)
    uri = demo_uri(editor.db)
    res = await editor.client.workspace_text_document_content_async(
        lsp.TextDocumentContentParams(uri=uri))
    editor.open(uri, res.text)
    doc = lsp.TextDocumentIdentifier(uri=uri)
    for step in range(250):
        text = editor.texts[uri]
        action = rng.random()
        if action < 0.5:  # an edit: insert, delete or replace anywhere
            a = rng.randint(0, len(text))
            b = min(len(text), a + rng.choice([0, 0, 1, 3, 12]))
            editor.replace(uri, a, b, "".join(rng.choice(PIECES) for _ in range(rng.randint(0, 3))))
            continue
        kind = rng.randrange(9)
        pos = editor.pos(uri, rng.randint(0, len(text))) if rng.random() < 0.7 else _pos(rng)
        if kind == 0:
            await editor.client.text_document_hover_async(
                lsp.HoverParams(text_document=doc, position=pos))
        elif kind == 1:
            await editor.client.text_document_completion_async(
                lsp.CompletionParams(text_document=doc, position=pos))
        elif kind == 2:
            await editor.client.text_document_definition_async(
                lsp.DefinitionParams(text_document=doc, position=pos))
        elif kind == 3:
            await editor.client.text_document_semantic_tokens_full_async(
                lsp.SemanticTokensParams(text_document=doc))
        elif kind == 4:
            await editor.client.text_document_code_lens_async(lsp.CodeLensParams(text_document=doc))
        elif kind == 5:
            await editor.client.text_document_inlay_hint_async(lsp.InlayHintParams(
                text_document=doc, range=lsp.Range(lsp.Position(0, 0), pos)))
        elif kind == 6:
            junk = rng.choice([{}, {"uri": 5}, {"uri": uri, "line": -3}, {"uri": uri, "node": "?"},
                               {"uri": "loom://nope", "delta": "x"}, {"uri": uri, "n": 99}])
            cmd = rng.choice(["loom.run", "loom.cycleSibling", "loom.branch", "loom.annotate",
                              "loom.open", "loom.continue"])
            await editor.client.workspace_execute_command_async(
                lsp.ExecuteCommandParams(command=cmd, arguments=[junk]))
        elif kind == 7:
            method = rng.choice(["loom/read", "loom/nodeInfo", "loom/status", "loom/export",
                                 "loom/import"])
            await editor.request(method, rng.choice([{}, {"uri": 1}, {"tree": "zz"},
                                                     {"path": "/nonexistent"}, {"uri": uri}]))
        else:
            await editor.client.text_document_references_async(lsp.ReferenceParams(
                text_document=doc, position=pos,
                context=lsp.ReferenceContext(include_declaration=bool(step % 2))))
    read = await editor.request("loom/read", {"uri": uri})
    assert read["text"] == editor.texts[uri]
    hover = await editor.client.text_document_hover_async(
        lsp.HoverParams(text_document=doc, position=lsp.Position(0, 2)))
    assert hover is not None
