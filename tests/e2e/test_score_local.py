"""``→ score`` with the bundled local model (SmolLM2 through its model service): text the
model wrote, scored afterwards in the same context, gives the log-probabilities it reported
while writing it, to 1e-3 (teacher forcing, llm/scoring/forced.py); a writer's paragraph
is scored token by token and reads back as the editors show it."""

from __future__ import annotations

import math

import pytest

from loom.llm.config import BUILTIN_PROFILES
from loom.llm.scoring import forced
from loom.llm.subject import ProviderSubject
from loom.model import tokens as T
from loom.store import node_tokens as token_store
from tests.local_model import requires_local_model

pytestmark = requires_local_model


@pytest.fixture
def local(app, monkeypatch):  # type: ignore[no-untyped-def]
    for name in ("LOOM_SUBJECT", "LOOM_SUBJECT_PROFILE", "LOOM_BASE_URL"):
        monkeypatch.delenv(name, raising=False)
    app.executor.subject = ProviderSubject(BUILTIN_PROFILES["local"])
    return app


@pytest.mark.parametrize("seed", [11, 23])
def test_the_models_own_text_scores_as_it_reported_writing_it(local, seed) -> None:  # type: ignore[no-untyped-def]
    """Generated unbatched (seeded: the one-slot process, as README promises), then the
    same words written by a human beside it and scored: every token's log-probability and
    its alternatives are the generation's. (Unseeded text comes from the shared process,
    where a request decoded in a batch beside another test's gets that batch's numbers:
    CI saw 0.05-0.09 apart, so no exact promise is made of it.)"""
    ws = local.ws
    tree = ws.create_tree("Keeper", "buffer",
                          root_content="The lighthouse keeper climbed the stairs at dusk, and")
    actor = local.actor(tree)
    asked = f"→ continue tokens:40 seed:{seed}"
    made = local.executor.execute(asked, actor)
    assert made.ok, made.text
    model = ws.node(made.data["created"][0])
    generated = token_store.tokens(ws, model)
    assert generated and "".join(t.text for t in generated) == model.content
    copied = local.executor.execute(f'→ respond {tree.root[:0] or "root"} '
                                    f'"{_escaped(model.content)}"', actor)
    assert copied.ok, copied.text
    human = ws.node(copied.data["node"])
    assert human.content == model.content and human.author_type == "human"
    res = local.executor.execute(f"→ score {human.label}", actor)
    assert res.ok, res.text
    scored = token_store.tokens(ws, human)
    assert [t.text for t in scored] == [t.text for t in generated]
    for got, want in zip(scored, generated, strict=True):
        assert got.logprob == pytest.approx(want.logprob, abs=1e-3), got.text
        assert [a for a, _ in got.alternatives] == [a for a, _ in want.alternatives]
        for (_, a), (_, b) in zip(got.alternatives, want.alternatives, strict=True):
            assert a == pytest.approx(b, abs=1e-3)


def _escaped(text: str) -> str:
    return text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def test_a_writers_paragraph_is_scored_every_token_and_its_least_likely_named(local) -> None:  # type: ignore[no-untyped-def]
    ws = local.ws
    text = ("The harbour was quiet that morning. Gulls wheeled over the fjord, and the "
            "old ferryman whistled a tune nobody remembered — café au lait, 🦜.")
    tree = ws.create_tree("Harbour", "buffer", root_content=text)
    actor = local.actor(tree)
    res = local.executor.execute("→ score branch:root", actor)
    assert res.ok, res.text
    root = ws.node(tree.root)
    tokens = token_store.tokens(ws, root)
    # every character is covered: the accented letters and the parrot (three tokens of
    # bytes, joined into one character) included
    assert "".join(t.text for t in tokens) == text
    assert tokens[0].logprob is None  # nothing before the text predicts its first token
    assert all(t.logprob is not None and t.logprob <= 0 for t in tokens[1:])
    parrot = next(t for t in tokens if "🦜" in t.text)
    assert parrot.text.strip() == "🦜"
    assert res.text.startswith(f"✓ scored [{root.label}] with local (SmolLM2-135M-Instruct): "
                               f"{len(tokens)} tokens, ")
    assert "least likely: " in res.text
    worst = T.surprises(tokens)[0]
    assert math.exp(worst.logprob) < T.SURPRISING


def test_the_window_shifts_half_a_context_at_a_time() -> None:
    limit = 100
    assert [forced._window(p, limit) for p in (1, 100, 101, 149, 150, 151, 200)] == [
        0, 0, 50, 50, 100, 100, 150]
