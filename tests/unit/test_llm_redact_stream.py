"""Streamed redaction (a key split across chunks never reaches the caller) and the provider
door that applies redaction to every request and reply."""

from __future__ import annotations

import asyncio
import random
from typing import Any

import pytest

from loom.llm.base import ChatMessage, Completion, GenerationResult, ModelError
from loom.llm.redact_stream import StreamRedactor
from loom.llm.redacting import RedactingProvider, redacting, scrub_raw
from loom.model.sampling import Sampling
from loom.redact import PLACEHOLDER, forget_secrets, redact, register_secret
from tests.redaction_samples import SAMPLES


@pytest.fixture(autouse=True)
def _clean_registry():
    forget_secrets()
    yield
    forget_secrets()


def stream(pieces: list[str]) -> tuple[list[str], str]:
    """Feed ``pieces``; the released deltas and their join."""
    r = StreamRedactor()
    out = [r.feed(p) for p in pieces]
    out.append(r.flush())
    released = [o for o in out if o]
    assert "".join(released) == r.text
    return released, r.text


def random_pieces(text: str, seed: int) -> list[str]:
    rng = random.Random(seed)
    pieces, at = [], 0
    while at < len(text):
        step = rng.randint(1, 6)
        pieces.append(text[at:at + step])
        at += step
    return pieces


@pytest.mark.parametrize("sample", SAMPLES, ids=lambda s: s.pattern)
def test_a_secret_split_anywhere_never_leaks(sample):
    text = f"Here it is: {sample.text} — that was all.\n"
    expected = redact(text, final=True)
    assert sample.secret not in expected
    start = text.index(sample.secret)
    # Every split point in and around the secret (where a split matters)…
    for cut in range(max(1, start - 3), min(len(text), start + len(sample.secret) + 3)):
        _, joined = stream([text[:cut], text[cut:]])
        assert joined == expected, cut
    # …and token-sized pieces, as a model streams them.
    for seed in range(3):
        released, joined = stream(random_pieces(text, seed))
        assert joined == expected
        assert all(sample.secret not in piece for piece in released)


def test_every_shape_in_one_long_stream_matches_whole_text_redaction():
    text = "".join(f"Line {i}: as the notes say, {s.text} then more prose.\n"
                   for i, s in enumerate(SAMPLES))
    expected = redact(text, final=True)
    for seed in range(10):
        _, joined = stream(random_pieces(text, seed))
        assert joined == expected, seed
    for s in SAMPLES:
        assert s.secret not in expected


def test_prose_streams_with_one_word_held_back():
    r = StreamRedactor()
    assert r.feed("Hello wor") == "Hello "
    assert r.feed("ld, how") == "world, "
    assert r.feed(" are") == "how "
    assert r.flush() == "are"
    assert r.text == r.received == "Hello world, how are"


def test_a_header_waits_for_its_value():
    r = StreamRedactor()
    released = [r.feed(p) for p in ["Sent with Authorization:", " Bearer", " abc123",
                                      "def456ghi", " and", " more words follow here"]]
    released.append(r.flush())
    assert "abc123" not in "".join(released[:-1]) + released[-1]
    assert r.text == "Sent with Authorization: Bearer [REDACTED] and more words follow here"
    assert released[0] == "Sent with "  # what cannot be part of the header goes at once


def test_a_private_key_block_is_held_until_it_closes():
    sample = next(s for s in SAMPLES if s.pattern == "private_key_block")
    lines = sample.text.split("\n")
    r = StreamRedactor()
    shown = r.feed("Key below:\n")
    for line in lines:
        shown += r.feed(line + "\n")
        assert "PRIVATE KEY" not in shown or shown.endswith(f"{PLACEHOLDER}\n")
    shown += r.feed("After the key.") + r.flush()
    assert shown == f"Key below:\n{PLACEHOLDER}\nAfter the key."


def test_a_stream_cut_off_mid_key_hides_the_part_that_came():
    key = next(s.secret for s in SAMPLES if s.pattern == "anthropic_api_key")
    _, joined = stream(["The key is ", key[:10], key[10:16]])
    assert joined == f"The key is {PLACEHOLDER}"


def test_a_registered_key_split_across_chunks():
    register_secret("plain-looking-value-42")
    _, joined = stream(["use plain-look", "ing-val", "ue-42 now"])
    assert joined == f"use {PLACEHOLDER} now"


# -- the provider door -------------------------------------------------------------------

KEY = next(s.secret for s in SAMPLES if s.pattern == "openai_project_key")
ECHO = f"Your header was Authorization: Bearer {KEY} thanks"


def split_key_pieces(text: str = ECHO) -> list[str]:
    at = text.index(KEY)
    return [text[:at], KEY[:9], KEY[9:40], KEY[40:], text[at + len(KEY):]]


class Scripted:
    """A provider that streams ``pieces`` to every call and records what it was sent."""

    name = "scripted"

    def __init__(self, pieces: list[str], fail: ModelError | None = None) -> None:
        self.pieces = pieces
        self.fail = fail
        self.sent: list[Any] = []
        self.profile = "the inner profile"
        self.closed = False

    async def aclose(self) -> None:
        self.closed = True

    def _result(self, n: int) -> GenerationResult:
        text = "".join(self.pieces)
        lp = [{"token": p, "logprob": -0.5, "top_logprobs": [{"token": p, "logprob": -0.5}]}
              for p in self.pieces]
        raw = [{"choices": [{"index": i, "text": p, "logprobs": {"tokens": [p]}}]}
               for p in self.pieces for i in range(n)]
        return GenerationResult(
            completions=[Completion(index=i, text=text, logprobs=lp) for i in range(n)],
            model="m", provider=self.name, latency_ms=1.0, raw=raw)

    async def complete(self, prompt: str, sampling: Sampling | None = None, *,
                       on_delta: Any = None, **_: Any) -> GenerationResult:
        sampling = sampling or Sampling()
        n = sampling.count
        self.sent.append({"prompt": prompt, "stop": sampling.stop})
        for piece in self.pieces:
            for i in range(n):
                if on_delta is not None:
                    on_delta(i, piece)
        if self.fail is not None:
            raise self.fail
        return self._result(n)

    async def chat(self, messages: list[ChatMessage], sampling: Sampling | None = None, *,
                   on_delta: Any = None, **_: Any) -> GenerationResult:
        self.sent.append({"messages": messages, "stop": (sampling or Sampling()).stop})
        for piece in self.pieces:
            if on_delta is not None:
                on_delta(piece)
        if self.fail is not None:
            raise self.fail
        return self._result(1)


def test_complete_redacts_the_prompt_the_deltas_the_text_logprobs_and_raw():
    inner = Scripted(split_key_pieces())
    provider = redacting(inner)
    deltas: list[tuple[int, str]] = []
    result = asyncio.run(provider.complete(f"my key {KEY} ok", Sampling(n=2, stop=[KEY]),
                                           on_delta=lambda i, p: deltas.append((i, p))))
    assert inner.sent == [{"prompt": f"my key {PLACEHOLDER} ok", "stop": [PLACEHOLDER]}]
    expected = f"Your header was Authorization: Bearer {PLACEHOLDER} thanks"
    for i in (0, 1):
        assert "".join(p for j, p in deltas if j == i) == expected
        assert result.completions[i].text == expected
        tokens = [e["token"] for e in result.completions[i].logprobs]
        assert "".join(tokens) == expected
        touched = [e for e in result.completions[i].logprobs if not e["top_logprobs"]]
        assert len(touched) == 3  # the three tokens that spelled the key
    flat = repr(result.model_dump())
    for fragment in (KEY, KEY[9:40], KEY[40:]):
        assert fragment not in flat
    # The raw chunks keep their shape; those that held part of the key lose their logprobs.
    texts = [c["choices"][0]["text"] for c in result.raw if c["choices"][0]["index"] == 0]
    assert "".join(texts) == expected
    assert [c["choices"][0]["logprobs"] is None for c in result.raw[::2]] == \
        [False, True, True, True, False]


def test_chat_redacts_every_message_and_the_reply():
    inner = Scripted(split_key_pieces())
    seen: list[str] = []
    result = asyncio.run(redacting(inner).chat(
        [ChatMessage(role="system", content=f"key={KEY}"),
         ChatMessage(role="user", content="Hello, plain text.")], on_delta=seen.append))
    sent = inner.sent[0]["messages"]
    assert [m.content for m in sent] == [f"key={PLACEHOLDER}", "Hello, plain text."]
    assert "".join(seen) == result.completions[0].text == redact(ECHO)


def test_without_on_delta_the_whole_text_is_redacted():
    inner = Scripted(split_key_pieces())
    result = asyncio.run(redacting(inner).complete("x"))
    assert result.completions[0].text == redact(ECHO)


def test_a_failed_stream_still_shows_what_came_redacted_but_a_cancel_shows_nothing_more():
    failure = ModelError("server", "cut", retryable=True)
    failure.partial = True
    shown: list[str] = []
    with pytest.raises(ModelError):
        asyncio.run(redacting(Scripted(split_key_pieces(), failure)).chat(
            [ChatMessage(role="user", content="hi")], on_delta=shown.append))
    assert "".join(shown) == redact(ECHO)
    shown.clear()
    with pytest.raises(ModelError):
        asyncio.run(redacting(Scripted(["a few words", " more"], ModelError(
            "cancelled", "cancelled"))).chat([ChatMessage(role="user", content="hi")],
                                             on_delta=shown.append))
    assert "".join(shown) == "a few words "  # "more" was held, and a cancel ends it


def test_the_door_is_transparent_otherwise_and_wraps_once():
    inner = Scripted(["ok"])
    provider = redacting(inner)
    assert isinstance(provider, RedactingProvider)
    assert redacting(provider) is provider
    assert provider.name == "scripted" and provider.profile == "the inner profile"
    asyncio.run(provider.aclose())
    assert inner.closed


def test_scrub_raw_groups_pieces_by_choice_and_leaves_clean_raw_alone():
    half = len(KEY) // 2
    raw = [
        {"choices": [{"index": 0, "text": "a " + KEY[:half]}]},
        {"choices": [{"index": 1, "text": "unrelated "}]},
        {"choices": [{"index": 0, "text": KEY[half:] + " b"}]},
        {"type": "content_block_delta", "delta": {"type": "text_delta", "text": "plain"}},
    ]
    out = scrub_raw(raw)
    assert out[0]["choices"][0]["text"] == f"a {PLACEHOLDER}"
    assert out[2]["choices"][0]["text"] == " b"
    assert out[1]["choices"][0]["text"] == "unrelated "
    clean = [{"choices": [{"index": 0, "text": "nothing here"}]}]
    assert scrub_raw(clean) is clean


def test_scrub_raw_checks_every_other_string_too():
    raw = [
        {"error": {"message": f"bad key {KEY}"}},
        {"choices": [{"index": 0, "text": "ok", "logprobs": {"tokens": [KEY],
                                                             "text": KEY}}]},
        {KEY: "a key used as a key"},
    ]
    out = scrub_raw(raw)
    assert KEY not in repr(out)
    assert out[0] == {"error": {"message": f"bad key {PLACEHOLDER}"}}
    assert out[1]["choices"][0]["text"] == "ok"
