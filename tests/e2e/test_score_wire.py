"""``→ score`` against OpenAI-compatible servers through the real ``openai`` SDK and a
local wire-format server (fake_provider.py): the prompt's log-probabilities by ``echo``,
else by vLLM's ``prompt_logprobs``, placed over each node's text; a server with neither,
Anthropic and a chat API say why, and send nothing they need not; what is sent is
redacted."""

from __future__ import annotations

import json
import math
import re
from typing import Any

import pytest

from loom.commands.context import ScoreRequest
from loom.errors import LoomError
from loom.llm import ModelProfile
from loom.llm import keys as llm_keys
from loom.llm.scoring import echo
from loom.llm.subject import ProviderSubject
from loom.redact import forget_secrets
from tests.e2e.fake_provider import (
    ANTHROPIC_MESSAGES,
    OPENAI_CHAT,
    OPENAI_COMPLETIONS,
    FakeProvider,
    RecordedRequest,
    Reply,
    error_reply,
    json_reply,
    openai_echo,
)

KEY_ENV = "LOOM_SCORE_WIRE_KEY"
WORDS = re.compile(r"\s*\S+|\s+")


@pytest.fixture(autouse=True)
def _key(monkeypatch: pytest.MonkeyPatch) -> Any:
    monkeypatch.setenv(KEY_ENV, "loomscore-test-key-4b1d")
    monkeypatch.setenv("LOOM_NO_KEYRING", "1")
    forget_secrets()
    llm_keys.clear_cache()
    echo._ANSWERED.clear()
    yield
    forget_secrets()


def profile(fake: FakeProvider, name: str = "wire", provider: str = "openai-compatible",
            **more: Any) -> ModelProfile:
    base = fake.anthropic_base_url if provider == "anthropic" else fake.openai_base_url
    return ModelProfile(name=name, provider=provider, model="fake-base", base_url=base,
                        api_key_env=KEY_ENV, timeout_s=5, backoff_base_s=0.01,
                        backoff_max_s=0.05, **more)


def lp(word: str) -> float:
    """The fake model's log-probability of a word: "fjord" is surprising (as openai_echo has it)."""
    return math.log(0.0002) if "fjord" in word else math.log(0.5)


echo_reply = openai_echo()


def vllm_reply(with_ids: bool) -> Any:
    def reply(req: RecordedRequest) -> Reply:
        body = req.json
        if body.get("echo"):
            return error_reply(400, "echo is not supported")
        prompt = body["prompt"]
        words = [m.group() for m in WORDS.finditer(prompt)]
        ids = list(range(100, 100 + len(words)))
        positions: list[Any] = [None]
        for i, w in enumerate(words[1:], 1):
            # a longer candidate that also spells the text here: the walk must back up
            decoy = w + (words[i + 1] if i + 1 < len(words) else "")
            positions.append({str(ids[i]): {"logprob": lp(w), "rank": 2, "decoded_token": w},
                              "7": {"logprob": math.log(0.3), "rank": 1,
                                    "decoded_token": " the"},
                              "8": {"logprob": math.log(0.1), "rank": 3,
                                    "decoded_token": decoy}})
        choice: dict[str, Any] = {"index": 0, "text": " more", "finish_reason": "length",
                                  "logprobs": None, "prompt_logprobs": positions}
        if with_ids:
            choice["prompt_token_ids"] = ids
        return json_reply({"id": "cmpl-2", "object": "text_completion", "created": 1,
                           "model": "fake-base", "choices": [choice]})
    return reply


def request(prefix: str, *pieces: tuple[str, bool]) -> ScoreRequest:
    return ScoreRequest(tree=None, prefix=prefix, pieces=list(pieces))  # type: ignore[arg-type]


def test_echo_scores_each_node_in_one_request_through_the_sdk() -> None:
    with FakeProvider() as fake:
        fake.set_default(OPENAI_COMPLETIONS, echo_reply)
        scored = ProviderSubject(profile(fake)).score(request(
            "A story.\n\nThe harbour", (" was quiet.", False), (" Gulls over the fjord.", True)))
        (sent,) = fake.requests_to(OPENAI_COMPLETIONS)
    body = sent.json
    assert (body["echo"], body["logprobs"], body["max_tokens"]) == (True, 5, 1)
    assert body["prompt"] == "A story.\n\nThe harbour was quiet. Gulls over the fjord."
    assert scored.scorer == "wire (fake-base)" and scored.k == 5
    (tokens,) = scored.tokens  # the wanted piece's, in its own offsets
    assert [(t.start, t.text) for t in tokens] == [(0, " Gulls"), (6, " over"),
                                                   (11, " the"), (15, " fjord.")]
    assert tokens[-1].logprob == pytest.approx(math.log(0.0002))
    assert tokens[-1].alternatives[0] == (" the", pytest.approx(math.log(0.3)))


def test_the_first_token_of_the_text_has_no_probability() -> None:
    with FakeProvider() as fake:
        fake.set_default(OPENAI_COMPLETIONS, echo_reply)
        scored = ProviderSubject(profile(fake)).score(request("", ("Once upon.", True)))
    first, second = scored.tokens[0]
    assert (first.text, first.logprob, first.alternatives) == ("Once", None, ())
    assert second.text == " upon." and second.logprob == pytest.approx(math.log(0.5))


@pytest.mark.parametrize("with_ids", [True, False])
def test_vllms_prompt_logprobs_after_echo_is_refused(with_ids: bool) -> None:
    with FakeProvider() as fake:
        fake.set_default(OPENAI_COMPLETIONS, vllm_reply(with_ids))
        subject = ProviderSubject(profile(fake))
        scored = subject.score(request("The harbour", (" was quiet by the fjord.", True)))
        first = [r.json for r in fake.requests_to(OPENAI_COMPLETIONS)]
        subject.score(request("The harbour", (" was quiet.", True)))
        second = [r.json for r in fake.requests_to(OPENAI_COMPLETIONS)][len(first):]
    assert [("echo" in b, b.get("prompt_logprobs")) for b in first] == [
        (True, None), (False, 5)]
    # the server that answered is asked first the next time: one request
    assert [b.get("prompt_logprobs") for b in second] == [5]
    (tokens,) = scored.tokens
    assert [t.text for t in tokens] == [" was", " quiet", " by", " the", " fjord."]
    assert tokens[-1].logprob == pytest.approx(math.log(0.0002))
    assert dict(tokens[0].alternatives)[" the"] == pytest.approx(math.log(0.3))


def test_a_server_with_no_prompt_logprobs_says_so() -> None:
    with FakeProvider() as fake:
        fake.set_default(OPENAI_COMPLETIONS, error_reply(400, "Only no echo is supported"))
        with pytest.raises(LoomError) as err:
            ProviderSubject(profile(fake)).score(request("A", (" b", True)))
        assert len(fake.requests_to(OPENAI_COMPLETIONS)) == 2
    assert err.value.code == "MODEL_ERROR"
    assert err.value.message.startswith("wire (openai-compatible fake-base) returned no "
                                        "log-probabilities of given text (echo: ")
    assert "prompt_logprobs: " in err.value.message
    assert "→ score model:local" in (err.value.hint or "")


@pytest.mark.parametrize(("provider", "more", "why"), [
    ("anthropic", {}, "Anthropic's API gives no token probabilities"),
    ("openai", {"strategy": "instruct"}, "a chat API gives the log-probabilities of the "
     "tokens it writes, never of given text"),
    ("openai-compatible", {"strategy": "prefill"}, "a chat API gives"),
])
def test_a_model_that_cannot_score_says_why_and_sends_nothing(
        provider: str, more: dict[str, Any], why: str) -> None:
    with FakeProvider() as fake:
        with pytest.raises(LoomError) as err:
            ProviderSubject(profile(fake, provider=provider, **more)).score(
                request("A", (" b", True)))
        sent = [*fake.requests_to(OPENAI_COMPLETIONS), *fake.requests_to(OPENAI_CHAT),
                *fake.requests_to(ANTHROPIC_MESSAGES)]
    assert sent == []
    assert err.value.code == "MODEL_ERROR" and "cannot score text: " + why in err.value.message
    assert err.value.hint and "→ score model:local" in err.value.hint


def test_a_secret_in_the_text_is_not_sent_and_the_rest_is_scored() -> None:
    secret = "sk-ant-api03-" + "Q" * 40
    text = f" The key {secret} opens the fjord."
    with FakeProvider() as fake:
        fake.set_default(OPENAI_COMPLETIONS, echo_reply)
        scored = ProviderSubject(profile(fake)).score(request("Note:", (text, True)))
        (sent,) = fake.requests_to(OPENAI_COMPLETIONS)
    assert secret not in json.dumps(sent.json) and "[REDACTED]" in sent.json["prompt"]
    (tokens,) = scored.tokens
    for t in tokens:  # each kept token is the node's own text where it says it is
        assert text[t.start:t.end] == t.text
    assert [t.text for t in tokens] == [" The", " key", " opens", " the", " fjord."]
