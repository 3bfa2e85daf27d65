"""Property-based round trips of the Loom Protocol codec (hypothesis)."""

from __future__ import annotations

import math
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from loom.protocol import LoomProtocolError, dumps, loads, loads_lenient

# Fragments that exercise every quoting rule; joined at random they make hostile strings.
# fmt: off
TRICKY = [
    "", " ", "  ", ", ", ",", ": ", ":", "-", "- ", "#", " #", " # ", "# ", "#x", "\n", "\n\n",
    "\r", "\r\n", "\t", '"', "\\", "'", "[", "]", "[]", "{", "}", "{}", "|", "|-", "|+", ">",
    "true", "false", "null", "True", "None", "42", "-7", "0.5", "1e5", "nan", "inf", "1_0",
    "```", "\u2028", "\u2029", "\x85", "\ufeff", "\x00", "\x7f", "a", "b c", "é", "日本", "😀",
    "\u00a0", "key", "x:", "-a", "  x",
]
# fmt: on

tricky_text = st.lists(st.sampled_from(TRICKY), max_size=6).map("".join)
any_text = st.one_of(st.text(max_size=20), tricky_text, st.text(st.characters(), max_size=8))
keys = any_text

scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.integers(min_value=2**64, max_value=2**200) | st.integers(max_value=-(2**64)),
    st.floats(allow_nan=False, allow_infinity=False),
    st.sampled_from([-0.0, 0.0, 1e300, -1e-300, 5e-324, 1.7976931348623157e308, 0.1]),
    any_text,
)


def _records(children: st.SearchStrategy[Any]) -> st.SearchStrategy[list[dict[str, Any]]]:
    """Uniform arrays of records, so the table form is exercised."""
    return st.lists(keys, min_size=1, max_size=4, unique=True).flatmap(
        lambda cols: st.lists(
            st.fixed_dictionaries({c: scalars for c in cols}), min_size=0, max_size=5
        )
    )


json_values = st.recursive(
    scalars,
    lambda children: st.one_of(
        st.lists(children, max_size=5),
        st.dictionaries(keys, children, max_size=5),
        _records(children),
    ),
    max_leaves=30,
)


def same(a: Any, b: Any) -> bool:
    """Equality that also tells bool from int, -0.0 from 0.0, and key order."""
    if type(a) is not type(b):
        return False
    if isinstance(a, float):
        return math.copysign(1, a) == math.copysign(1, b) and a == b
    if isinstance(a, dict):
        return list(a) == list(b) and all(same(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    return a == b


def _has_newline(v: Any) -> bool:
    if isinstance(v, str):
        return "\n" in v
    if isinstance(v, dict):
        return any(_has_newline(k) or _has_newline(x) for k, x in v.items())
    if isinstance(v, list):
        return any(_has_newline(x) for x in v)
    return False


FAST = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@FAST
@given(json_values)
def test_round_trip(value: Any) -> None:
    text = dumps(value)
    assert same(loads(text), value), text


def _shape_of(v: Any) -> dict[str, Any]:
    """A JSON Schema that describes exactly ``v``: every list is an array there."""
    if isinstance(v, dict):
        return {"type": "object", "properties": {k: _shape_of(x) for k, x in v.items()}}
    if isinstance(v, list):
        return {"type": "array", "prefixItems": [_shape_of(x) for x in v]}
    if v is None:
        return {"type": "null"}
    if isinstance(v, bool):
        return {"type": "boolean"}
    return {"type": "integer" if isinstance(v, int) else
            "number" if isinstance(v, float) else "string"}


@FAST
@given(json_values)
def test_round_trip_with_a_schema(value: Any) -> None:
    """With a schema hint one-item arrays may be written bare (seed 004's ``actions:
    send``); whatever the value, it reads back the same with the same schema."""
    schema = _shape_of(value)
    text = dumps(value, schema=schema)
    assert same(loads(text, schema=schema), value), text
    assert same(loads_lenient(text, schema=schema).value, value), text


@FAST
@given(json_values)
def test_lenient_reads_encoder_output_identically(value: Any) -> None:
    text = dumps(value)
    result = loads_lenient(text)
    assert same(result.value, value), text
    assert result.assumptions == []


@FAST
@given(json_values)
def test_output_is_clean(value: Any) -> None:
    """No trailing spaces, tabs, CRs or odd indentation; re-encoding is stable."""
    text = dumps(value)
    for line in text.split("\n"):
        assert line == line.rstrip(), repr(line)
        assert "\t" not in line and "\r" not in line
        if not _has_newline(value):  # block text keeps its own leading spaces
            assert (len(line) - len(line.lstrip(" "))) % 2 == 0
    assert dumps(loads(text)) == text


@settings(max_examples=100, deadline=None)
@given(any_text, scalars)
def test_top_level_scalars_and_single_keys(key: str, value: Any) -> None:
    for v in (value, {key: value}, [value], [[value]], {key: [value]}, [{key: value}]):
        assert same(loads(dumps(v)), v), dumps(v)


@pytest.mark.parametrize("depth", [1, 2, 10, 50])
def test_deep_nesting(depth: int) -> None:
    value: Any = "leaf, with comma"
    for i in range(depth):
        value = {f"k{i}": value} if i % 3 else ([value, i] if i % 2 else [value])
    assert same(loads(dumps(value)), value)


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=st.sampled_from(list('ab -:#"\\,[]{}|\n \t0')), max_size=40))
def test_decoder_never_crashes(text: str) -> None:
    """Arbitrary text either decodes or raises LoomProtocolError with a position."""
    for lenient in (False, True):
        try:
            loads(text, lenient=lenient)
        except LoomProtocolError as e:
            assert e.line >= 1 and e.column >= 1
            assert f"line {e.line}" in str(e)
