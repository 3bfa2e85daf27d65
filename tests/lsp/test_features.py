"""Every editor feature through a real server, as VS Code and as Neovim."""

from __future__ import annotations

import asyncio
import subprocess
import sys

from lsprotocol import types as lsp

from tests.lsp.conftest import Editor, open_demo, sql


def td(uri: str) -> lsp.TextDocumentIdentifier:
    return lsp.TextDocumentIdentifier(uri=uri)



def node(editor: Editor, fragment: str) -> tuple[str, str]:
    """(id, localId) of the demo node whose text contains ``fragment``."""
    rows = sql(editor.db, "SELECT id, local_id FROM node WHERE content LIKE ?",
               f"%{fragment}%")
    assert rows, fragment
    return rows[0]


async def run(editor: Editor, command: str, args: dict) -> object:
    return await editor.client.workspace_execute_command_async(
        lsp.ExecuteCommandParams(command=command, arguments=[args]))


async def test_capabilities(editor: Editor) -> None:
    caps = editor.server_capabilities  # type: ignore[attr-defined]
    assert list(caps.workspace.text_document_content.schemes) == ["loom"]
    assert {"→", ">"} <= set(caps.completion_provider.trigger_characters)
    assert "loomModel" in caps.semantic_tokens_provider.legend.token_types
    assert caps.hover_provider and caps.definition_provider and caps.inlay_hint_provider
    assert "loom.cycleSibling" in caps.execute_command_provider.commands
    uri = await open_demo(editor)
    assert editor.texts[uri].startswith("The house stood empty at the end of the lane.")
    assert "the clock on the wall had stopped" in editor.texts[uri]


async def test_completion_verbs_and_arrow(editor: Editor) -> None:
    uri = await open_demo(editor)
    editor.append(uri, "\n->sw")
    end = editor.pos(uri, len(editor.texts[uri]))
    items = await editor.client.text_document_completion_async(
        lsp.CompletionParams(text_document=td(uri), position=end))
    switch = next(i for i in items.items if i.label == "switch")
    assert switch.text_edit is not None and switch.text_edit.new_text.startswith("→ switch")
    # the edit replaces the typed `->`: it starts where the arrow does
    line = editor.doc(uri).line_count - 1
    assert switch.text_edit.range.start == lsp.Position(line, 0)


async def test_completion_arguments(editor: Editor) -> None:
    uri = await open_demo(editor)
    _, lid = node(editor, "gate was locked")
    editor.append(uri, f"\n→ view {lid[:3]}")
    items = await editor.client.text_document_completion_async(lsp.CompletionParams(
        text_document=td(uri), position=editor.pos(uri, len(editor.texts[uri]))))
    hit = next(i for i in items.items if i.label == lid)
    assert "model" in (hit.detail or "") and "gate was locked" in (hit.detail or "")
    editor.append(uri, ' full\n→ read doc:"char')
    items = await editor.client.text_document_completion_async(lsp.CompletionParams(
        text_document=td(uri), position=editor.pos(uri, len(editor.texts[uri]))))
    assert 'doc:"character notes"' in [i.label for i in items.items]
    editor.append(uri, '"\n→ continue n:')
    items = await editor.client.text_document_completion_async(lsp.CompletionParams(
        text_document=td(uri), position=editor.pos(uri, len(editor.texts[uri]))))
    assert "n:3" in [i.label for i in items.items]


async def test_hover_on_reference_text_and_verb(editor: Editor) -> None:
    uri = await open_demo(editor)
    _, lid = node(editor, "gate was locked")
    text = editor.texts[uri]
    editor.append(uri, f"\n→ view [{lid}]")
    full = editor.texts[uri]
    ref_at = full.index(f"[{lid}]") + 2
    hover = await editor.client.text_document_hover_async(lsp.HoverParams(
        text_document=td(uri), position=editor.pos(uri, ref_at)))
    assert hover is not None and "The gate was locked." in hover.contents.value
    assert "model" in hover.contents.value
    # text inside the buffer: the node that owns it
    at = text.index("Inside, the kitchen") + 5
    hover = await editor.client.text_document_hover_async(lsp.HoverParams(
        text_document=td(uri), position=editor.pos(uri, at)))
    assert hover is not None and "depth:4" in hover.contents.value
    # a verb: its help
    verb_at = full.rindex("view") + 1
    hover = await editor.client.text_document_hover_async(lsp.HoverParams(
        text_document=td(uri), position=editor.pos(uri, verb_at)))
    assert hover is not None and "Inspect a node's content" in hover.contents.value


async def test_definition_and_links(editor: Editor) -> None:
    uri = await open_demo(editor)
    _, on_path = node(editor, "stopped at the gate")
    _, off_path = node(editor, "gate was locked")
    editor.append(uri, f"\n→ view {on_path}\n→ view {off_path}")
    full = editor.texts[uri]
    loc = await editor.client.text_document_definition_async(lsp.DefinitionParams(
        text_document=td(uri), position=editor.pos(uri, full.index(f"view {on_path}") + 6)))
    assert loc.uri == uri
    assert editor.doc(uri).offset_at(loc.range.start.line, loc.range.start.character) == \
        full.index(" She stopped at the gate")
    loc = await editor.client.text_document_definition_async(lsp.DefinitionParams(
        text_document=td(uri), position=editor.pos(uri, full.index(f"view {off_path}") + 6)))
    assert f"/{off_path}/" in loc.uri  # loom://path/TREE/NODE/Title
    links = await editor.client.text_document_document_link_async(
        lsp.DocumentLinkParams(text_document=td(uri)))
    assert {lk.target.split("/")[4] for lk in links} >= {on_path, off_path}


async def test_references(editor: Editor) -> None:
    uri = await open_demo(editor)
    _, lid = node(editor, "key still hung")
    editor.append(uri, f"\n→ view {lid}")
    full = editor.texts[uri]
    refs = await editor.client.text_document_references_async(lsp.ReferenceParams(
        text_document=td(uri), position=editor.pos(uri, full.rindex(lid) + 1),
        context=lsp.ReferenceContext(include_declaration=True)))
    # the node itself and the node it is linked to (the clock)
    assert len(refs) == 2


async def test_code_lens_cycles_siblings(editor: Editor) -> None:
    uri = await open_demo(editor)
    lenses = await editor.client.text_document_code_lens_async(
        lsp.CodeLensParams(text_document=td(uri)))
    titles = [lens.command.title for lens in lenses]
    _, lid = node(editor, "windows seemed to watch")
    # quiet by default: one sibling lens over a line, its last node's with
    # alternatives; the others' ◀ k/n ▶ sit at their boundaries
    quiet = [t for t in titles if t.startswith("◀")]
    assert len(quiet) == 1 and quiet[0].startswith("◀ 1/2 ▶ ") and lid not in quiet[0]
    editor.client.workspace_did_change_configuration(lsp.DidChangeConfigurationParams(
        settings={"loom": {"markers": "all"}}))
    lenses = await editor.client.text_document_code_lens_async(
        lsp.CodeLensParams(text_document=td(uri)))
    titles = [lens.command.title for lens in lenses]
    assert f"◀ 1/3 ▶ [{lid}]" in titles
    assert any(t.startswith("Branch") for t in titles)
    assert any(t.startswith("Annotate") for t in titles)
    assert any(t.startswith("Continue ×") for t in titles)
    cycle = next(lens for lens in lenses if lens.command.title == f"◀ 1/3 ▶ [{lid}]")
    before = editor.texts[uri]
    res = await run(editor, "loom.cycleSibling", cycle.command.arguments[0])
    assert res["ok"], res
    await editor.wait_for(lambda: editor.texts[uri] != before)
    assert "walnut trees had dropped their leaves" in editor.texts[uri]
    assert "kitchen smelled" not in editor.texts[uri]
    lenses = await editor.client.text_document_code_lens_async(
        lsp.CodeLensParams(text_document=td(uri)))
    _, lid2 = node(editor, "walnut trees had dropped")
    assert f"◀ 2/3 ▶ [{lid2}]" in [lens.command.title for lens in lenses]


async def test_run_command_line_and_diagnostic(editor: Editor) -> None:
    uri = await open_demo(editor)
    nid, lid = node(editor, "gate was locked")
    editor.append(uri, f'\n→ annotate {lid} "too abrupt?"')
    line = editor.doc(uri).line_count - 1
    res = await run(editor, "loom.run", {"uri": uri, "line": line})
    assert res["ok"] and res["message"].startswith("✓ annotation [ann-"), res
    await editor.wait_for(lambda: "→ annotate" not in editor.texts[uri])
    assert sql(editor.db, "SELECT content FROM node WHERE kind = 'annotation' AND parent = ?",
               nid) == [("too abrupt?",)]
    editor.append(uri, "\n→ view zzzzzz")
    line = editor.doc(uri).line_count - 1
    res = await run(editor, "loom.run", {"uri": uri, "line": line})
    assert not res["ok"]
    await editor.wait_for(lambda: uri in editor.client.diagnostics)
    diags = editor.client.diagnostics[uri]
    assert diags and diags[0].code == "NOT_FOUND" and diags[0].range.start.line == line
    assert diags[0].message == "✗ NOT_FOUND: node [zzzzzz] does not exist in this tree"
    assert "→ view zzzzzz" in editor.texts[uri]  # a failed command stays


async def test_edit_committed_node_and_save_makes_version(editor: Editor) -> None:
    uri = await open_demo(editor)
    text = editor.texts[uri]
    at = text.index("cold ash")
    editor.replace(uri, at, at + len("cold ash"), "woodsmoke")
    editor.append(uri, " She sat down.")
    res = await editor.request(
        "loom/save", {"uri": uri, "text": editor.texts[uri]})
    assert res["ok"], res
    versions = sql(editor.db, "SELECT content, edited_from FROM node WHERE edited_from "
                              "IS NOT NULL")
    assert len(versions) == 1 and "woodsmoke" in versions[0][0]
    assert sql(editor.db, "SELECT count(*) FROM node WHERE content = ' She sat down.'") == [(1,)]


async def test_semantic_tokens_and_inlay_hints(editor: Editor) -> None:
    uri = await open_demo(editor)
    tokens = await editor.client.text_document_semantic_tokens_full_async(
        lsp.SemanticTokensParams(text_document=td(uri)))
    types = {tokens.data[i + 3] for i in range(0, len(tokens.data), 5)}
    assert {0, 1} <= types  # model and human text both present
    hints = await editor.client.text_document_inlay_hint_async(lsp.InlayHintParams(
        text_document=td(uri), range=lsp.Range(lsp.Position(0, 0), lsp.Position(50, 0))))
    labels = ["".join(p.value for p in h.label) if isinstance(h.label, list | tuple)
              else h.label for h in hints]
    # the editor's boundary glyph renders in common fonts (the seeds' ︱ drew as a box)
    assert all(label.startswith("¦") for label in labels), labels
    # quiet by default: only where there is a choice of siblings
    assert len(hints) == 3 and all("◀" in label for label in labels), labels
    assert any("◀ 1/3 ▶" in label for label in labels)  # siblings where they belong
    editor.client.workspace_did_change_configuration(lsp.DidChangeConfigurationParams(
        settings={"loom": {"markers": "all"}}))
    hints = await editor.client.text_document_inlay_hint_async(lsp.InlayHintParams(
        text_document=td(uri), range=lsp.Range(lsp.Position(0, 0), lsp.Position(50, 0))))
    labels = ["".join(p.value for p in h.label) if isinstance(h.label, list | tuple)
              else h.label for h in hints]
    assert len(hints) == 4 and all(label.startswith("¦") for label in labels), labels
    assert any(label.startswith("¦›") for label in labels)
    assert sum("◀" in label for label in labels) == 3
    editor.client.workspace_did_change_configuration(lsp.DidChangeConfigurationParams(
        settings={"loom": {"markers": "every"}}))  # not a choice: refused, the last stays
    assert len(await editor.client.text_document_inlay_hint_async(lsp.InlayHintParams(
        text_document=td(uri), range=lsp.Range(lsp.Position(0, 0), lsp.Position(50, 0))))) == 4


async def test_edited_model_text_shows_human_characters(editor: Editor) -> None:
    uri = await open_demo(editor)
    text = editor.texts[uri]
    at = text.index("cold ash")
    editor.replace(uri, at, at, "very ")
    tokens = await editor.client.text_document_semantic_tokens_full_async(
        lsp.SemanticTokensParams(text_document=td(uri)))
    data = tokens.data
    line, col, found = 0, 0, []
    for i in range(0, len(data), 5):
        line = line + data[i]
        col = data[i + 1] if data[i] else col + data[i + 1]
        found.append((line, col, data[i + 2], data[i + 3], data[i + 4]))
    start = editor.pos(uri, at)
    # a loomHuman token marked edited covers the typed word (a diff may place the space on
    # either side of it)
    human = [t for t in found if t[0] == start.line and t[3] == 1 and t[4] & 2
             and t[1] <= start.character + 1 and t[1] + t[2] >= start.character + 4]
    assert human, found


async def test_generation_without_model_is_a_diagnostic(editor: Editor) -> None:
    uri = await open_demo(editor)
    editor.append(uri, " Then")
    res = await run(editor, "loom.continue", {"uri": uri, "n": 2})
    assert not res["ok"] and "MODEL_ERROR" in res["message"]
    # the working buffer was committed first and nothing was lost
    assert sql(editor.db, "SELECT count(*) FROM node WHERE content = ' Then'") == [(1,)]
    assert editor.texts[uri].endswith(" Then")


async def test_change_from_elsewhere_updates_open_document(editor: Editor) -> None:
    uri = await open_demo(editor)
    _, lid = node(editor, "stopped at the gate")
    editor.append(uri, " I am typing")
    await asyncio.sleep(0.1)
    tree = uri.split("/")[3]
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "loom.cli", "--db", str(editor.db), "do", tree,
        f'→ edit {lid} " She hesitated at the gate."', stdout=subprocess.PIPE)
    out, _ = await proc.communicate()
    assert out.decode().startswith("✓ created version"), out
    await editor.wait_for(lambda: "She hesitated at the gate." in editor.texts[uri])
    assert editor.texts[uri].endswith(" I am typing")  # what the human typed is kept


async def test_a_version_of_the_buffers_last_node_takes_its_place(editor: Editor) -> None:
    """The collaborator fixed the node the human's path ended on (an
    → edit: a buffer-mode version); the buffer, ending on the original, never showed it."""
    uri = await open_demo(editor)
    tip = sql(editor.db, "SELECT n.local_id, n.content FROM position p JOIN participant x ON "
              "x.id = p.participant JOIN node n ON n.id = p.tip WHERE x.name = 'human'")
    lid, content = tip[0]
    assert editor.texts[uri].endswith(content)
    fixed = content.rstrip(".") + ", and the hall was dark."
    tree = uri.split("/")[3]
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "loom.cli", "--db", str(editor.db), "do", tree,
        "--as", "collaborator", f'→ edit {lid} "{fixed}"', stdout=subprocess.PIPE)
    out, _ = await proc.communicate()
    assert out.decode().startswith("✓ created version"), out
    await editor.wait_for(lambda: editor.texts[uri].endswith(fixed))
    # the human's place moved onto the version: the next read of the path is the same
    assert sql(editor.db, "SELECT n.label FROM position p JOIN participant x ON x.id = "
               "p.participant JOIN node n ON n.id = p.tip WHERE x.name = 'human'") == [
        (f"{lid}'",)]


async def test_a_tree_deleted_while_open_takes_no_writes_and_the_editor_is_told(
        editor: Editor) -> None:
    """A tree deleted while its path was open went on taking what was
    typed ("✓ committed 1 node", into the trash), and the editor was never told."""
    uri = await open_demo(editor)
    tree = uri.split("/")[3]
    title = sql(editor.db, "SELECT title FROM tree WHERE id = ?", tree)[0][0]
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "loom.cli", "--db", str(editor.db), "do", tree,
        f'→ delete tree:"{title}"', stdout=subprocess.PIPE)
    out, _ = await proc.communicate()
    assert out.decode().startswith("✓"), out
    await editor.wait_for(lambda: any(f'tree "{title}" was deleted while you had it open'
                                      in m.message for m in editor.client.messages))
    editor.append(uri, " Words for the trash.")
    res = await editor.request("loom/save", {"uri": uri, "text": editor.texts[uri]})
    assert not res["ok"] and f'NOT_FOUND: tree "{title}" was deleted' in res["message"], res
    assert sql(editor.db, "SELECT count(*) FROM node WHERE content LIKE '%for the trash%'") \
        == [(0,)]
    assert editor.texts[uri].endswith(" Words for the trash.")  # kept where it was typed


async def test_pending_text_survives_restart(editor: Editor) -> None:
    uri = await open_demo(editor)
    editor.append(uri, " Unsaved words.")
    # the server keeps pending text shortly after typing stops
    await editor.wait_for(lambda: sql(editor.db, "SELECT working FROM buffer_state")
                          == [(" Unsaved words.",)])
    script = ("import sys\nfrom loom.store.db import open_database\n"
              "from loom.store.workspace import Workspace\n"
              "from loom.lsp.documents import OpenDocuments\n"
              "ws = Workspace(open_database(sys.argv[1]))\n"
              "d = OpenDocuments(ws, ws.human(), 'utf-16', 'another-session')\n"
              "print(d.text_for(sys.argv[2])[0])")

    async def second_server() -> str:
        proc = await asyncio.create_subprocess_exec(
            sys.executable, "-c", script, str(editor.db), uri, stdout=subprocess.PIPE)
        out, _ = await proc.communicate()
        return out.decode().rstrip("\n")

    # another editor session while this one lives: the text is this session's own
    assert not (await second_server()).endswith(" Unsaved words.")
    # once this session is gone (as after a crash or a restart), the next one gets it back
    sql(editor.db, "DELETE FROM editor_session")
    assert (await second_server()).endswith(" Unsaved words.")


async def test_positions_after_multibyte_characters(editor: Editor) -> None:
    uri = await open_demo(editor)
    _, lid = node(editor, "gate was locked")
    editor.append(uri, f"\n→ view [{lid}] ︱ → view [{lid}]")
    full = editor.texts[uri]
    second = full.rindex(f"[{lid}]") + 2  # after `→` and `︱`: 3 bytes, 1 UTF-16 unit each
    hover = await editor.client.text_document_hover_async(lsp.HoverParams(
        text_document=td(uri), position=editor.pos(uri, second)))
    assert hover is not None and "The gate was locked." in hover.contents.value
    rng = hover.range
    assert editor.doc(uri).offset_at(rng.start.line, rng.start.character) == \
        full.rindex(f"[{lid}]")


async def test_tree_overview_and_custom_requests(editor: Editor) -> None:
    trees = await editor.request("loom/trees", {})
    assert trees[0]["title"] == "The House at the End of the Lane"
    over = await editor.client.workspace_text_document_content_async(
        lsp.TextDocumentContentParams(uri=trees[0]["uri"]))
    assert "├→" in over.text and "*" in over.text
    info = await editor.request(
        "loom/nodeInfo", {"tree": trees[0]["id"]})
    _, here = node(editor, "kitchen smelled")
    assert info["node"]["localId"] == here and info["node"]["author"] == "model"
    assert len(info["path"]) == 5 and info["path"][0]["author"] == "human"
    read = await editor.request(
        "loom/read", {"uri": 'loom://doc/character%20notes'})
    assert read["text"].startswith("# Character notes") and read["languageId"] == "markdown"


async def test_malformed_requests_never_crash(editor: Editor) -> None:
    bad = "loom://path/NOPE/zzzz"
    hover = await editor.client.text_document_hover_async(lsp.HoverParams(
        text_document=td(bad), position=lsp.Position(3, 99)))
    assert hover is None
    res = await editor.request("loom/save", {"uri": 3})
    assert res["ok"] is False
    res = await editor.request("loom/read", {"uri": bad})
    assert "✗" in res["error"]
    res = await run(editor, "loom.run", {"uri": bad, "line": "x"})
    assert res is None or res.get("ok") is False
    editor.client.text_document_did_change(lsp.DidChangeTextDocumentParams(
        text_document=lsp.VersionedTextDocumentIdentifier(uri=bad, version=9),
        content_changes=[lsp.TextDocumentContentChangeWholeDocument(text="x")]))
    uri = await open_demo(editor)
    out_of_range = await editor.client.text_document_completion_async(lsp.CompletionParams(
        text_document=td(uri), position=lsp.Position(9999, 9999)))
    assert out_of_range is None or not out_of_range.items
    # still alive and correct
    tokens = await editor.client.text_document_semantic_tokens_full_async(
        lsp.SemanticTokensParams(text_document=td(uri)))
    assert tokens.data


async def test_configuration_turns_inlay_hints_off(editor: Editor) -> None:
    uri = await open_demo(editor)
    editor.client.workspace_did_change_configuration(lsp.DidChangeConfigurationParams(
        settings={"loom": {"inlayHints": False}}))
    hints = await editor.client.text_document_inlay_hint_async(lsp.InlayHintParams(
        text_document=td(uri), range=lsp.Range(lsp.Position(0, 0), lsp.Position(50, 0))))
    assert not hints
    editor.client.workspace_did_change_configuration(lsp.DidChangeConfigurationParams(
        settings={"loom": {"inlayHints": "not a boolean", "defaultN": 99}}))
    hints = await editor.client.text_document_inlay_hint_async(lsp.InlayHintParams(
        text_document=td(uri), range=lsp.Range(lsp.Position(0, 0), lsp.Position(50, 0))))
    assert not hints  # a bad configuration is refused whole; the last good one stays


async def test_dialogue_path_view(editor: Editor) -> None:
    tree = await editor.request("loom/newTree", {"title": "Chat", "mode": "dialogue",
                                                 "text": "Hello there."})
    uri = tree["uri"]
    res = await editor.client.workspace_text_document_content_async(
        lsp.TextDocumentContentParams(uri=uri))
    assert res.text.startswith("[") and "human · " in res.text.splitlines()[0]
    assert res.text.endswith("Hello there.")
    editor.open(uri, res.text)
    editor.append(uri, "\n\nHow are you?")
    saved = await editor.request("loom/save", {"uri": uri, "text": editor.texts[uri]})
    assert saved["ok"], saved
    await editor.wait_for(lambda: editor.texts[uri].count("human · ") == 2)
    rows = sql(editor.db, "SELECT content FROM node WHERE content LIKE '%How are you?%'")
    assert [r[0] for r in rows] == ["How are you?"]


async def test_a_tree_made_elsewhere_is_announced(editor: Editor) -> None:
    """The VS Code Loom view did not show a tree made from the CLI
    (same database) until Refresh. The server says which trees changed anywhere."""
    await open_demo(editor)
    out = subprocess.run([sys.executable, "-m", "loom.cli", "--db", str(editor.db), "new",
                          "Made in a terminal", "--text", "It begins."],
                         capture_output=True, text=True, check=True)
    assert out.returncode == 0, out
    made = sql(editor.db, "SELECT id FROM tree WHERE title = 'Made in a terminal'")[0][0]

    def announced() -> bool:
        return any(m == "loom/treesChanged" and made in list(getattr(p, "trees", []) or [])
                   for m, p in editor.notifications)

    await editor.wait_for(announced)
