"""``→ split`` and the token store through the executor: generated tokens are
stored compactly and spell the node's text; a split keeps authorship, provenance, the hash
chain and the token data on both halves, shares the downstream, and loses nothing; an
alternative the model weighed becomes model text with its probabilities."""

from __future__ import annotations

import json
import math
from types import SimpleNamespace
from typing import Any

import pytest

from loom.commands import syntax
from loom.commands.context import Actor
from loom.model import permissions as perms
from loom.store import node_tokens as token_store
from loom.store.schema import Generation, Node, NodeTokens, RawResponse
from loom.store.workspace import content_hash

TEXT = " The cat sat on the mat."
PIECES = [" The", " cat", " sat", " on", " the", " mat", "."]


def entries(pieces: list[str]) -> list[dict[str, Any]]:
    out = []
    for i, p in enumerate(pieces):
        alts = [(p, -0.2 - i / 10), (" lay" if p == " sat" else " a", -1.5), (" stood", -2.5)]
        out.append({"token": p, "logprob": -0.2 - i / 10,
                    "top_logprobs": [{"token": t, "logprob": lp} for t, lp in alts]})
    return out


class Subject:
    """A subject model answering with fixed texts and token logprobs."""

    def __init__(self, texts: list[list[str]], k: int | None = 5,
                 provider: str = "openai-compatible") -> None:
        self.texts, self.k, self.provider = texts, k, provider

    def generate(self, request, on_delta=None):  # type: ignore[no-untyped-def]
        comps = [SimpleNamespace(index=i, text="".join(self.texts[i % len(self.texts)]),
                                 finish_reason="stop", usage=None,
                                 logprobs=entries(self.texts[i % len(self.texts)])
                                 if self.k is not None else None)
                 for i in range(request.n)]
        raw = [{"choices": [{"index": 0, "text": "".join(self.texts[0]),
                             "logprobs": {"tokens": self.texts[0]}}]}]
        return SimpleNamespace(completions=comps, model="fake-base", provider=self.provider,
                               params={"n": request.n, "logprobs": self.k}, usage={},
                               latency_ms=1.0, raw=raw)


@pytest.fixture
def tree(app):  # type: ignore[no-untyped-def]
    tree = app.ws.create_tree("Cats", root_content="Once upon a time.")
    app.executor.subject = Subject([PIECES, [" A", " dog", " barked", "."]])
    return tree


def run(app, tree, line: str | syntax.Command, who=None):  # type: ignore[no-untyped-def]
    return app.executor.execute(line, Actor(who or app.ws.human(), tree))


def generated(app, tree) -> Node:  # type: ignore[no-untyped-def]
    res = run(app, tree, "→ continue n:2")
    assert res.ok, res.text
    return app.ws.node(res.data["created"][0])


def test_generated_tokens_are_stored_compactly_and_spell_the_text(app, tree) -> None:  # type: ignore[no-untyped-def]
    node = generated(app, tree)
    toks = token_store.tokens(app.ws, node)
    assert "".join(t.text for t in toks) == node.content == TEXT
    assert toks[2].text == " sat" and toks[2].alternatives[1] == (" lay", -1.5)
    row = NodeTokens.get_by_id(node.id)
    assert (row.k, row.count, row.covered) == (5, len(PIECES), len(TEXT))
    gen = Generation.get(Generation.node == node.id)
    assert gen.logprobs is None  # not a second, JSON copy
    raw = json.loads(RawResponse.get_by_id(gen.raw).body)
    assert raw[0]["choices"][0]["logprobs"] == "(in node_tokens)"
    assert raw[0]["choices"][0]["text"] == TEXT


def test_a_model_without_logprobs_says_why(app, tree) -> None:  # type: ignore[no-untyped-def]
    app.executor.subject = Subject([PIECES], k=None, provider="anthropic")
    node = generated(app, tree)
    assert token_store.tokens(app.ws, node) is None
    assert "Anthropic" in token_store.missing_reason(app.ws, node)
    app.executor.subject = Subject([PIECES], k=None)
    other = generated(app, tree)
    assert "turns them off" in token_store.missing_reason(app.ws, other)
    assert token_store.missing_reason(app.ws, app.ws.node(tree.root)) == "written by a human"


def test_split_makes_two_halves_that_keep_everything(app, tree) -> None:  # type: ignore[no-untyped-def]
    ws = app.ws
    node = generated(app, tree)
    run(app, tree, f'→ respond {node.local_id} " She purred."')
    child = ws.path(ws.position(ws.human(), tree)[1])[-1]
    res = run(app, tree, f"→ split {node.local_id} at:8")
    assert res.ok, res.text
    assert res.text.startswith(f"✓ split [{node.local_id}] at 8: [")
    head, tail = ws.node(res.data["head"]), ws.node(res.data["tail"])
    assert (head.content, tail.content) == (" The cat", " sat on the mat.")
    for half in (head, tail):
        assert (half.author_id, half.author_type, half.created) == \
            (node.author_id, "model", node.created)
        gen = Generation.get(Generation.node == half.id)
        assert (gen.provider, gen.model) == ("openai-compatible", "fake-base")
    root = ws.node(tree.root)
    assert head.content_hash == content_hash(root.content_hash, " The cat")
    assert tail.content_hash == content_hash(head.content_hash, " sat on the mat.")
    # the path reads the same, through the halves; the original is kept, hidden
    path = ws.path(ws.position(ws.human(), tree)[1])
    assert [n.id for n in path] == [root.id, head.id, tail.id, child.id]
    assert "".join(n.content for n in path) == "Once upon a time." + TEXT + " She purred."
    original = ws.node(node.id)
    assert original.pruned and original.content == TEXT
    assert [c.id for c in ws.children(tail)] == [child.id]
    assert child.depth + 1 == ws.node(child.id).depth == tail.depth + 1
    # token data on both halves, at their own offsets
    assert [t.text for t in token_store.tokens(ws, head)] == [" The", " cat"]
    tail_tokens = token_store.tokens(ws, tail)
    assert [(t.start, t.text) for t in tail_tokens][:2] == [(0, " sat"), (4, " on")]
    assert res.command == f"→ split {node.local_id} at:8"
    # the whole node is no longer offered: its halves are
    assert run(app, tree, f"→ split {node.local_id} at:3").text.startswith("✗ NOT_FOUND")


def test_a_position_on_the_split_node_moves_to_its_tail(app, tree) -> None:  # type: ignore[no-untyped-def]
    ws = app.ws
    node = generated(app, tree)
    assert ws.position(ws.human(), tree)[1].id == node.id
    res = run(app, tree, f"→ split {node.local_id} at:4")
    here, tip = ws.position(ws.human(), tree)
    assert here.id == tip.id == res.data["tail"]
    assert "".join(n.content for n in ws.path(tip)) == "Once upon a time." + TEXT
    assert run(app, tree, "→ help split").text.startswith("split — Split a node in two")


def test_split_with_an_alternative_the_model_weighed(app, tree) -> None:  # type: ignore[no-untyped-def]
    ws = app.ws
    node = generated(app, tree)
    res = run(app, tree, f'→ split {node.local_id} at:8 alt:" lay"')
    assert res.ok, res.text
    alt = ws.node(res.data["alternative"])
    head, tail = ws.node(res.data["head"]), ws.node(res.data["tail"])
    assert alt.content == " lay" and alt.author_type == "model"
    assert [c.id for c in ws.children(head)] == [tail.id, alt.id]
    here = ws.position(ws.human(), tree)
    assert here[0].id == here[1].id == alt.id  # the buffer switches to the new branch
    (tok,) = token_store.tokens(ws, alt)
    assert tok.text == " lay" and tok.probability == pytest.approx(math.exp(-1.5), rel=1e-3)
    assert tok.alternatives[0][0] == " sat"  # the same distribution as at the original
    assert Generation.get(Generation.node == alt.id).params["alternative_of"] == node.id
    # something the model did not weigh there is the human's own text
    res = run(app, tree, f'→ split {tail.local_id} at:4 alt:" under"')
    assert res.ok, res.text
    assert ws.node(res.data["alternative"]).author_type == "human"


def test_an_alternative_for_the_first_token_is_a_sibling(app, tree) -> None:  # type: ignore[no-untyped-def]
    ws = app.ws
    node = generated(app, tree)
    res = run(app, tree, f'→ split {node.local_id} at:0 alt:" a"')
    assert res.ok, res.text
    alt = ws.node(res.data["alternative"])
    assert alt.content == " a" and alt.author_type == "model" and alt.parent == tree.root
    assert not ws.node(node.id).pruned  # nothing was split
    assert ws.position(ws.human(), tree)[1].id == alt.id
    assert token_store.tokens(ws, alt)[0].alternatives[0] == (" The", -0.2)


def test_split_refusals(app, tree) -> None:  # type: ignore[no-untyped-def]
    ws = app.ws
    node = generated(app, tree)
    lid = node.local_id
    assert run(app, tree, f"→ split {lid} at:0").text == (
        f"✗ LIMIT_EXCEEDED: at:0 is outside [{lid}] (1 to {len(TEXT) - 1})\n"
        "  hint: give a character offset inside the node's text")
    assert run(app, tree, f"→ split {lid} at:{len(TEXT)}").code == "LIMIT_EXCEEDED"
    assert run(app, tree, "→ split root at:3").text.startswith(
        "✗ INVALID_SYNTAX: the root cannot be split")
    reader = ws.ensure_participant("reader", "model", "collaborator", (perms.LOOM_AWARE,), True)
    denied = run(app, tree, f"→ split {lid} at:4", reader)
    assert denied.text.startswith("✗ PERMISSION_DENIED: loom_write not enabled")
    # another participant generating on this branch: a retryable conflict, nothing written
    other = ws.ensure_participant("other", "model", "collaborator", perms.ROLES["human"], True)
    ws.acquire_turn(node, other)
    before = Node.select().count()
    assert run(app, tree, f"→ split {lid} at:4").code == "CONFLICT"
    assert Node.select().count() == before and not ws.node(node.id).pruned


def test_a_human_version_keeps_the_tokens_of_the_untouched_characters(app, tree) -> None:  # type: ignore[no-untyped-def]
    ws = app.ws
    node = generated(app, tree)
    res = run(app, tree, f'→ edit {node.local_id} " The old cat sat on the mat."')
    version = ws.node(res.data["node"])
    toks = token_store.tokens(ws, version)
    assert [t.text for t in toks] == [" The", " cat", " sat", " on", " the", " mat", "."]
    assert all(version.content[t.start:t.end] == t.text for t in toks)
    assert toks[1].start == len(" The old")
    # splitting the version keeps them too, and the halves stay in the version's place
    res = run(app, tree, f"→ split {version.label} at:12")
    assert res.ok, res.text
    head = ws.node(res.data["head"])
    assert head.version_of == node.id and head.label.startswith(node.local_id + "'")
    assert [t.text for t in token_store.tokens(ws, head)] == [" The", " cat"]


def test_an_alternative_weighed_in_a_persons_version_is_the_models(app, tree) -> None:  # type: ignore[no-untyped-def]
    """A person's version of model text keeps the model's tokens and alternatives; an
    alternative taken there is still the model's text, written as the model that weighed
    it (not as the person, who never wrote it), with the model's generation record."""
    ws = app.ws
    node = generated(app, tree)
    res = run(app, tree, f'→ edit {node.local_id} " The old cat sat on the mat."')
    version = ws.node(res.data["node"])
    assert version.author_type == "human"
    res = run(app, tree, f'→ split {version.label} at:{len(" The old cat")} alt:" lay"')
    assert res.ok, res.text
    alt = ws.node(res.data["alternative"])
    assert (alt.author_id, alt.author_type) == (node.author_id, "model")
    gen = Generation.get(Generation.node == alt.id)
    assert gen.model == "fake-base" and gen.params["alternative_of"] == version.id


def test_token_data_travels_through_open_loom(app, tree, tmp_path) -> None:  # type: ignore[no-untyped-def]
    from loom.app import open_app
    from loom.interchange import import_data
    from loom.interchange.openloom import export_openloom

    generated(app, tree)
    data = export_openloom(app.ws, tree)
    other = open_app(tmp_path / "other.db", use_default_subject=False)
    (copy,) = import_data(other.ws, json.loads(json.dumps(data)))
    twin = next(n for n in Node.select().where(Node.tree == copy.id) if n.content == TEXT)
    got = token_store.tokens(other.ws, twin)
    assert [t.text for t in got] == PIECES and got[2].alternatives[1][0] == " lay"


def test_a_cut_nobody_built_on_moves_and_the_head_grows(app, tree) -> None:  # type: ignore[no-untyped-def]
    """A suggestion taken word by word: ``grow`` moves the cut between the halves
    of a fresh split into the tail; the same two nodes, their labels, hashes chained, the
    tokens re-cut from the original's, and summaries following the text."""
    node = generated(app, tree)
    first = run(app, tree, syntax.Split(node=node.id, at=len(" The")))
    head, tail = app.ws.node(first.data["head"]), app.ws.node(first.data["tail"])
    grown = run(app, tree, syntax.Split(node=tail.id, at=len(" cat sat"), grow=True))
    assert grown.ok, grown.text
    assert (grown.data["head"], grown.data["tail"], grown.data["created"]) == (
        head.id, tail.id, [])
    head2, tail2 = app.ws.node(head.id), app.ws.node(tail.id)
    assert (head2.content, tail2.content) == (" The cat sat", " on the mat.")
    assert (head2.label, tail2.label) == (head.label, tail.label)
    parent = app.ws.node(head2.parent)
    assert head2.content_hash == content_hash(parent.content_hash, head2.content)
    assert tail2.content_hash == content_hash(head2.content_hash, tail2.content)
    assert [t.text for t in token_store.tokens(app.ws, head2)] == [" The", " cat", " sat"]
    assert [t.text for t in token_store.tokens(app.ws, tail2)] == [" on", " the", " mat", "."]
    assert "cat sat" in (head2.summary or "")
    assert Node.select().where(Node.tree == tree.id, Node.pruned == False).count() == 4  # noqa: E712


@pytest.mark.parametrize("since", ["annotated", "continued", "bookmarked", "other-position"])
def test_a_cut_built_on_does_not_move(app, tree, since: str) -> None:  # type: ignore[no-untyped-def]
    node = generated(app, tree)
    first = run(app, tree, syntax.Split(node=node.id, at=len(" The")))
    head, tail = app.ws.node(first.data["head"]), app.ws.node(first.data["tail"])
    if since == "annotated":
        assert run(app, tree, f'→ annotate {head.label} "a note"').ok
    elif since == "continued":
        assert run(app, tree, f'→ respond {tail.label} "More."').ok
    elif since == "bookmarked":
        assert run(app, tree, f"→ bookmark {head.label}").ok
    else:
        other = app.ws.human("ada")
        app.ws.set_position(other, tree, head, head)
    grown = run(app, tree, syntax.Split(node=tail.id, at=len(" cat"), grow=True))
    assert not grown.ok and grown.code == "CONFLICT", grown.text
    assert app.ws.node(head.id).content == " The"
    assert app.ws.node(tail.id).content == " cat sat on the mat."
