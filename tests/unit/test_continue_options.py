"""``→ continue``'s options as the grammar reads and canonical text writes them, and
``→ regenerate``: every option declared once in the catalogue."""

from __future__ import annotations

import pytest

from loom.commands import lexicon
from loom.commands.ast import Continue, ParseError, Regenerate
from loom.commands.canonical import to_text
from loom.commands.catalogue import TOOLS_BY_NAME
from loom.commands.grammar import parse
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
])
def test_bad_values_are_parse_errors(line: str, message: str) -> None:
    got = parse(line)
    assert isinstance(got, ParseError) and message in got.message, got


def test_every_sampling_option_is_a_field_of_sampling_and_offered() -> None:
    tool = TOOLS_BY_NAME["continue"]
    sampling = {o.name for o in tool.options if o.sampling}
    assert sampling == {"n", "tokens", "temperature", "top_p", "min_p", "stop", "seed",
                        "logit_bias"}
    assert sampling <= set(Sampling.model_fields)
    offered = {o.name for o in lexicon.options("continue")}
    assert sampling | {"from", "model", "models"} == offered
    assert lexicon.value_kind("continue", "model") == "model"


def test_a_command_carries_its_sampling_whole() -> None:
    cmd = parse("→ continue from a7x2 n:3 tokens:40 temperature:0.7 seed:1 model:local")
    assert isinstance(cmd, Continue)
    assert cmd.sampling() == Sampling(n=3, tokens=40, temperature=0.7, seed=1)
    assert cmd.sampling().count == 3 and Sampling().count == 1
