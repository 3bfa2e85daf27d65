"""Each language-server feature module called directly (no client), as VS Code (utf-16)
and Neovim (utf-8) would see it: hover, definition, references, links, lenses, semantic
tokens, inlay hints, completion, and what a commit would do."""

from __future__ import annotations

import pytest
from lsprotocol import types as lsp

from loom.demo import create_demo
from loom.lsp.documents import OpenDocuments
from loom.lsp.features import cards, completion, decorations, lookup
from loom.lsp.features.editing import commit_command
from loom.lsp.positions import TextDoc, units
from loom.store.schema import Generation
from loom.uris import node_uri


@pytest.fixture(params=["utf-16", "utf-8"])
def opened(app, request):  # type: ignore[no-untyped-def]
    create_demo(app.ws)
    ws = app.ws
    human = ws.human()
    tree = ws.trees()[0][0]
    node, tip = ws.position(human, tree)
    docs = OpenDocuments(ws, human, request.param, "test-session")
    uri = node_uri(tree, tip)
    text, _ = docs.text_for(uri)
    # a command line typed at the end, with a multi-byte arrow before the reference
    line = f"\n→ view {node.local_id}"
    doc = docs.did_open(uri, text + line)
    return docs, doc, tree, node


def test_hover_on_a_reference_and_on_prose(opened) -> None:  # type: ignore[no-untyped-def]
    docs, doc, _tree, node = opened
    at = doc.text.rindex(node.local_id)
    text, span = lookup.hover(docs, doc, at + 1)
    assert f"[{node.label}]" in text and (span.start, span.end) == (
        at, at + len(node.local_id))
    text, span = lookup.hover(docs, doc, 3)  # inside the root's prose
    assert text.startswith("**[") and span.start == 0


def test_hover_says_how_a_model_made_the_node_and_whether_a_replay_matched(opened) -> None:  # type: ignore[no-untyped-def]
    docs, _doc, tree, node = opened
    ws = docs.ws
    first = ws.add_node(tree, node, " the door.", ws.subject())
    again = ws.add_node(tree, node, " the door.", ws.subject())
    asked = {"n": 2, "max_tokens": 20, "temperature": 0.7, "top_p": 0.9, "seed": 42,
             "stop": ["\n"], "logprobs": 5, "profile": "local"}
    Generation.create(id="g-first", node=first.id, provider="local", model="SmolLM2",
                      params=asked, created=ws.clock())
    Generation.create(id="g-again", node=again.id, provider="local", model="SmolLM2",
                      params={**asked, "n": 1, "replay_of": first.id, "replay_matched": True},
                      created=ws.clock())
    (line,) = [x for x in cards.generation_lines(docs, first) if x.startswith("Generated")]
    assert line.startswith("Generated: `SmolLM2` via local · temperature 0.7 · max tokens 20 "
                           '· top p 0.9 · seed 42 · stop "\\n" · ')
    assert "profile" not in line and "logprobs" not in line
    replay = cards.generation_lines(docs, again)
    assert f"Replay of [{first.label}]: the same text" in replay


def test_sibling_markers_name_the_model_where_siblings_come_from_several(opened) -> None:  # type: ignore[no-untyped-def]
    docs, _doc, tree, _node = opened
    ws = docs.ws
    _, tip = ws.position(ws.human(), tree)
    kids = [ws.add_node(tree, tip, f" Then {w}.", ws.subject()) for w in ("rain", "snow", "sun")]
    models = ["SmolLM2", "SmolLM2", "gpt-4.1-mini"]
    for i, (kid, model) in enumerate(zip(kids, models, strict=True)):
        Generation.create(id=f"g{i}", node=kid.id, provider="p", model=model, params={},
                          created=ws.clock())
    for kid, model in ((kids[0], "SmolLM2"), (kids[2], "gpt-4.1-mini")):
        uri = node_uri(tree, kid)
        text, _ = docs.text_for(uri)
        doc = docs.did_open(uri, text)
        end = lsp.Position(*doc.session.doc.position_at(len(doc.text)))
        hints = decorations.lsp_inlay_hints(docs, doc, lsp.Range(lsp.Position(0, 0), end))
        (mark,) = [h for h in hints if not isinstance(h.label, str)
                   and kid.label in h.label[0].value]
        assert mark.label[0].value == f"¦›{kid.label} {model}"
        assert "".join(p.value for p in mark.label[1:]).strip().startswith("◀")
        assert mark.tooltip == f"[{kid.label}] {model}"
    # one model among the siblings: the marker stays as it was
    Generation.update(model="SmolLM2").where(Generation.id == "g2").execute()
    ws.log_change(tree.id, "node.summary", kids[2].id, None, {})  # the tree changed
    doc = docs.did_open(node_uri(tree, kids[2]), docs.text_for(node_uri(tree, kids[2]))[0])
    end = lsp.Position(*doc.session.doc.position_at(len(doc.text)))
    (mark,) = [h for h in decorations.lsp_inlay_hints(docs, doc, lsp.Range(lsp.Position(0, 0), end))
               if not isinstance(h.label, str) and kids[2].label in h.label[0].value]
    assert mark.label[0].value == f"¦›{kids[2].label}"


def test_hover_on_a_verb_shows_its_help(opened) -> None:  # type: ignore[no-untyped-def]
    docs, doc, _tree, _node = opened
    at = doc.text.rindex("view")
    text, _ = lookup.hover(docs, doc, at + 1)
    assert "→ view" in text


def test_definition_and_references_point_into_the_path(opened) -> None:  # type: ignore[no-untyped-def]
    docs, doc, _tree, node = opened
    at = doc.text.rindex(node.local_id)
    loc = lookup.definition(docs, doc, at)
    assert loc is not None and loc.uri == doc.uri
    seg = next(s for s in doc.session.segments if s.node == node.id)
    assert loc.start == seg.start
    refs = lookup.references(docs, doc, at)
    assert refs and refs[0].start == seg.start


def test_document_links_cover_each_reference(opened) -> None:  # type: ignore[no-untyped-def]
    docs, doc, _tree, node = opened
    links = lookup.document_links(docs, doc)
    start = doc.text.rindex(node.local_id)
    assert (start, start + len(node.local_id)) in [(s, e) for s, e, _ in links]


def test_semantic_tokens_are_in_the_client_encoding(opened) -> None:  # type: ignore[no-untyped-def]
    docs, doc, _tree, _node = opened
    data = decorations.semantic_tokens(docs, doc)
    assert data and len(data) % 5 == 0
    text_doc = TextDoc(doc.text, docs.encoding)
    line, char = 0, 0
    for i in range(0, len(data), 5):
        d_line, d_char, length = data[i], data[i + 1], data[i + 2]
        line += d_line
        char = d_char if d_line else char + d_char
        line_text = text_doc.line(line)
        assert units(line_text, docs.encoding) >= char + length  # never past the line
    last_line = text_doc.line(text_doc.line_count - 1)
    assert last_line.startswith("→ view")


def test_inlay_hints_sit_at_node_boundaries(opened) -> None:  # type: ignore[no-untyped-def]
    _docs, doc, _tree, _node = opened
    hints = decorations.inlay_hints(doc, 0, len(doc.text), every=True)
    starts = {s.start for s in doc.session.segments if s.node}
    assert hints and {off for off, _label, _tip in hints} <= starts
    # quiet (the default): only where siblings offer a choice
    positions = decorations.positions_for(_docs, doc)
    quiet = decorations.inlay_hints(doc, 0, len(doc.text), positions)
    assert quiet and all("◀" in label for _off, label, _tip in quiet)
    assert len(quiet) < len(decorations.inlay_hints(doc, 0, len(doc.text), positions, True))


def test_lenses_offer_siblings_and_actions(opened) -> None:  # type: ignore[no-untyped-def]
    docs, doc, _tree, _node = opened
    titles = [lens.title for lens in decorations.lenses(docs, doc, 3)]
    assert any("/" in t for t in titles)  # ◀ k/n ▶ on a node with siblings
    assert any("Continue" in t for t in titles)


def test_completion_after_every_arrow(opened) -> None:  # type: ignore[no-untyped-def]
    docs, doc, tree, _node = opened
    for arrow in ("→", "->", "➜", "⇒", "-->"):
        line = f"{arrow} vi"
        labels = [i.label for i in completion.complete(docs, doc, tree, line, len(line))]
        assert "view" in labels, arrow
    line = "→ memory "
    labels = [i.label for i in completion.complete(docs, doc, tree, line, len(line))]
    assert "state" in labels and "stashed" in labels


def test_completion_offers_model_profiles_after_model(opened, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    docs, doc, tree, _node = opened
    for name in ("LOOM_SUBJECT_PROFILE", "LOOM_BASE_URL", "LOOM_CONFIG", "ANTHROPIC_API_KEY",
                 "OPENAI_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("LOOM_CONFIG", "/nonexistent/loom-config.toml")
    monkeypatch.setenv("LOOM_NO_KEYRING", "1")

    def offered(line: str) -> dict[str, str]:
        items = completion.complete(docs, doc, tree, line, len(line))
        return {i.label: i.detail or "" for i in items}

    models = offered("→ continue model:")
    assert next(iter(models)) == "model:local" and models["model:local"].endswith("(default)")
    assert models["model:claude-haiku"] == "anthropic claude-haiku-4-5 (no API key)"
    assert set(offered("→ continue model:cl")) == {"model:claude-haiku"}
    after = offered("→ continue models:local,")
    assert "models:local,davinci-002" in after and "models:local,local" not in after
    assert "model:" in offered("→ continue mod") and "top_p:" in offered("→ continue top")


def test_a_commit_takes_prose_and_leaves_command_lines(opened) -> None:  # type: ignore[no-untyped-def]
    docs, doc, _tree, _node = opened
    end = len(doc.text)
    docs.did_change(doc, end, end, "\nMore prose.")
    cmd = commit_command(doc)
    assert cmd is not None and cmd.text is None  # prose after a command line waits
    start = doc.session.committed_end
    docs.did_change(doc, start, start, " New words.")
    cmd = commit_command(doc)
    assert cmd is not None and cmd.text == " New words."
