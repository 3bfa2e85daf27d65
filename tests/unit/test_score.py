"""``→ score``: a model's probabilities of existing text (a writer's words, imported or
edited text) through the executor, stored as model text's are, read back by the editor's
store functions; model text keeps its generation's; a version is new text; the permission
it needs, for each role; a split of scored text branches with the model's own choice."""

from __future__ import annotations

import math
import re
from types import SimpleNamespace
from typing import Any

import pytest

from loom.commands import syntax
from loom.commands.canonical import to_text
from loom.commands.context import Actor
from loom.commands.grammar import parse
from loom.model import permissions as perms
from loom.model import tokens as T
from loom.store import node_tokens as token_store
from loom.store.schema import Change, NodeTokens

WORD = re.compile(r"\s*\S+|\s+")
SCORER = "fake (scorer-1)"


def scored_tokens(text: str) -> list[T.Token]:
    """Words as tokens; "fjord" is surprising, everything else likely, and the model's
    own choice at each place is "the"."""
    out, pos = [], 0
    for m in WORD.finditer(text):
        word = m.group()
        lp = math.log(0.0005) if "fjord" in word else math.log(0.6)
        out.append(T.Token(pos, word, lp, ((" the", math.log(0.3)), (word, lp))))
        pos += len(word)
    return out


class Scoring:
    """A subject model that continues with fixed text and scores any text by words."""

    def __init__(self) -> None:
        self.requests: list[Any] = []

    def generate(self, request, on_delta=None):  # type: ignore[no-untyped-def]
        text = " The tide came in."
        entries = [{"token": t.text, "logprob": t.logprob, "top_logprobs": []}
                   for t in scored_tokens(text)]
        comps = [SimpleNamespace(index=i, text=text, finish_reason="stop", usage=None,
                                 logprobs=entries) for i in range(request.n)]
        return SimpleNamespace(completions=comps, model="fake-base", provider="local",
                               params={"n": request.n, "logprobs": 5}, usage={},
                               latency_ms=1.0, raw=[])

    def score(self, request):  # type: ignore[no-untyped-def]
        self.requests.append(request)
        return SimpleNamespace(tokens=[scored_tokens(text) for text, wanted in request.pieces
                                       if wanted], scorer=SCORER, k=5)


@pytest.fixture
def scorer(app) -> Scoring:  # type: ignore[no-untyped-def]
    app.executor.subject = Scoring()
    return app.executor.subject  # type: ignore[no-any-return]


@pytest.fixture
def tree(app, scorer):  # type: ignore[no-untyped-def]
    tree = app.ws.create_tree("Harbour", root_content="The harbour was quiet.",
                              system_context="A story.")
    return tree


def run(app, tree, line: str | syntax.Command, who=None):  # type: ignore[no-untyped-def]
    return app.executor.execute(line, Actor(who or app.ws.human(), tree))


def write(app, tree, text: str, after: str = "root"):  # type: ignore[no-untyped-def]
    res = run(app, tree, f'→ respond {after} "{text}"')
    assert res.ok, res.text
    return app.ws.node(res.data["node"])


def test_a_writers_paragraph_is_scored_stored_and_read_back_like_model_text(
        app, tree, scorer) -> None:  # type: ignore[no-untyped-def]
    node = write(app, tree, " Gulls wheeled over the fjord.")
    assert token_store.tokens(app.ws, node) is None  # human text: nothing yet
    res = run(app, tree, f"→ score {node.label}")
    assert res.ok, res.text
    assert res.text.splitlines() == [
        f"✓ scored [{node.label}] with {SCORER}: 5 tokens, 15% a token on average",
        f'  least likely: "fjord." in [{node.label}] 1 in 2,000']
    (request,) = scorer.requests
    # the prompt a continuation of its parent would have: the system context first
    assert request.prefix == "A story.\n\nThe harbour was quiet."
    assert request.pieces == [(" Gulls wheeled over the fjord.", True)]
    toks = token_store.tokens(app.ws, node)
    assert "".join(t.text for t in toks) == node.content
    assert toks[-1].text == " fjord." and toks[-1].alternatives[0][0] == " the"
    assert toks[-1].alternatives[0][1] == pytest.approx(math.log(0.3), abs=1e-3)
    row = NodeTokens.get_by_id(node.id)
    assert (row.scorer, row.k, row.count) == (SCORER, 5, 5)
    assert token_store.runs(app.ws, [node.id])[node.id]  # the editor colours it
    # the other processes hear of it: a change that names the node
    change = Change.select().where(Change.kind == "node.tokens").get()
    assert (change.entity, change.payload) == (node.id, {"scorer": SCORER})
    # the trace keeps the canonical command
    assert res.command == f"→ score {node.label}"


def test_a_branch_scores_the_writers_text_and_model_text_keeps_its_own(
        app, tree, scorer) -> None:  # type: ignore[no-untyped-def]
    first = write(app, tree, " Gulls wheeled.")
    made = run(app, tree, "→ continue")
    assert made.ok, made.text
    model = app.ws.node(made.data["created"][0])
    before = token_store.tokens(app.ws, model)
    last = write(app, tree, " A fjord.", after=model.label)
    res = run(app, tree, f"→ score branch:{first.label}")
    assert res.ok, res.text
    assert f"[{model.label}] keeps its generation's probabilities" in res.text
    assert res.data["scored"] == [app.ws.node(tree.root).id, first.id, last.id]
    (request,) = scorer.requests
    assert request.prefix == "A story.\n\n"  # from the root on
    assert request.pieces == [("The harbour was quiet.", True), (" Gulls wheeled.", True),
                              (" The tide came in.", False), (" A fjord.", True)]
    assert token_store.tokens(app.ws, model) == before  # untouched
    assert token_store.scorer_of(app.ws, model.id) is None
    assert token_store.scorer_of(app.ws, last.id) == SCORER
    # again, as the editors' toggle asks: what is scored already is left alone
    again = run(app, tree, syntax.Score(branch=first.label, unscored=True))
    assert again.ok and again.data["scored"] == [], again.text
    assert len(scorer.requests) == 1


def test_model_text_without_probabilities_is_scored(app, tree, scorer) -> None:  # type: ignore[no-untyped-def]
    """Imported or Anthropic-written text has no token data: scoring gives it some."""
    node = app.ws.add_node(tree, app.ws.node(tree.root), " Written by a model.",
                           app.ws.subject())
    res = run(app, tree, f"→ score {node.label}")
    assert res.ok and res.data["scored"] == [node.id], res.text
    assert token_store.scorer_of(app.ws, node.id) == SCORER


def test_a_version_is_new_text_and_the_original_keeps_its_scores(
        app, tree, scorer) -> None:  # type: ignore[no-untyped-def]
    node = write(app, tree, " Gulls wheeled over the fjord.")
    assert run(app, tree, f"→ score {node.label}").ok
    res = run(app, tree, f'→ edit {node.label} " Gulls circled over the fjord."')
    assert res.ok, res.text
    version = app.ws.node(res.data["node"])
    assert token_store.tokens(app.ws, version) is None  # its words are new text
    assert token_store.scorer_of(app.ws, node.id) == SCORER
    assert "".join(t.text for t in token_store.tokens(app.ws, node)) == node.content
    # scoring the original by its id scores the version in its place on the path
    assert run(app, tree, f"→ score {node.label}").data["scored"] == [version.id]
    toks = token_store.tokens(app.ws, version)
    assert "".join(t.text for t in toks) == version.content
    # a version of model text still carries its generation's tokens (nothing changed)
    made = app.ws.node(run(app, tree, "→ continue").data["created"][0])
    edited = app.ws.node(run(app, tree, f'→ edit {made.label} " The tide went out."')
                         .data["node"])
    assert [t.text for t in token_store.tokens(app.ws, edited)] == [" The", " tide"]


@pytest.mark.parametrize(("role", "missing"), [
    ("human", None), ("research collaborator", None), ("analysis assistant", "loom_generate"),
    ("subject model", "loom_aware")])
def test_scoring_needs_loom_generate_whatever_the_role(
        app, tree, role: str, missing: str | None) -> None:  # type: ignore[no-untyped-def]
    node = write(app, tree, " Gulls wheeled.")
    who = app.ws.ensure_participant(f"p-{role}", "model", role, perms.ROLES[role], True)
    res = run(app, tree, f"→ score {node.label}", who=who)
    assert res.ok is (missing is None), res.text
    if missing is not None:
        assert res.text.startswith(f"✗ PERMISSION_DENIED: {missing} not enabled")
        assert token_store.tokens(app.ws, node) is None


def test_write_without_generate_cannot_score(app, tree) -> None:  # type: ignore[no-untyped-def]
    """Scoring writes only token data, but it asks a model: loom_write is not enough."""
    node = write(app, tree, " Gulls wheeled.")
    who = app.ws.ensure_participant("writer", "model", "collaborator",
                                    (perms.LOOM_AWARE, perms.LOOM_WRITE), True)
    res = run(app, tree, f"→ score branch:{node.label}", who=who)
    assert res.code == "PERMISSION_DENIED"
    assert "ask the human to score the text" in res.text


def test_what_cannot_be_scored_says_why_and_writes_nothing(app, tree) -> None:  # type: ignore[no-untyped-def]
    node = write(app, tree, " Gulls wheeled.")
    app.executor.subject = SimpleNamespace(generate=lambda *a, **k: None)  # no score()
    res = run(app, tree, f"→ score {node.label}")
    assert res.text.splitlines() == ["✗ MODEL_ERROR: no model here can score text",
                                     "  hint: set up the local model (loom model setup)"]
    dialogue = app.ws.create_tree("Chat", "dialogue", root_content="Hello.")
    res = run(app, dialogue, "→ score")
    assert res.code == "INVALID_SYNTAX" and "dialogue" in res.message
    assert NodeTokens.select().count() == 0


def test_splitting_scored_text_branches_with_the_models_choice(
        app, tree, scorer) -> None:  # type: ignore[no-untyped-def]
    node = write(app, tree, " Gulls wheeled over the fjord.")
    assert run(app, tree, f"→ score {node.label}").ok
    at = node.content.index(" fjord")
    res = run(app, tree, f'→ split {node.label} at:{at} alt:" the"')
    assert res.ok, res.text
    alt = app.ws.node(res.data["alternative"])
    # the model's choice is the model's text, with its probability
    assert alt.author_type == "model" and alt.author_id == app.ws.subject().id
    (tok,) = token_store.tokens(app.ws, alt)
    assert tok.text == " the" and tok.logprob == pytest.approx(math.log(0.3), abs=1e-3)
    assert token_store.scorer_of(app.ws, alt.id) == SCORER
    # the halves keep the writer's authorship and the scores, still the scorer's
    head, tail = app.ws.node(res.data["head"]), app.ws.node(res.data["tail"])
    assert head.author_type == tail.author_type == "human"
    assert token_store.scorer_of(app.ws, head.id) == token_store.scorer_of(
        app.ws, tail.id) == SCORER
    assert "".join(t.text for t in token_store.tokens(app.ws, tail)) == tail.content


@pytest.mark.parametrize(("line", "cmd"), [
    ("→ score a7x2", syntax.Score(node="a7x2")),
    ("→ score", syntax.Score()),
    ("→ score branch:a7x2", syntax.Score(branch="a7x2")),
    ("→ score path:a7x2 model:local", syntax.Score(branch="a7x2", model="local")),
    ("→ perplexity of a7x2", syntax.Score(node="a7x2")),
])
def test_score_parses_and_reads_back(line: str, cmd: syntax.Score) -> None:
    assert parse(line) == cmd
    assert parse(to_text(cmd)) == cmd


def test_score_refuses_a_node_and_a_branch_at_once() -> None:
    got = parse("→ score a7x2 branch:b3k9")
    assert isinstance(got, syntax.ParseError)
    assert got.message == "score takes a node or a branch, not both"


def test_surprises_are_runs_of_unlikely_tokens_least_likely_first() -> None:
    lp = math.log
    toks = [T.Token(0, "a", lp(0.5)), T.Token(1, "b", lp(0.001)), T.Token(2, "c", lp(0.005)),
            T.Token(3, "d", lp(0.9)), T.Token(4, "e", lp(0.0001)), T.Token(5, "f", None),
            T.Token(6, "g", lp(0.002))]
    found = T.surprises(toks, below=0.01)
    assert [(s.start, s.end) for s in found] == [(1, 3), (4, 5), (6, 7)]
    assert found[0].first.text == "b" and math.isclose(found[0].probability, 0.000005)
    assert T.surprises(toks, below=0.01, limit=1) == found[:1]
    assert [(x.start, x.end) for x in T.surprises(toks)] == [(4, 5)]  # under 1 in 1,000
    assert T.model_choice(T.Token(0, "x", lp(0.001), (("y", lp(0.4)), ("x", lp(0.001))))
                          ) == ("y", lp(0.4))
    assert T.model_choice(T.Token(0, "x", lp(0.9), (("x", lp(0.9)),))) is None
    assert math.isclose(T.mean_probability(toks[:2]), math.sqrt(0.5 * 0.001))


def test_a_mark_is_under_whole_words() -> None:
    from loom.render.text import odds, whole_words

    text = "Gulls wheeled over the fjord."
    at = text.index("ulls")
    assert text[slice(*whole_words(text, at, at + 4))] == "Gulls"
    at = text.index(" f")
    assert text[slice(*whole_words(text, at, at + 2))] == "fjord"
    assert whole_words(text, 5, 6) == (6, 6)  # only a space: nothing to mark
    assert [odds(p) for p in (0.5, 0.0123, 0.00049, 1 / 39e9)] == [
        "50%", "1.23%", "1 in 2,000", "1 in 39,000,000,000"]
