"""Token probabilities with the real local model: SmolLM2 on llama-cpp-python
returns logprobs; through the real language server the stored tokens spell each node,
hover shows a token's alternatives, and an alternative's code action splits the node and
the local model continues from the alternative."""

from __future__ import annotations

from pathlib import Path
from typing import Union

from lsprotocol import types as lsp

from loom.model import tokens as T
from tests.local_model import local_env, local_model_session, requires_local_model
from tests.lsp.conftest import Editor, open_demo, sql

pytestmark = requires_local_model

db, client, editor = local_model_session(
    local_env(LOOM_CONFIG="/nonexistent/loom-local-logprobs.toml"))


def stored(db: Path) -> list[tuple[str, str, list[T.Token]]]:
    return [(nid, content, T.decode(data)[1]) for nid, content, data in sql(
        db, "SELECT n.id, n.content, t.data FROM node n JOIN node_tokens t ON t.node = n.id "
            "WHERE n.pruned = 0 ORDER BY n.created, n.id")]


async def test_local_model_tokens_hover_and_branch_from_an_alternative(editor: Editor) -> None:
    # editors tell code actions from bare commands (lsprotocol's client does not)
    conv = editor.client.protocol._converter  # type: ignore[attr-defined]
    conv.register_structure_hook(
        Union[lsp.Command, lsp.CodeAction],  # noqa: UP007
        lambda obj, _t: conv.structure(obj, lsp.Command if isinstance(obj.get("command"), str)
                                       else lsp.CodeAction))
    uri = await open_demo(editor)
    start = len(editor.texts[uri])
    res = await editor.client.workspace_execute_command_async(lsp.ExecuteCommandParams(
        command="loom.continue", arguments=[{"uri": uri, "n": 2, "tokens": 12}]))
    assert res["ok"], res
    made = stored(editor.db)
    assert len(made) == 2
    for _nid, content, tokens in made:
        assert "".join(t.text for t in tokens) == content  # the tokens spell the node
        assert all(t.logprob is not None and t.logprob <= 0 for t in tokens)
        assert any(len(t.alternatives) > 1 for t in tokens)
    first_id, first, tokens = next(m for m in made if editor.texts[uri].endswith(m[1]))
    await editor.wait_for(lambda: editor.texts[uri][start:] == first)
    # hover on a token the model weighed alternatives for: its table
    tok = next(t for t in tokens if [a for a, _ in t.alternatives if a != t.text])
    at = start + tok.start + len(tok.text) // 2
    got = await editor.client.text_document_hover_async(lsp.HoverParams(
        text_document=lsp.TextDocumentIdentifier(uri=uri), position=editor.pos(uri, at)))
    assert got is not None and "```text\n" in got.contents.value and "\n▸ " in got.contents.value
    alt = next(a for a, _ in tok.alternatives if a != tok.text)
    shown = alt.translate(str.maketrans({" ": "␣", "\n": "↵", "\t": "⇥"}))
    assert shown in got.contents.value
    # branch with that alternative: the local model continues from it
    actions = await editor.client.text_document_code_action_async(lsp.CodeActionParams(
        text_document=lsp.TextDocumentIdentifier(uri=uri),
        range=lsp.Range(editor.pos(uri, at), editor.pos(uri, at)),
        context=lsp.CodeActionContext(diagnostics=[])))
    action = next(a for a in actions if a.command.arguments[0].get("alt") == alt)
    res = await editor.client.workspace_execute_command_async(lsp.ExecuteCommandParams(
        command=action.command.command, arguments=action.command.arguments))
    assert res["ok"], res
    assert sql(editor.db, "SELECT pruned FROM node WHERE id = ?", first_id) == [
        (1 if tok.start > 0 else 0,)]
    tip = sql(editor.db, "SELECT n.id, n.content, n.author_type FROM position p JOIN "
                         "participant h ON h.id = p.participant JOIN node n ON n.id = p.tip "
                         "WHERE h.name = 'human'")[0]
    assert tip[2] == "model"
    path_end = first[:tok.start] + alt + tip[1]
    await editor.wait_for(lambda: editor.texts[uri][start:] == path_end)
    # the continuation from the alternative has its own tokens, spelling it
    (_, content, tokens), = [m for m in stored(editor.db) if m[0] == tip[0]]
    assert "".join(t.text for t in tokens) == content
