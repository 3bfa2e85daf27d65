"""``→ fill`` in the core: the grammar and canonical text, the span, the request (the text
before and after it), versions as the node's with their provenance, the lock and the
permission; and the pure parts of ``llm/fill.py`` (a chat model's reply as the span's
text, the strategy per profile, the fallbacks)."""

from __future__ import annotations

import asyncio
import threading
from types import SimpleNamespace
from typing import Any

import pytest

from loom.commands.canonical import to_text
from loom.commands.context import Actor
from loom.commands.grammar import parse
from loom.commands.syntax import Fill, ParseError
from loom.llm.base import GenerationResult, ModelError
from loom.llm.config import ModelProfile
from loom.llm.fill import fill_text, gap_text
from loom.model.sampling import Sampling
from loom.store.schema import Generation, Node


@pytest.mark.parametrize(("line", "expected"), [
    ("→ fill a7x2 at:10-25", Fill(node="a7x2", start=10, end=25)),
    ("→ fill a7x2 10-25 n:3", Fill(node="a7x2", start=10, end=25, n=3)),
    ("→ fill a7x2 span:3-3", Fill(node="a7x2", start=3, end=3)),  # an insertion
    ('→ fill a7x2 "the red door" n:2 temperature:0.5 model:local preset:wild',
     Fill(node="a7x2", span="the red door", n=2, temperature=0.5, models=("local",),
          preset="wild")),
    ("→ infill a7x2 at:1-4 top_k:5", Fill(node="a7x2", start=1, end=4, top_k=5)),
])
def test_fill_parses_and_reads_back(line: str, expected: Fill) -> None:
    assert parse(line) == expected
    assert parse(to_text(expected)) == expected


@pytest.mark.parametrize(("line", "message"), [
    ("→ fill a7x2", "fill needs the span"),
    ("→ fill at:1-2", "fill needs a node"),
    ("→ fill a7x2 at:9-3", "at: the span ends (3) before it starts (9)"),
    ("→ fill a7x2 at:soon", 'at: "soon" is not start-end'),
    ('→ fill a7x2 at:1-3 "words"', "fill takes a span or the text to replace, not both"),
    ("→ fill a7x2 at:1-3 bogus", 'unexpected "bogus" for fill'),
])
def test_bad_fills_are_parse_errors(line: str, message: str) -> None:
    got = parse(line)
    assert isinstance(got, ParseError) and message in got.message, got


class Filling:
    """A subject model that fills with fixed texts, recording what it was asked."""

    def __init__(self, texts: list[str], hold: threading.Event | None = None) -> None:
        self.texts, self.asked, self.hold = texts, [], hold

    def fill(self, request, on_delta=None):  # type: ignore[no-untyped-def]
        self.asked.append(request)
        if self.hold is not None:
            self.hold.wait(5)
        for i in range(request.n):
            if on_delta is not None:
                on_delta(i, self.texts[i % len(self.texts)])
        comps = [SimpleNamespace(index=i, text=self.texts[i % len(self.texts)],
                                 finish_reason="stop", usage=None, logprobs=None)
                 for i in range(request.n)]
        return SimpleNamespace(completions=comps, model="fake-fill", provider="fake",
                               params={"n": request.n, "strategy": "instruct"}, usage={},
                               latency_ms=1.0, raw=[])


@pytest.fixture
def story(app):  # type: ignore[no-untyped-def]
    ws = app.ws
    tree = ws.create_tree("Fill", root_content="Dawn. ")
    me = app.me()
    node = ws.add_node(tree, ws.node(tree.root), "The keeper climbed the stairs slowly.", me)
    below = ws.add_node(tree, node, " Then the lamp.", me)
    ws.set_position(me, tree, below, below)
    return app, tree, node, below


def test_the_request_is_the_text_before_and_after_the_span(story) -> None:  # type: ignore[no-untyped-def]
    app, tree, node, _below = story
    app.executor.subject = subject = Filling([" went up"])
    result = app.executor.execute(f'→ fill {node.label} " climbed the stairs"',
                                  app.actor(tree))
    assert result.ok, result.text
    (asked,) = subject.asked
    assert asked.before == "Dawn. The keeper" and asked.after == " slowly. Then the lamp."
    assert asked.replaced == " climbed the stairs" and asked.sampling.tokens == 18
    (version,) = Node.select().where(Node.version_of == node.id)
    assert version.content == "The keeper went up slowly."
    assert version.author_type == "model" and version.edited_from == node.id
    gen = Generation.get(Generation.node == version.id)
    assert gen.params["fill"] == {"node": node.id, "start": 10, "end": 29,
                                  "replaced": " climbed the stairs", "length": 8}
    assert result.data["middles"] == [" went up"]


def test_a_fill_needs_loom_generate_and_waits_for_no_lock(story) -> None:  # type: ignore[no-untyped-def]
    app, tree, node, below = story
    app.executor.subject = Filling([" went up"])
    ws = app.ws
    reader = ws.ensure_participant("reader", "model", "collaborator",
                                   ("loom_aware", "loom_write"))
    denied = app.executor.execute(f"→ fill {node.label} at:0-3", Actor(reader, tree))
    assert denied.text.startswith("✗ PERMISSION_DENIED: loom_generate not enabled")
    bot = ws.ensure_participant("bot", "model", "collaborator",
                                ("loom_aware", "loom_write", "loom_generate"))
    ws.acquire_turn(below, bot)  # another participant generating below the node
    busy = app.executor.execute(f"→ fill {node.label} at:0-3", app.actor(tree))
    assert busy.text.startswith("✗ CONFLICT"), busy.text
    ws.release_turn(below, bot)
    assert list(Node.select().where(Node.version_of == node.id)) == []


def test_the_node_is_locked_while_the_model_writes(story) -> None:  # type: ignore[no-untyped-def]
    app, tree, node, _below = story
    hold = threading.Event()
    app.executor.subject = Filling([" went up"], hold)
    ws = app.ws
    bot = ws.ensure_participant("bot", "model", "collaborator",
                                ("loom_aware", "loom_write", "loom_generate"))
    done: list[Any] = []
    worker = threading.Thread(target=lambda: done.append(app.executor.execute(
        f"→ fill {node.label} at:0-3", app.actor(tree))))
    worker.start()
    try:
        for _ in range(100):
            if app.executor.subject.asked:
                break
            threading.Event().wait(0.02)
        edit = app.executor.execute(f'→ edit {node.label} "Changed."', Actor(bot, tree))
        assert edit.text.startswith("✗ CONFLICT"), edit.text
    finally:
        hold.set()
        worker.join()
    assert done[0].ok, done[0].text


# -- llm/fill.py -------------------------------------------------------------------


@pytest.mark.parametrize(("reply", "expected"), [
    ("went up", " went up"),
    ("Sure! Here are the missing words:\nwent up", " went up"),
    ('"went up"', " went up"),
    ("The keeper went up slowly. Then the lamp.", " went up"),  # restated both sides
    ("went up\nAnd then more lines", " went up"),
    ("The missing words are: went up", " went up"),
])
def test_a_chat_reply_becomes_the_span_s_text(reply: str, expected: str) -> None:
    assert gap_text("Dawn. The keeper", " slowly. Then the lamp.", reply,
                    " climbed the stairs") == expected


@pytest.mark.parametrize(("fields", "strategy"), [
    ({"provider": "local", "model": "SmolLM2-135M-Instruct"}, "instruct"),
    ({"provider": "local", "model": "/models/qwen2.5-coder.gguf"}, "infill"),
    ({"provider": "openai-compatible", "model": "m", "base_url": "http://x/v1"}, "infill"),
    ({"provider": "openai", "model": "gpt-3.5-turbo-instruct"}, "suffix"),
    ({"provider": "openai", "model": "gpt-4.1", "strategy": "instruct"}, "instruct"),
    ({"provider": "anthropic", "model": "claude"}, "instruct"),
    ({"provider": "openai-compatible", "model": "m", "fill": "prefix"}, "prefix"),
])
def test_the_strategy_per_profile(fields: dict[str, str], strategy: str) -> None:
    assert ModelProfile(name="p", **fields).fill_with == strategy


def test_anthropic_takes_no_completion_fill() -> None:
    with pytest.raises(ValueError, match="fill: Anthropic's API has no completion endpoint"):
        ModelProfile(name="p", provider="anthropic", model="c", fill="suffix")


class Provider:
    """A provider whose fill endpoint refuses as a server without FIM tokens does."""

    def __init__(self, refusal: ModelError | None) -> None:
        self.refusal, self.asked = refusal, []

    async def fill(self, prefix, suffix, sampling=None, *, strategy, on_delta=None,  # type: ignore[no-untyped-def]
                   cancel=None):
        self.asked.append(strategy)
        if strategy == "infill" and self.refusal is not None:
            raise self.refusal
        return _result("went up")

    async def chat(self, messages, sampling=None, *, on_delta=None, cancel=None):  # type: ignore[no-untyped-def]
        self.asked.append("chat")
        return _result("went up")


def _result(text: str) -> GenerationResult:
    from loom.llm.base import Completion

    return GenerationResult(completions=[Completion(index=0, text=text)], model="m",
                            provider="p", latency_ms=1.0)


@pytest.mark.parametrize(("provider", "then"), [("local", ["infill", "chat"]),
                                                ("openai-compatible", ["infill", "suffix"])])
def test_a_model_without_fim_falls_back(provider: str, then: list[str]) -> None:
    refusal = ModelError("bad_request", "local has no infill for m (501): Infill is not "
                         "supported by this model", status=501)
    fake = Provider(refusal)
    profile = ModelProfile(name="p", provider=provider, model="/m.gguf")
    got = asyncio.run(fill_text(fake, profile, "a", "b", "x", Sampling(), None, None))  # type: ignore[arg-type]
    assert fake.asked == then and got.params["strategy"] == then[1].replace("chat",
                                                                            "instruct")
    other = ModelError("bad_request", "prompt is too long", status=400)
    with pytest.raises(ModelError, match="prompt is too long"):
        asyncio.run(fill_text(Provider(other), profile, "a", "b", "x", Sampling(), None,  # type: ignore[arg-type]
                              None))


def test_a_model_participant_fills_and_regenerate_sends_a_version_back_to_fill(story) -> None:  # type: ignore[no-untyped-def]
    """The collaborator fills as it continues (an arrow command, ``loom_generate``); a
    fill's version is no continuation of its parent: → regenerate says what makes more."""
    app, tree, node, _below = story
    app.executor.subject = Filling([" went up"])
    bot = app.ws.ensure_participant("bot", "model", "collaborator",
                                    ("loom_aware", "loom_write", "loom_generate"))
    done = app.executor.execute(f"→ fill {node.label} at:10-29", Actor(bot, tree))
    assert done.ok, done.text
    (version,) = Node.select().where(Node.version_of == node.id)
    again = app.executor.execute(f"→ regenerate {version.label}", app.actor(tree))
    assert again.text == (f"✗ INVALID_SYNTAX: [{version.label}] was made by → fill, not by "
                          f"a continue\n  hint: → fill {node.label} at:10-29 makes new "
                          "versions of the span")


def test_explore_passes_a_preset_on_to_each_continue(app) -> None:  # type: ignore[no-untyped-def]
    """``→ explore preset:wild``: the preset's options, under the ones given, are the
    sampling each of its continues asks with."""
    from loom.commands.context import ExploreRequest, ExploreSummary, PresetChoice

    started: list[ExploreRequest] = []

    class Explorer:
        def start(self, request: ExploreRequest) -> ExploreSummary:
            started.append(request)
            return ExploreSummary(source="r", made=0, scored=0, pruned=0, spent=0,
                                  budget=request.budget, explorer="bot", judge="j")

        def stop(self, tree):  # type: ignore[no-untyped-def]
            return None

    class Subject(Filling):
        def presets(self) -> list[PresetChoice]:
            return [PresetChoice("wild", "temperature 1.3 · top_k 100",
                                 Sampling(temperature=1.3, top_k=100))]

    tree = app.ws.create_tree("Explore", root_content="The keeper climbed.")
    app.executor.subject = Subject([" went up"])
    app.executor.explorer = Explorer()
    done = app.executor.execute("→ explore preset:wild temperature:0.5 depth:1",
                                app.actor(tree))
    assert done.ok, done.text
    assert started[0].sampling == Sampling(temperature=0.5, top_k=100)
    unknown = app.executor.execute("→ explore preset:calm", app.actor(tree))
    assert unknown.text.startswith('✗ INVALID_SYNTAX: no preset named "calm"')
