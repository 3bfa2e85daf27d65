"""The Loom Protocol seed (seeds/004): every example decodes to what it means, and encodes back
to the seed's own text wherever that text is unambiguous."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from loom.protocol import dumps, loads, loads_lenient
from loom.protocol.seed_examples import (
    EXAMPLE_1,
    EXAMPLE_1_SCHEMA,
    EXAMPLE_1_VALUE,
    EXAMPLE_2,
    EXAMPLE_2_VALUE,
    EXAMPLE_3,
    EXAMPLE_3_VALUE,
)

# The "Syntax" section's snippets.
BASIC = "key: value\nname: John Doe\nage: 30\nenabled: true\ncount: 42"
BASIC_VALUE = {"key": "value", "name": "John Doe", "age": 30, "enabled": True, "count": 42}

NESTED = """\
workflow:
  name: My Workflow
  settings:
    retryOnError: true
    timeout: 30"""
NESTED_VALUE = {
    "workflow": {"name": "My Workflow", "settings": {"retryOnError": True, "timeout": 30}}
}

INLINE = "tags: urgent, daily, automated"
INLINE_VALUE = {"tags": ["urgent", "daily", "automated"]}

MULTILINE = """\
nodes:
  - id: schedule
    type: n8n-nodes-base.schedule
  - id: slack
    type: n8n-nodes-base.slack"""
MULTILINE_VALUE = {
    "nodes": [
        {"id": "schedule", "type": "n8n-nodes-base.schedule"},
        {"id": "slack", "type": "n8n-nodes-base.slack"},
    ]
}

TYPES = "string: Hello World\nnumber: 42\nfloat: 3.14\nboolean: true\nnull: null"
TYPES_VALUE = {"string": "Hello World", "number": 42, "float": 3.14, "boolean": True, "null": None}

COMMENTS = "# This is a comment\nkey: value  # Inline comments not supported"

TOKEN_COMPARISON_LOOM = """\
intent: WORKFLOW_CREATE
confidence: 0.95
reasoning: User wants to create workflow
extractedEntities:
  trigger: schedule
  services: slack, email
  actions: send"""
TOKEN_COMPARISON_JSON = (
    '{"intent":"WORKFLOW_CREATE","confidence":0.95,"reasoning":"User wants to create workflow",'
    '"extractedEntities":{"trigger":"schedule","services":["slack","email"],"actions":["send"]}}'
)

UNAMBIGUOUS = [
    (EXAMPLE_2, EXAMPLE_2_VALUE),
    (EXAMPLE_3, EXAMPLE_3_VALUE),
    (BASIC, BASIC_VALUE),
    (NESTED, NESTED_VALUE),
    (INLINE, INLINE_VALUE),
    (MULTILINE, MULTILINE_VALUE),
    (TYPES, TYPES_VALUE),
]
# Example 1's "actions: send" means the seed's ["send"] only with its shape known.
WITH_SCHEMA = [(EXAMPLE_1, EXAMPLE_1_VALUE, EXAMPLE_1_SCHEMA),
               *((text, value, None) for text, value in UNAMBIGUOUS)]


@pytest.mark.parametrize(("text", "value", "schema"), WITH_SCHEMA)
def test_seed_example_decodes_to_what_it_means(text: str, value: Any, schema: Any) -> None:
    assert loads(text, schema=schema) == value
    assert loads_lenient(text, schema=schema).value == value


@pytest.mark.parametrize(("text", "value", "schema"), WITH_SCHEMA)
def test_seed_example_encodes_back_to_the_seed_text(text: str, value: Any, schema: Any) -> None:
    assert dumps(value, schema=schema) == text
    assert loads(dumps(value)) == value  # without the schema: the codec's own form


def test_example_1_decodes_as_the_seeds_json() -> None:
    """Seed 004's JSON for Example 1 has ``"actions": ["send"]`` where its Loom text has
    ``actions: send``; with the example's schema (a JSON Schema, or the same shape as a
    pydantic model) that is what it decodes to. Without one the codec stays unambiguous:
    the bare value is the string, and the list is written ``[send]``."""
    from pydantic import BaseModel

    class Entities(BaseModel):
        trigger: str
        services: list[str]
        actions: list[str]

    class Classification(BaseModel):
        intent: str
        confidence: float
        reasoning: str
        extractedEntities: Entities

    assert EXAMPLE_1_VALUE["extractedEntities"]["actions"] == ["send"]  # type: ignore[index]
    assert loads(EXAMPLE_1, schema=Classification) == EXAMPLE_1_VALUE
    assert loads(EXAMPLE_1)["extractedEntities"]["actions"] == "send"
    assert "  actions: [send]" in dumps(EXAMPLE_1_VALUE).splitlines()


def test_schema_hints_keep_the_round_trip() -> None:
    """A one-item list is bare only where the schema expects a list and the item could not
    be the value itself; anything else keeps its own form, and a scalar where the schema
    wants a list is refused rather than written ambiguously."""
    from loom.protocol import LoomEncodeError

    schema = {"type": "object", "properties": {
        "tags": {"type": "array", "items": {"type": "string"}},
        "maybe": {"anyOf": [{"type": "string"}, {"type": "array"}]},
        "grid": {"type": "array", "items": {"type": "array", "items": {"type": "integer"}}},
        "rows": {"type": "array", "items": {"type": "object", "properties": {
            "who": {"type": "string"}, "ids": {"type": "array"}}}},
    }}
    values = [
        {"tags": ["send"]}, {"tags": ["Good morning, team"]}, {"tags": [None]},
        {"tags": []}, {"tags": ["a", "b"]}, {"tags": ["two\nlines"]}, {"tags": None},
        {"maybe": ["x"]}, {"maybe": "x"}, {"grid": [[1], [2, 3], []]},
        {"rows": [{"who": "a", "ids": [1]}, {"who": "b", "ids": [2, 3]}]},
    ]
    for value in values:
        text = dumps(value, schema=schema)
        assert loads(text, schema=schema) == value, text
        assert loads(dumps(value)) == value
    assert dumps({"tags": ["send"]}, schema=schema) == "tags: send"
    assert dumps({"maybe": ["x"]}, schema=schema) == "maybe: [x]"
    assert dumps({"grid": [[1], [2, 3]]}, schema=schema) == "grid:\n  - 1\n  - 2, 3"
    with pytest.raises(LoomEncodeError, match=r"at \$\.tags"):
        dumps({"tags": "send"}, schema=schema)
    with pytest.raises(LoomEncodeError, match=r"at \$\.grid\[0\]"):
        dumps({"grid": [1, 2]}, schema=schema)
    rows = [{"who": w, "ids": 1} for w in "abc"]
    with pytest.raises(LoomEncodeError, match=r"at \$\.rows\[0\]\.ids"):
        dumps({"rows": rows}, schema=schema)


def test_example_3_types() -> None:
    nodes = loads(EXAMPLE_3)["workflow"]["nodes"]
    assert nodes[0]["parameters"]["rule"]["time"] == "09:00"
    assert nodes[1]["parameters"]["channel"] == "#general"
    assert nodes[1]["parameters"]["text"] == "Good morning team!"
    index = loads(EXAMPLE_3)["workflow"]["connections"]["schedule"]["main"][0]["index"]
    assert index == 0 and type(index) is int
    assert type(loads(EXAMPLE_1)["confidence"]) is float


def test_token_comparison_block() -> None:
    """The seed's JSON has ``"actions": ["send"]``; its Loom text writes ``actions: send``,
    which reads as the scalar without a schema. The codec writes the one-element array as
    ``[send]``; with the example's schema it reads and writes the seed's form."""
    import json

    meant = json.loads(TOKEN_COMPARISON_JSON)
    decoded = loads(TOKEN_COMPARISON_LOOM)
    assert decoded["extractedEntities"]["actions"] == "send"
    assert {
        **decoded,
        "extractedEntities": {**decoded["extractedEntities"], "actions": ["send"]},
    } == meant
    assert dumps(meant) == TOKEN_COMPARISON_LOOM.replace("actions: send", "actions: [send]")
    assert loads(dumps(meant)) == meant
    # with the shape known, the seed's text is exactly the seed's JSON, both ways
    assert loads(TOKEN_COMPARISON_LOOM, schema=EXAMPLE_1_SCHEMA) == meant
    assert dumps(meant, schema=EXAMPLE_1_SCHEMA) == TOKEN_COMPARISON_LOOM


def test_comments_block() -> None:
    """The seed says inline comments are not supported: strict decoding keeps the text,
    lenient decoding drops the comment and says so."""
    assert loads(COMMENTS) == {"key": "value  # Inline comments not supported"}
    assert dumps(loads(COMMENTS)) == 'key: "value  # Inline comments not supported"'
    result = loads_lenient(COMMENTS)
    assert result.value == {"key": "value"}
    assert result.assumptions == ["line 2: treated '# Inline comments not supported' as a comment"]


def test_the_issues_ambiguities_are_resolved() -> None:
    """Strings with ', ', "true", "42", one-element/empty arrays, empty objects, newlines."""
    value = {
        "text": "Good morning, team!",
        "flag": "true",
        "count": "42",
        "one": ["send"],
        "none": [],
        "empty": {},
        "note": "Dear team,\nsee you at 9.",
    }
    text = dumps(value)
    assert text == (
        'text: "Good morning, team!"\n'
        'flag: "true"\n'
        'count: "42"\n'
        "one: [send]\n"
        "none: []\n"
        "empty: {}\n"
        "note: |-\n"
        "  Dear team,\n"
        "  see you at 9."
    )
    assert loads(text) == value


SEED = Path(__file__).resolve().parents[3] / "shared" / "seeds" / "004_0aa8aa997031beee.txt"


@pytest.mark.skipif(not SEED.exists(), reason="the seeds are not next to this checkout")
@pytest.mark.parametrize(
    "text",
    [
        EXAMPLE_1,
        EXAMPLE_2,
        EXAMPLE_3,
        BASIC,
        NESTED,
        INLINE,
        MULTILINE,
        TYPES,
        COMMENTS,
        TOKEN_COMPARISON_LOOM,
        TOKEN_COMPARISON_JSON,
    ],
)
def test_quotes_are_verbatim(text: str) -> None:
    assert text in SEED.read_text(encoding="utf-8")
