"""The providers through the real SDKs against a local fake HTTP server (and the real
local model, when installed)."""

from __future__ import annotations

import asyncio
import json
import logging
import re
import time

import pytest

from loom.llm import ChatMessage, GenerationResult, ModelError, ModelProfile, make_provider
from loom.llm import keys as llm_keys
from loom.model.sampling import Sampling
from loom.redact import forget_secrets
from tests.e2e.fake_provider import (
    ANTHROPIC_MESSAGES,
    OPENAI_CHAT,
    OPENAI_COMPLETIONS,
    FakeProvider,
    anthropic_events,
    anthropic_stream,
    delay_reply,
    error_reply,
    malformed_reply,
    openai_chat_stream,
    openai_completion_chunks,
    openai_completion_stream,
    pieces,
    sse_reply,
)
from tests.local_model import requires_local_model

KEY_ENV = "LOOM_WIRE_TEST_KEY"
# Deliberately matches no redaction pattern: only exact-match redaction can catch it.
FAKE_KEY = "loomwire-Distinctive-Key-7f3a9c2e51"


@pytest.fixture(autouse=True)
def _key(monkeypatch):
    monkeypatch.setenv(KEY_ENV, FAKE_KEY)
    monkeypatch.setenv("LOOM_NO_KEYRING", "1")
    forget_secrets()
    llm_keys.clear_cache()
    yield
    forget_secrets()


def profile(fake: FakeProvider, provider: str = "openai-compatible", **overrides) -> ModelProfile:
    base_url = fake.anthropic_base_url if provider == "anthropic" else fake.openai_base_url
    fields = {
        "name": "wire",
        "provider": provider,
        "model": "fake-model",
        "base_url": base_url,
        "api_key_env": KEY_ENV,
        "timeout_s": 5,
        "backoff_base_s": 0.01,
        "backoff_max_s": 0.05,
        **overrides,
    }
    return ModelProfile(**fields)


class Deltas:
    def __init__(self):
        self.items: list[tuple[int, str]] = []

    def __call__(self, index: int, piece: str) -> None:
        self.items.append((index, piece))

    def text(self, index: int) -> str:
        return "".join(p for i, p in self.items if i == index)

    def of(self, index: int) -> list[str]:
        return [p for i, p in self.items if i == index]


def words(text: str) -> list[str]:
    """The pieces a stream releases: the redactor holds each word until the whitespace
    after it arrives (a key split across chunks must never show), then lets it go whole."""
    return re.findall(r"^\s+|\S+\s*", text)


def assert_json_able(result: GenerationResult) -> None:
    json.dumps(result.model_dump())


# -- streaming and n --------------------------------------------------------------------


@pytest.mark.parametrize("provider", ["openai", "openai-compatible"])
async def test_complete_streams_deltas_in_order(fake, provider):
    text = "Once upon a time there was a fox."
    fake.script(OPENAI_COMPLETIONS, openai_completion_stream([text]))
    deltas = Deltas()
    p = make_provider(profile(fake, provider))
    result = await p.complete(
        "Begin:", Sampling(tokens=20, temperature=0.7, stop=["\n"]), on_delta=deltas
    )
    assert deltas.of(0) == words(text)
    assert result.completions[0].text == text == deltas.text(0)
    assert result.completions[0].finish_reason == "length"
    assert (result.provider, result.model) == (provider, "fake-model")
    assert result.params == {
        "n": 1,
        "max_tokens": 20,
        "temperature": 0.7,
        "stop": ["\n"],
        "logprobs": 5,  # the profile's default: 5 alternatives per token
    }
    assert result.usage.prompt_tokens == 5
    assert result.latency_ms > 0
    assert len(result.raw) == len(pieces(text)) + 2
    assert_json_able(result)
    sent = fake.requests_to(OPENAI_COMPLETIONS)[0].json
    assert sent["prompt"] == "Begin:" and sent["stream"] is True and sent["n"] == 1
    assert sent["max_tokens"] == 20 and sent["stop"] == ["\n"]
    assert ("stream_options" in sent) == (provider == "openai")


async def test_profile_defaults_fill_unset_params(fake):
    p = make_provider(profile(fake, max_tokens=33, temperature=0.3, stop=["END"]))
    result = await p.complete("x")
    assert result.params["max_tokens"] == 33 and result.params["temperature"] == 0.3
    sent = fake.requests_to(OPENAI_COMPLETIONS)[0].json
    assert (sent["max_tokens"], sent["temperature"], sent["stop"]) == (33, 0.3, ["END"])


async def test_native_n_demultiplexes_interleaved_choices(fake):
    texts = ["alpha beta gamma", "one two three four", "x"]
    fake.script(OPENAI_COMPLETIONS, openai_completion_stream(texts))
    deltas = Deltas()
    p = make_provider(profile(fake))
    result = await p.complete("go", Sampling(n=3), on_delta=deltas)
    assert len(fake.requests_to(OPENAI_COMPLETIONS)) == 1
    assert fake.requests_to(OPENAI_COMPLETIONS)[0].json["n"] == 3
    assert [c.text for c in result.completions] == texts
    assert [c.index for c in result.completions] == [0, 1, 2]
    for i, t in enumerate(texts):
        assert deltas.text(i) == t
    # Interleaved as they arrived: index 1 streamed before index 0 finished.
    assert deltas.items[:3] == [(0, "alpha "), (1, "one "), (0, "beta ")]


async def test_n_without_native_support_makes_parallel_requests(fake):
    fake.set_default(
        OPENAI_COMPLETIONS, openai_completion_stream(["same text"], event_delay_s=0.05)
    )
    deltas = Deltas()
    p = make_provider(profile(fake, supports_n=False))
    started = time.perf_counter()
    result = await p.complete("go", Sampling(n=3), on_delta=deltas)
    elapsed = time.perf_counter() - started
    sent = fake.requests_to(OPENAI_COMPLETIONS)
    assert len(sent) == 3 and all(r.json["n"] == 1 for r in sent)
    assert [c.text for c in result.completions] == ["same text"] * 3
    assert {i for i, _ in deltas.items} == {0, 1, 2}
    assert elapsed < 3 * 0.05 * 4  # concurrent, not one after another
    assert result.usage.prompt_tokens == 15  # three requests' usage added up


async def test_anthropic_complete_parallel_n(fake):
    deltas = Deltas()
    p = make_provider(profile(fake, "anthropic", strategy="instruct"))
    result = await p.complete("The sea was", Sampling(n=3, tokens=30), on_delta=deltas)
    sent = fake.requests_to(ANTHROPIC_MESSAGES)
    assert len(sent) == 3
    body = sent[0].json
    # the text goes in as a chat does, with the prompt cache's breakpoints
    assert body["system"][0]["text"] == (
        "Continue the text exactly where it stops; output only the continuation."
    )
    assert [(m["role"], m["content"][0]["text"]) for m in body["messages"]] == [
        ("user", "The sea was")]
    assert body["max_tokens"] == 30 and body["stream"] is True
    assert "temperature" not in body
    # the reply joins the text as a base model's would: the space a chat model leaves out
    assert all(c.text == " The quick brown fox jumps over the lazy dog."
               for c in result.completions)
    assert [deltas.text(i) for i in range(3)] == [c.text for c in result.completions]
    assert result.completions[0].finish_reason == "end_turn"
    assert result.completions[0].usage.prompt_tokens == 11
    assert result.usage.completion_tokens == 27
    kinds = [r["type"] for r in result.raw]
    assert kinds[:3] == ["message_start", "content_block_start", "content_block_delta"]
    assert kinds[-3:] == ["content_block_stop", "message_delta", "message_stop"]


async def test_anthropic_chat(fake):
    fake.script(ANTHROPIC_MESSAGES, anthropic_stream("Hello there, writer."))
    seen: list[str] = []
    p = make_provider(profile(fake, "anthropic"))
    result = await p.chat(
        [
            ChatMessage(role="system", content="Be brief."),
            ChatMessage(role="user", content="Hi"),
            ChatMessage(role="assistant", content="Hello"),
            ChatMessage(role="user", content="Again"),
        ],
        Sampling(tokens=64, stop=["\n\n"]),
        on_delta=seen.append,
    )
    assert seen == words("Hello there, writer.")
    assert len(result.completions) == 1
    assert result.completions[0].text == "Hello there, writer."
    body = fake.requests_to(ANTHROPIC_MESSAGES)[0].json
    # prompt caching: breakpoints after the system prompt and at the end
    ephemeral = {"type": "ephemeral"}
    assert body["system"] == [{"type": "text", "text": "Be brief.", "cache_control": ephemeral}]
    assert [m["role"] for m in body["messages"]] == ["user", "assistant", "user"]
    assert body["messages"][0]["content"] == "Hi"
    assert body["messages"][-1]["content"] == [
        {"type": "text", "text": "Again", "cache_control": ephemeral}]
    assert body["stop_sequences"] == ["\n\n"]


async def test_openai_chat(fake):
    fake.script(OPENAI_CHAT, openai_chat_stream("A short reply."))
    seen: list[str] = []
    for provider, limit in (
        ("openai", "max_completion_tokens"),
        ("openai-compatible", "max_tokens"),
    ):
        fake.script(OPENAI_CHAT, openai_chat_stream("A short reply."))
        p = make_provider(profile(fake, provider))
        result = await p.chat(
            [ChatMessage(role="system", content="s"), ChatMessage(role="user", content="u")],
            Sampling(tokens=40),
            on_delta=seen.append,
        )
        assert result.completions[0].text == "A short reply."
        assert result.completions[0].finish_reason == "stop"
        assert result.usage.prompt_tokens == 7
        body = fake.requests_to(OPENAI_CHAT)[-1].json
        assert body[limit] == 40
        assert body["messages"][0] == {"role": "system", "content": "s"}
    assert "".join(seen) == "A short reply." * 2


async def test_logprobs_are_parsed(fake):
    fake.script(OPENAI_COMPLETIONS, openai_completion_stream(["a b"], logprobs=2))
    p = make_provider(profile(fake))
    result = await p.complete("x", Sampling(logprobs=2))
    assert fake.requests_to(OPENAI_COMPLETIONS)[0].json["logprobs"] == 2
    lp = result.completions[0].logprobs
    assert [e["token"] for e in lp] == ["a", " b"]
    assert lp[0]["logprob"] == pytest.approx(-0.25)
    assert lp[0]["top_logprobs"][0] == {"token": "a", "logprob": pytest.approx(-0.25)}
    assert result.params["logprobs"] == 2


async def test_no_logprobs_when_not_returned(fake):
    fake.script(OPENAI_COMPLETIONS, openai_completion_stream(["a b"]))  # asked, not sent
    result = await make_provider(profile(fake)).complete("x")
    assert result.completions[0].logprobs is None


# -- retries ----------------------------------------------------------------------------


@pytest.mark.parametrize("status", [429, 500, 503])
async def test_transient_status_then_success_openai(fake, status, caplog):
    caplog.set_level(logging.WARNING, logger="loom.llm")
    fake.script(OPENAI_COMPLETIONS, error_reply(status), openai_completion_stream(["fine"]))
    result = await make_provider(profile(fake)).complete("x")
    assert result.completions[0].text == "fine"
    assert len(fake.requests_to(OPENAI_COMPLETIONS)) == 2
    assert "retrying" in caplog.text


@pytest.mark.parametrize("status", [429, 500, 529])
async def test_transient_status_then_success_anthropic(fake, status):
    fake.script(
        ANTHROPIC_MESSAGES, error_reply(status, flavor="anthropic"), anthropic_stream("fine")
    )
    result = await make_provider(profile(fake, "anthropic")).chat(
        [ChatMessage(role="user", content="x")]
    )
    assert result.completions[0].text == "fine"
    assert len(fake.requests_to(ANTHROPIC_MESSAGES)) == 2


async def test_anthropic_overloaded_stream_event_is_retried(fake):
    overloaded = (
        "error",
        {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}},
    )
    fake.script(ANTHROPIC_MESSAGES, sse_reply([overloaded], done=False), anthropic_stream("after"))
    result = await make_provider(profile(fake, "anthropic")).complete("x")
    assert result.completions[0].text == " after"  # joined to "x" as a base model would
    assert len(fake.requests_to(ANTHROPIC_MESSAGES)) == 2


@pytest.mark.parametrize("provider", ["openai-compatible", "anthropic"])
async def test_server_error_forever_gives_up(fake, provider):
    flavor = "anthropic" if provider == "anthropic" else "openai"
    path = ANTHROPIC_MESSAGES if provider == "anthropic" else OPENAI_COMPLETIONS
    fake.set_default(path, error_reply(500, "upstream broke", flavor=flavor))
    p = make_provider(profile(fake, provider, max_attempts=4))
    with pytest.raises(ModelError) as info:
        await p.complete("x")
    assert (info.value.kind, info.value.status) == ("server", 500)
    assert "upstream broke" in info.value.message
    assert len(fake.requests_to(path)) == 4


async def test_parallel_requests_retry_independently(fake):
    fake.script(ANTHROPIC_MESSAGES, error_reply(429, flavor="anthropic"))
    result = await make_provider(profile(fake, "anthropic")).complete("x", Sampling(n=2))
    assert len(fake.requests_to(ANTHROPIC_MESSAGES)) == 3
    assert all(c.text for c in result.completions)


# -- failures that are final -------------------------------------------------------------


@pytest.mark.parametrize(
    "reply",
    [
        malformed_reply("<html>502 bad gateway</html>", content_type="text/html"),
        malformed_reply("{not json"),
        sse_reply(["{this is not json"]),
        sse_reply([{"id": "x", "object": "text_completion"}]),  # no choices
        sse_reply([{"choices": [{"index": 7, "text": "?"}]}]),  # index out of range
    ],
    ids=["html", "json-garbage", "sse-garbage", "missing-choices", "bad-index"],
)
async def test_malformed_reply_is_not_retried(fake, reply):
    fake.set_default(OPENAI_COMPLETIONS, reply)
    with pytest.raises(ModelError) as info:
        await make_provider(profile(fake)).complete("x")
    assert (info.value.kind, info.value.retryable) == ("malformed", False)
    assert len(fake.requests_to(OPENAI_COMPLETIONS)) == 1


@pytest.mark.parametrize(
    "reply",
    [
        malformed_reply("not a stream"),
        sse_reply([("content_block_delta", {"type": "content_block_delta"})], done=False),
    ],
    ids=["garbage", "missing-fields"],
)
async def test_anthropic_malformed(fake, reply):
    fake.set_default(ANTHROPIC_MESSAGES, reply)
    with pytest.raises(ModelError) as info:
        await make_provider(profile(fake, "anthropic")).complete("x")
    assert info.value.kind == "malformed"
    assert len(fake.requests_to(ANTHROPIC_MESSAGES)) == 1


async def test_timeout(fake):
    fake.set_default(OPENAI_COMPLETIONS, delay_reply(3.0, openai_completion_stream(["late"])))
    p = make_provider(profile(fake, timeout_s=0.5, max_attempts=2))
    started = time.perf_counter()
    with pytest.raises(ModelError) as info:
        await p.complete("x")
    elapsed = time.perf_counter() - started
    assert info.value.kind == "timeout"
    assert info.value.hint == "raise timeout_s in the model profile or lower tokens"
    assert len(fake.requests_to(OPENAI_COMPLETIONS)) == 2  # timeouts are retried
    assert 0.9 < elapsed < 2.5


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
async def test_auth_error_is_not_retried(fake, provider):
    flavor = "anthropic" if provider == "anthropic" else "openai"
    path = ANTHROPIC_MESSAGES if provider == "anthropic" else OPENAI_COMPLETIONS
    fake.set_default(
        path, error_reply(401, f"Incorrect API key provided: {FAKE_KEY}", flavor=flavor)
    )
    with pytest.raises(ModelError) as info:
        await make_provider(profile(fake, provider)).complete("x")
    assert (info.value.kind, info.value.retryable) == ("auth", False)
    assert info.value.hint == f"set {KEY_ENV} or run `keyring set loom {provider}`"
    assert FAKE_KEY not in info.value.message and FAKE_KEY not in str(info.value)
    assert len(fake.requests_to(path)) == 1


async def test_bad_request_is_final(fake):
    fake.set_default(OPENAI_COMPLETIONS, error_reply(400, "model not found"))
    with pytest.raises(ModelError) as info:
        await make_provider(profile(fake)).complete("x")
    assert info.value.kind == "bad_request" and "model not found" in info.value.message
    assert len(fake.requests_to(OPENAI_COMPLETIONS)) == 1


async def test_stream_cut_after_output_is_not_retried(fake):
    chunks = openai_completion_chunks(["one two three four five"])
    fake.set_default(OPENAI_COMPLETIONS, sse_reply(chunks, drop_after=2))
    deltas = Deltas()
    with pytest.raises(ModelError) as info:
        await make_provider(profile(fake)).complete("x", on_delta=deltas)
    assert info.value.partial and info.value.retryable
    assert deltas.text(0) == "one two"  # what arrived before the cut is still shown
    assert len(fake.requests_to(OPENAI_COMPLETIONS)) == 1


async def test_anthropic_stream_cut_before_output_is_retried(fake):
    head = anthropic_events("x")[:2]  # message_start, content_block_start, then EOF
    fake.script(ANTHROPIC_MESSAGES, sse_reply(head, done=False), anthropic_stream("complete"))
    result = await make_provider(profile(fake, "anthropic")).complete("x")
    assert result.completions[0].text == " complete"  # joined to "x" as a base model would
    assert len(fake.requests_to(ANTHROPIC_MESSAGES)) == 2


async def test_unreachable_server(fake):
    p = make_provider(profile(fake, max_attempts=2))
    fake.stop()
    with pytest.raises(ModelError) as info:
        await p.complete("x")
    assert (info.value.kind, info.value.retryable) == ("unavailable", True)
    assert fake.openai_base_url in info.value.hint


async def test_on_delta_errors_reach_the_caller(fake):
    def broken(_index, _piece):
        raise ZeroDivisionError("caller bug")

    with pytest.raises(ZeroDivisionError):
        await make_provider(profile(fake)).complete("x", on_delta=broken)


# -- cancellation ---------------------------------------------------------------------


@pytest.mark.parametrize("shape", ["openai-complete", "openai-chat", "anthropic"])
async def test_cancel_mid_stream(fake, shape):
    text = "one two three four five six seven eight nine ten"
    slow = {"event_delay_s": 0.05}
    if shape == "openai-complete":
        fake.script(OPENAI_COMPLETIONS, openai_completion_stream([text], **slow))
        provider = "openai-compatible"
    elif shape == "openai-chat":
        fake.script(OPENAI_CHAT, openai_chat_stream(text, **slow))
        provider = "openai-compatible"
    else:
        fake.script(ANTHROPIC_MESSAGES, anthropic_stream(text, **slow))
        provider = "anthropic"
    p = make_provider(profile(fake, provider))
    cancel = asyncio.Event()
    seen: list[str] = []
    at_cancel: list[int] = []

    def on_piece(piece: str) -> None:
        seen.append(piece)
        if len(seen) == 2:
            cancel.set()
            at_cancel.append(len(seen))

    started = time.perf_counter()
    with pytest.raises(ModelError) as info:
        if shape == "openai-chat":
            await p.chat([ChatMessage(role="user", content="x")], on_delta=on_piece, cancel=cancel)
        else:
            await p.complete("x", on_delta=lambda _i, s: on_piece(s), cancel=cancel)
    assert info.value.kind == "cancelled"
    assert time.perf_counter() - started < 0.45  # did not wait for the whole stream
    assert len(seen) == at_cancel[0] == 2  # nothing delivered after cancel


async def test_cancel_parallel_requests(fake):
    fake.set_default(ANTHROPIC_MESSAGES, anthropic_stream("a b c d e f g h", event_delay_s=0.05))
    cancel = asyncio.Event()
    asyncio.get_running_loop().call_later(0.12, cancel.set)
    with pytest.raises(ModelError, match="cancelled"):
        await make_provider(profile(fake, "anthropic")).complete("x", Sampling(n=3), cancel=cancel)


async def test_cancel_before_start(fake):
    cancel = asyncio.Event()
    cancel.set()
    with pytest.raises(ModelError, match="cancelled"):
        await make_provider(profile(fake)).complete("x", cancel=cancel)
    assert fake.requests == []


# -- secrets ---------------------------------------------------------------------------


@pytest.mark.parametrize("provider", ["openai-compatible", "anthropic"])
async def test_api_key_never_in_raw_or_logs(fake, provider, caplog):
    caplog.set_level(logging.DEBUG)
    leaky = f"the key is {FAKE_KEY} and Authorization: Bearer {FAKE_KEY}"
    if provider == "anthropic":
        path = ANTHROPIC_MESSAGES
        fake.script(
            path,
            error_reply(500, f"bad key {FAKE_KEY}", flavor="anthropic"),
            anthropic_stream(leaky),
        )
    else:
        path = OPENAI_COMPLETIONS
        fake.script(
            path, error_reply(500, f"bad key {FAKE_KEY}"), openai_completion_stream([leaky])
        )
    p = make_provider(profile(fake, provider))
    result = await p.complete(f"prompt mentioning {FAKE_KEY}")

    # The key did go over the wire (so the test means something)…
    headers = fake.requests_to(path)[0].headers
    assert FAKE_KEY in headers.get("authorization", "") + headers.get("x-api-key", "")
    # …but is not in anything stored or logged.
    assert FAKE_KEY not in json.dumps(result.raw)
    assert "[REDACTED]" in json.dumps(result.raw)
    assert "retrying" in caplog.text
    assert FAKE_KEY not in caplog.text
    assert FAKE_KEY not in repr(p.profile) and FAKE_KEY not in p.profile.model_dump_json()


# -- the real local model ----------------------------------------------------------------

local_model = pytest.mark.local_model
requires_local = requires_local_model[1]


@local_model
@requires_local
async def test_local_complete_n2():
    p = make_provider(ModelProfile(name="local", provider="local", model="SmolLM2-135M-Instruct"))
    deltas = Deltas()
    result = await p.complete("Once upon a time", Sampling(n=2, tokens=12), on_delta=deltas)
    assert [c.index for c in result.completions] == [0, 1]
    for c in result.completions:
        assert c.text.strip()
        assert deltas.text(c.index) == c.text
        assert c.usage.completion_tokens and c.usage.completion_tokens <= 13
        assert c.finish_reason in ("length", "stop")
    assert result.provider == "local" and result.params["max_tokens"] == 12
    assert_json_able(result)


@local_model
@requires_local
async def test_local_chat_and_logprobs():
    p = make_provider(ModelProfile(name="local", provider="local", model="SmolLM2-135M-Instruct"))
    seen: list[str] = []
    result = await p.chat(
        [
            ChatMessage(role="system", content="You are terse."),
            ChatMessage(role="user", content="Name a colour."),
        ],
        Sampling(tokens=10),
        on_delta=seen.append,
    )
    assert len(result.completions) == 1
    assert result.completions[0].text.strip()
    assert "".join(seen) == result.completions[0].text
    result = await p.complete("The cat", Sampling(tokens=3, logprobs=2))
    lp = result.completions[0].logprobs
    assert lp and all("token" in e and "logprob" in e for e in lp)


@local_model
@requires_local
async def test_local_concurrent_calls_and_cancel():
    p = make_provider(ModelProfile(name="local", provider="local", model="SmolLM2-135M-Instruct"))
    a, b = await asyncio.gather(
        p.complete("The river", Sampling(tokens=6)), p.complete("The mountain", Sampling(tokens=6))
    )
    assert a.completions[0].text and b.completions[0].text
    cancel = asyncio.Event()
    seen: list[str] = []

    def on_delta(_i: int, piece: str) -> None:
        seen.append(piece)
        cancel.set()

    with pytest.raises(ModelError, match="cancelled"):
        await p.complete("Far away", Sampling(tokens=200), on_delta=on_delta, cancel=cancel)
    assert len(seen) == 1
    # The model is usable again right after a cancelled call.
    again = await p.complete("Again", Sampling(tokens=4))
    assert again.completions[0].text


@local_model
@requires_local
async def test_local_n_continuations_decode_together_and_stream_as_they_come():
    """The n continuations of one request are decoded together in the model server's
    slots (n beyond the slots is split across requests), each streaming as it comes."""
    p = make_provider(ModelProfile(name="local", provider="local", model="SmolLM2-135M-Instruct"))
    order: list[int] = []
    result = await p.complete("The lighthouse keeper climbed the stairs at dusk.",
                              Sampling(n=6, tokens=24, temperature=1.0),
                              on_delta=lambda i, _s: order.append(i))
    assert [c.index for c in result.completions] == list(range(6))
    # at temperature 1 the small model ends a continuation at once now and then
    assert sum(bool(c.text) for c in result.completions) >= 4
    longest = max(range(6), key=order.count)
    last = max(k for k, i in enumerate(order) if i == longest)
    assert any(i != longest for i in order[:last]), order  # interleaved, not one by one
    assert len({c.text for c in result.completions}) >= 4  # each samples its own way
    for c in result.completions:
        assert c.logprobs and all(len(e["top_logprobs"]) == 5 for e in c.logprobs)
        assert c.usage is not None  # each continuation's own (llama-server counts its end)
        assert c.usage.completion_tokens in (len(c.logprobs), len(c.logprobs) + 1)
