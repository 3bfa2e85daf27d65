"""``→ fill`` through the executor and the real SDKs against a local wire-format server,
every strategy: llama.cpp's ``/infill`` (and what a server without it, or a model without
FIM tokens, falls back to), the completions endpoint's ``suffix``, a chat model told what
comes before and after (OpenAI chat, Anthropic), and the ``prefix`` fallback. The versions
are the node's, their continuations shared, each with the span it replaced."""

from __future__ import annotations

import json

import pytest

from loom.store import node_tokens as token_store
from loom.store.schema import Generation, Node
from tests.e2e import test_models_wire as models_wire
from tests.e2e import test_providers_wire as wire
from tests.e2e.fake_provider import (
    ANTHROPIC_MESSAGES,
    LLAMA_INFILL,
    OPENAI_CHAT,
    OPENAI_COMPLETIONS,
    anthropic_stream,
    error_reply,
    json_reply,
    llama_infill_stream,
    openai_chat_choices_stream,
    openai_completion_stream,
)

_key = models_wire._key  # the wire tests' key fixture, by name
profile = models_wire.profile
ProviderSubject = models_wire.ProviderSubject

TEXT = "The keeper climbed the narrow stairs every night."
SPAN = "climbed the narrow stairs"


@pytest.fixture
def story(app):  # type: ignore[no-untyped-def]
    """A buffer tree: the root, then a node whose middle is filled, then one below it."""
    tree = app.ws.create_tree("Fill", "buffer", root_content="At the end of the pier. ")
    root = app.ws.node(tree.root)
    me = app.me()
    middle = app.ws.add_node(tree, root, TEXT, me)
    below = app.ws.add_node(tree, middle, " The lamp burned till dawn.", me)
    app.ws.set_position(me, tree, below, below)
    return tree, middle, below


def versions(node: Node) -> list[Node]:
    return list(Node.select().where(Node.version_of == node.id).order_by(Node.version_number))


def gen(node: Node) -> Generation:
    return Generation.get(Generation.node == node.id)


def test_infill_asks_llama_cpp_s_endpoint_and_makes_versions(app, fake, story):
    tree, middle, below = story
    app.executor.subject = ProviderSubject(profile(fake))  # openai-compatible: infill
    said = {5: "walked up the winding steps", 6: "ran down the old ladder"}
    fake.set_default(LLAMA_INFILL, lambda r: llama_infill_stream(said[r.json["seed"]]))
    result = app.executor.execute(f'→ fill {middle.label} "{SPAN}" n:2 temperature:0.7 '
                                  "top_k:20 seed:5", app.actor(tree))
    assert result.ok, result.text
    sent = [r.json for r in fake.requests_to(LLAMA_INFILL)]
    assert len(sent) == 2 and fake.requests_to(OPENAI_COMPLETIONS) == []
    assert sorted(b["seed"] for b in sent) == [5, 6]  # version i is sampled with seed + i
    for body in sent:
        assert body["input_prefix"] == "At the end of the pier. The keeper "
        assert body["input_suffix"] == " every night. The lamp burned till dawn."
        assert body["stream"] is True and body["temperature"] == 0.7 and body["top_k"] == 20
        assert body["n_predict"] == 20 and body["n_probs"] == 5  # the span's default budget
        assert "max_tokens" not in body and "model" not in body
    assert fake.requests_to(LLAMA_INFILL)[0].headers["authorization"] == \
        f"Bearer {wire.FAKE_KEY}"
    made = versions(middle)
    assert [v.content for v in made] == [
        "The keeper walked up the winding steps every night.",
        "The keeper ran down the old ladder every night."]
    assert [v.label for v in made] == [f"{middle.label}'", f"{middle.label}''"]
    first = made[0]
    assert result.text.splitlines() == [
        f'✓ filling 11-36 of [{middle.label}] ("{SPAN}") with 2 versions...',
        f'  [{first.label}] "walked up the winding steps"',
        f'  [{made[1].label}] "ran down the old ladder"',
        "  downstream nodes preserved via hyperedge",
        f"  showing [{first.label}]: → switch to one of the others, or the sibling picker"]
    params = gen(first).params
    assert params["strategy"] == "infill" and params["top_k"] == 20
    assert params["fill"] == {"node": middle.id, "start": 11, "end": 36, "replaced": SPAN,
                              "length": len("walked up the winding steps")}
    assert gen(first).model == "wire-model" and gen(first).completion_index == 0
    # the path shows the first version, and what follows the node stays shared
    path = app.ws.path(below, prefer=(below.id, *app.ws.path_choices(app.me(), tree)))
    assert [n.id for n in path] == [tree.root, first.id, below.id]
    # the span's tokens carry their probabilities, at their place in the version
    tokens = token_store.tokens(app.ws, first)
    assert tokens and tokens[0].start == 11 and "".join(t.text for t in tokens) == \
        "walked up the winding steps"


def test_switching_among_the_versions_swaps_only_the_span(app, fake, story):
    tree, middle, below = story
    app.executor.subject = ProviderSubject(profile(fake))
    said = {1: "walked up", 2: "ran up"}
    fake.set_default(LLAMA_INFILL, lambda r: llama_infill_stream(said[r.json["seed"]]))
    assert app.executor.execute(f"→ fill {middle.label} at:11-36 n:2 seed:1",
                                app.actor(tree)).ok
    _first, second = versions(middle)

    def prose() -> str:
        shown = app.executor.execute(f"→ view branch:{below.label} as:prose", app.actor(tree))
        return shown.text.replace("︱", "").replace("›", "")

    assert "The keeper walked up every night. The lamp burned till dawn." in prose()
    assert app.executor.execute(f"→ switch to {second.label}", app.actor(tree)).ok
    assert "The keeper ran up every night. The lamp burned till dawn." in prose()
    assert app.executor.execute(f"→ switch to {middle.label}", app.actor(tree)).ok
    assert f"{TEXT} The lamp burned till dawn." in prose()  # the original, kept


def test_a_server_without_infill_is_asked_with_suffix(app, fake, story):
    tree, middle, _ = story
    app.executor.subject = ProviderSubject(profile(fake))
    # (the fake answers 404 on /infill, as a server without the endpoint does)
    fake.script(OPENAI_COMPLETIONS, openai_completion_stream(["went up"]))
    result = app.executor.execute(f"→ fill {middle.label} at:11-36", app.actor(tree))
    assert result.ok, result.text
    assert len(fake.requests_to(LLAMA_INFILL)) == 1  # asked once, not retried
    body = fake.requests_to(OPENAI_COMPLETIONS)[0].json
    assert body["prompt"] == "At the end of the pier. The keeper "
    assert body["suffix"] == " every night. The lamp burned till dawn."
    (made,) = versions(middle)
    assert made.content == "The keeper went up every night."
    assert gen(made).params["strategy"] == "suffix"


def test_a_model_without_fim_tokens_falls_back_and_other_failures_do_not(app, fake, story):
    tree, middle, _ = story
    app.executor.subject = ProviderSubject(profile(fake))
    fake.script(LLAMA_INFILL, json_reply({"error": {
        "code": 501, "message": "Infill is not supported by this model: prefix token is "
        "missing.", "type": "not_supported_error"}}, 501))
    fake.script(OPENAI_COMPLETIONS, openai_completion_stream(["went up"]))
    assert app.executor.execute(f"→ fill {middle.label} at:11-36", app.actor(tree)).ok
    assert gen(versions(middle)[0]).params["strategy"] == "suffix"
    fake.script(LLAMA_INFILL, error_reply(400, "prompt is too long"))
    failed = app.executor.execute(f"→ fill {middle.label} at:11-36", app.actor(tree))
    assert failed.text.startswith("✗ MODEL_ERROR: "), failed.text
    assert "prompt is too long" in failed.text and len(versions(middle)) == 1


def test_openai_s_completion_models_take_suffix(app, fake, story):
    tree, middle, _ = story
    app.executor.subject = ProviderSubject(profile(fake, "openai"))
    fake.script(OPENAI_COMPLETIONS, openai_completion_stream(["went up", "ran up"]))
    result = app.executor.execute(f"→ fill {middle.label} at:11-36 n:2", app.actor(tree))
    assert result.ok, result.text
    (body,) = [r.json for r in fake.requests_to(OPENAI_COMPLETIONS)]
    assert body["n"] == 2 and body["suffix"] == " every night. The lamp burned till dawn."
    assert fake.requests_to(LLAMA_INFILL) == []
    assert {v.content for v in versions(middle)} == {"The keeper went up every night.",
                                                     "The keeper ran up every night."}


@pytest.mark.parametrize(("provider", "path"), [("anthropic", ANTHROPIC_MESSAGES),
                                                ("openai-compatible", OPENAI_CHAT)])
def test_a_chat_model_is_told_what_comes_before_and_after(app, fake, story, provider, path):
    tree, middle, _ = story
    overrides = {} if provider == "anthropic" else {"strategy": "instruct"}
    app.executor.subject = ProviderSubject(profile(fake, provider, **overrides))
    reply = "Sure! Here are the missing words:\nwalked up the steps"
    fake.set_default(path, anthropic_stream(reply) if provider == "anthropic"
                     else openai_chat_choices_stream([reply, reply]))
    result = app.executor.execute(f"→ fill {middle.label} at:11-36 n:2", app.actor(tree))
    assert result.ok, result.text
    sent = [r.json for r in fake.requests_to(path)]
    if provider == "anthropic":
        assert len(sent) == 2  # n replies at once, a request each
    else:
        assert len(sent) == 1 and sent[0]["n"] == 2  # one request's n: the prompt read once
    text = json.dumps(sent[0])
    assert "Fill in the blank (___)" in text and "About 4 words." in text
    assert "At the end of the pier. The keeper ___ every night. The lamp burned" in text
    made = versions(middle)
    assert [v.content for v in made] == ["The keeper walked up the steps every night."] * 2
    assert gen(made[0]).params["strategy"] == "instruct"


def test_prefix_continues_the_text_before_the_span(app, fake, story):
    tree, middle, _ = story
    app.executor.subject = ProviderSubject(profile(fake, fill="prefix"))
    fake.script(OPENAI_COMPLETIONS, openai_completion_stream(["went up"]))
    assert app.executor.execute(f"→ fill {middle.label} at:11-36", app.actor(tree)).ok
    body = fake.requests_to(OPENAI_COMPLETIONS)[0].json
    assert body["prompt"] == "At the end of the pier. The keeper" + " "
    assert "suffix" not in body and body["stop"] == ["\n"]  # the span has no line break
    assert gen(versions(middle)[0]).params["strategy"] == "prefix"


def test_fill_is_refused_clearly_and_writes_nothing(app, fake, story):
    tree, middle, _ = story
    app.executor.subject = ProviderSubject(profile(fake))
    for line, said in (
            (f"→ fill {middle.label} at:11-400", "✗ INVALID_SYNTAX: ["),
            (f'→ fill {middle.label} "no such words"', '✗ NOT_FOUND: "no such words" is not'),
            (f'→ fill {middle.label} "e"', "✗ INVALID_SYNTAX: \"e\" occurs more than once"),
            (f"→ fill {middle.label} at:1-2 n:11", "✗ LIMIT_EXCEEDED: max continuations"),
            (f"→ fill {middle.label} at:1-2 mirostat:5", "✗ LIMIT_EXCEEDED: mirostat")):
        result = app.executor.execute(line, app.actor(tree))
        assert result.text.startswith(said), (line, result.text)
    dialogue = app.ws.create_tree("Talk", "dialogue", root_content="Hello there.")
    talk = app.executor.execute("→ fill root at:0-5", app.actor(dialogue))
    assert talk.text.startswith("✗ INVALID_SYNTAX: fill works in buffer trees")
    assert fake.requests == [] and versions(middle) == []


def test_a_seeded_chat_fill_asks_each_reply_on_its_own(app, fake, story):
    """With a seed, reply i is sampled with seed + i, a request each (so each can be made
    again), as continue's are."""
    tree, middle, _ = story
    app.executor.subject = ProviderSubject(profile(fake, strategy="instruct"))
    fake.set_default(OPENAI_CHAT, lambda r: openai_chat_choices_stream(
        [f"went up {r.json['seed']}"]))
    assert app.executor.execute(f"→ fill {middle.label} at:11-36 n:2 seed:7",
                                app.actor(tree)).ok
    sent = [r.json for r in fake.requests_to(OPENAI_CHAT)]
    assert sorted(b["seed"] for b in sent) == [7, 8] and all("n" not in b for b in sent)
