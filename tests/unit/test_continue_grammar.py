"""``→ continue``'s options as the grammar reads and canonical text writes them, and
``→ regenerate``: every option declared once in the catalogue."""

from __future__ import annotations

import pytest

from loom.commands import lexicon
from loom.commands.canonical import to_text
from loom.commands.catalogue import TOOLS_BY_NAME
from loom.commands.grammar import parse
from loom.commands.syntax import Continue, ParseError, Regenerate
from loom.model.sampling import Sampling


@pytest.mark.parametrize(("line", "expected"), [
    ("→ continue model:local", Continue(models=("local",))),
    ("→ continue with-model:claude n:2", Continue(models=("claude",), n=2)),
    ("→ continue models:local,claude-haiku", Continue(models=("local", "claude-haiku"))),
    ('→ continue models:"local, claude-haiku"', Continue(models=("local", "claude-haiku"))),
    ("→ continue top-p:0.9 min-p:0.05", Continue(top_p=0.9, min_p=0.05)),
    ("→ continue nucleus:0.5", Continue(top_p=0.5)),
    ('→ continue stop:"\\n\\n"', Continue(stop=["\n\n"])),
    ("→ continue seed:42", Continue(seed=42)),
    ('→ continue bias:"50256:-100, 13:2.5"',
     Continue(logit_bias={"50256": -100.0, "13": 2.5})),
    ("→ continue top-k:40 typical:0.9 repetition_penalty:1.1",
     Continue(top_k=40, typical_p=0.9, repeat_penalty=1.1)),
    ("→ continue frequency_penalty:0.5 presence-penalty:-0.25",
     Continue(frequency_penalty=0.5, presence_penalty=-0.25)),
    ("→ continue dry:0.8 dry_base:1.75 dry-allowed-length:3",
     Continue(dry=0.8, dry_base=1.75, dry_allowed_length=3)),
    ("→ continue xtc:0.5 xtc_threshold:0.1", Continue(xtc_probability=0.5, xtc_threshold=0.1)),
    ("→ continue mirostat:2 mirostat_tau:5 mirostat-eta:0.1",
     Continue(mirostat=2, mirostat_tau=5.0, mirostat_eta=0.1)),
    ('→ continue banned:"very, suddenly ,very"', Continue(banned=["very", "suddenly"])),
    ('→ continue gbnf:"root ::= \\"yes\\" | \\"no\\""',
     Continue(grammar='root ::= "yes" | "no"')),
    ('→ continue extra:"top_n_sigma:1.5, samplers:[\\"top_k\\",\\"temperature\\"]"',
     Continue(extra={"top_n_sigma": 1.5, "samplers": ["top_k", "temperature"]})),
    ('→ continue extra:"{\\"ignore_eos\\": true, \\"lora\\": [{\\"id\\": 0}]}"',
     Continue(extra={"ignore_eos": True, "lora": [{"id": 0}]})),
    ('→ continue extra:"label:a,b:plain text"', Continue(extra={"label": "a",
                                                              "b": "plain text"})),
    ("→ continue preset:wild", Continue(preset="wild")),
    ("→ continue sampler:wild n:2 temperature:0.2",
     Continue(preset="wild", n=2, temperature=0.2)),
    ("→ regenerate a7x2", Regenerate(node="a7x2")),
    ("→ replay a7x2", Regenerate(node="a7x2")),
    ("→ rerun a7x2", Regenerate(node="a7x2")),
])
def test_the_options_parse(line: str, expected: object) -> None:
    assert parse(line) == expected
    assert parse(to_text(expected)) == expected  # canonical text reads back the same


@pytest.mark.parametrize(("line", "message"), [
    ("→ continue model:a models:b", "model: and models: both name the models"),
    ('→ continue bias:"x:1"', "logit_bias: 'x:1' is not token id:bias"),
    ('→ continue bias:"5:300"', "logit_bias: the bias 300 is outside -100 to 100"),
    ("→ continue seed:lots", "seed"),
    ("→ continue top_p:high", "top_p"),
    ("→ regenerate", "regenerate needs a node"),
    ('→ continue banned:" , "', "banned: needs the strings to ban"),
    ('→ continue extra:"plain"', "extra: 'plain' is not key:value"),
    ('→ continue extra:"{1, 2}"', "extra: is not a JSON object"),
    ('→ continue extra:"a:1,a:2"', "extra: a given twice"),
    ('→ continue preset:""', "preset: needs a preset's name"),
])
def test_bad_values_are_parse_errors(line: str, message: str) -> None:
    got = parse(line)
    assert isinstance(got, ParseError) and message in got.message, got


def test_every_sampling_option_is_a_field_of_sampling_and_offered() -> None:
    tool = TOOLS_BY_NAME["continue"]
    sampling = {o.name for o in tool.options if o.sampling}
    assert sampling == {"n", "tokens", "temperature", "top_p", "min_p", "stop", "seed",
                        "logit_bias", "top_k", "typical_p", "repeat_penalty",
                        "frequency_penalty", "presence_penalty", "dry", "dry_base",
                        "dry_allowed_length", "xtc_probability", "xtc_threshold", "mirostat",
                        "mirostat_tau", "mirostat_eta", "banned", "grammar", "extra"}
    assert sampling == set(Sampling.model_fields) - {"logprobs"}
    offered = {o.name for o in lexicon.options("continue")}
    assert sampling | {"from", "model", "models", "preset"} == offered
    assert lexicon.value_kind("continue", "preset") == "preset"
    assert lexicon.value_kind("continue", "model") == "model"


def test_a_command_carries_its_sampling_whole() -> None:
    cmd = parse("→ continue from a7x2 n:3 tokens:40 temperature:0.7 seed:1 model:local")
    assert isinstance(cmd, Continue)
    assert cmd.sampling() == Sampling(n=3, tokens=40, temperature=0.7, seed=1)
    assert cmd.sampling().count == 3 and Sampling().count == 1


@pytest.mark.parametrize("key", ["model", "n", "stream", "stream_options", "logprobs",
                                 "top_logprobs", "n_probs", "echo", "prompt", "messages",
                                 "api_key", "base_url", "Authorization", "cache_prompt",
                                 "n_cmpl", "response_fields", "extra_body", "tools"])
def test_extra_cannot_set_what_loom_sets(key: str) -> None:
    """``extra:`` passes the backend's other keys, never one Loom relies on: the number of
    continuations, streaming, token data, the model, the prompt, where and as whom."""
    got = parse(f'→ continue extra:"{key}:1"')
    assert isinstance(got, ParseError) and got.message == f"extra: {key} is Loom's own to set"
    assert got.hint.startswith("leave it out: extra: passes the backend's other keys")
    with pytest.raises(ValueError, match="Loom's own to set"):  # editors' arguments too
        Sampling(extra={key: 1})


@pytest.mark.parametrize(("key", "option"), [
    ("temperature", "temperature"), ("temp", "temperature"), ("max_tokens", "tokens"),
    ("n_predict", "tokens"), ("seed", "seed"), ("top_k", "top_k"),
    ("dry_multiplier", "dry"), ("stop_sequences", "stop"), ("grammar", "grammar"),
    ("logit_bias", "logit_bias")])
def test_extra_names_the_option_that_sets_a_key(key: str, option: str) -> None:
    """A key an option sets goes through that option, so its bounds hold."""
    got = parse(f'→ continue extra:"{key}:1"')
    assert isinstance(got, ParseError), got
    assert got.message == f"extra: {key} is set by {option}:"
    assert got.hint == f"use {option}: instead"


def test_extra_is_bounded() -> None:
    many = ",".join(f"k{i}:1" for i in range(33))
    got = parse(f'→ continue extra:"{many}"')
    assert isinstance(got, ParseError) and "has 33 keys (at most 32)" in got.message
    big = parse('→ continue extra:"k:\\"' + "x" * 5000 + '\\""')
    assert isinstance(big, ParseError) and "bytes of JSON (at most 4,096)" in big.message
