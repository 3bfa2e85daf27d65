"""The Loom Protocol codec: the chosen forms, strict errors, and lenient decoding."""

from __future__ import annotations

from typing import Any

import pytest

from loom.protocol import (
    LoomEncodeError,
    LoomEncodeTypeError,
    LoomProtocolError,
    dump_for_model,
    dumps,
    loads,
    loads_lenient,
)

# (value, exact encoding): one row per documented form in docs/protocol.md
FORMS: list[tuple[Any, str]] = [
    # top level
    ({}, "{}"),
    ([], "[]"),
    (None, "null"),
    (True, "true"),
    (42, "42"),
    (-0.0, "-0.0"),
    (1e300, "1e+300"),
    (2**70, "1180591620717411303424"),
    ("hello world", "hello world"),
    ("a: b", '"a: b"'),
    ("#general", '"#general"'),
    ("```", '"```"'),
    ("x:", '"x:"'),
    (["a", "b"], "a, b"),
    (["a"], "[a]"),
    ([1, [2, 3]], "- 1\n- 2, 3"),
    ("two\nlines", "|-\n  two\n  lines"),
    # strings after "key: "
    ({"k": "Good morning, team!"}, 'k: "Good morning, team!"'),
    ({"k": "a,b"}, "k: a,b"),
    ({"k": "a: b"}, "k: a: b"),
    ({"k": "#general"}, "k: #general"),
    ({"k": "C# and F#"}, "k: C# and F#"),
    ({"k": "see # note"}, 'k: "see # note"'),
    ({"k": "#"}, 'k: "#"'),
    ({"k": "- x"}, 'k: "- x"'),
    ({"k": "-"}, 'k: "-"'),
    ({"k": "-x"}, "k: -x"),
    ({"k": "true"}, 'k: "true"'),
    ({"k": "Null"}, 'k: "Null"'),
    ({"k": "42"}, 'k: "42"'),
    ({"k": "-1.5e3"}, 'k: "-1.5e3"'),
    ({"k": "007"}, 'k: "007"'),
    ({"k": "nan"}, 'k: "nan"'),
    ({"k": "09:00"}, "k: 09:00"),
    ({"k": ""}, 'k: ""'),
    ({"k": " padded "}, 'k: " padded "'),
    ({"k": '"quoted" start'}, 'k: "\\"quoted\\" start"'),
    ({"k": 'say "hi"'}, 'k: say "hi"'),
    ({"k": "[x]"}, 'k: "[x]"'),
    ({"k": "{x}"}, 'k: "{x}"'),
    ({"k": "|"}, 'k: "|"'),
    ({"k": "a|b"}, "k: a|b"),
    ({"k": "tab\there"}, 'k: "tab\\there"'),
    ({"k": "bell\x07"}, 'k: "bell\\u0007"'),
    ({"k": "ls\u2028ps"}, 'k: "ls\\u2028ps"'),
    ({"k": "日本語 😀"}, "k: 日本語 😀"),
    # multi-line strings
    ({"k": "a\nb"}, "k: |-\n  a\n  b"),
    ({"k": "a\nb\n"}, "k: |\n  a\n  b"),
    ({"k": "a\n\nb"}, "k: |-\n  a\n\n  b"),
    ({"k": "a\nb\n\n"}, 'k: "a\\nb\\n\\n"'),
    ({"k": "a \nb"}, 'k: "a \\nb"'),
    ({"k": " a\nb"}, 'k: " a\\nb"'),
    ({"k": "a\n  indented"}, "k: |-\n  a\n    indented"),
    ({"k": "\n"}, 'k: "\\n"'),
    ({"k": "a\r\nb"}, 'k: "a\\r\\nb"'),
    # arrays and objects
    ({"k": []}, "k: []"),
    ({"k": {}}, "k: {}"),
    ({"k": ["x"]}, "k: [x]"),
    ({"k": ["x, y"]}, 'k: ["x, y"]'),
    ({"k": ["a: b", "c"]}, "k: a: b, c"),
    ({"k": [1, None, True, "s"]}, "k: 1, null, true, s"),
    ({"k": ["", "true"]}, 'k: "", "true"'),
    ({"k": ["a\nb", "c"]}, "k:\n  - |-\n    a\n    b\n  - c"),
    ({"k": [[1, 2], [3], []]}, "k:\n  - 1, 2\n  - [3]\n  - []"),
    ({"k": [["a: b", "c"]]}, 'k:\n  - "a: b", c'),
    ({"k": [[[1]]]}, "k:\n  - - [1]"),
    ({"k": [{}]}, "k:\n  - {}"),
    ({"k": [{"a": 1, "b": {"c": 2}}]}, "k:\n  - a: 1\n    b:\n      c: 2"),
    ({"k": [{"t": "x\ny"}]}, "k:\n  - t: |-\n      x\n      y"),
    ({"k": [{"a": [{"b": 1}]}]}, "k:\n  - a:\n      - b: 1"),
    # tables: three or more records with the same keys and scalar values
    (
        {"t": [{"id": 1, "n": "a, b"}, {"id": 2, "n": None}, {"id": 3, "n": "#x"}]},
        't: {id,n}\n  1,"a, b"\n  2,null\n  3,"#x"',
    ),
    (
        [{"a": 1, "b": 2}, {"a": 3, "b": 4}, {"a": 5, "b": 6}],
        "{a,b}\n  1,2\n  3,4\n  5,6",
    ),
    (
        {"t": [{"a, b": 1, "": 2}, {"a, b": 3, "": 4}, {"a, b": 5, "": 6}]},
        't: {"a, b",""}\n  1,2\n  3,4\n  5,6',
    ),
    ([[{"a": 1}, {"a": 2}, {"a": 3}]], "- {a}\n  1\n  2\n  3"),
    ({"t": [{"a": 1}, {"a": 2}]}, "t:\n  - a: 1\n  - a: 2"),
    ({"t": [{"a": 1}, {"a": 2}, {"b": 3}]}, "t:\n  - a: 1\n  - a: 2\n  - b: 3"),
    # keys
    ({"": 1}, '"": 1'),
    ({"a: b": 1}, '"a: b": 1'),
    ({"a:": 1}, '"a:": 1'),
    ({"-x": 1}, '"-x": 1'),
    ({"#x": 1}, '"#x": 1'),
    ({" x": 1}, '" x": 1'),
    ({"[x]": 1}, '"[x]": 1'),
    ({'a"b': 1}, '"a\\"b": 1'),
    ({"a b, c": 1}, "a b, c: 1"),
    ({"true": 1, "42": 2}, "true: 1\n42: 2"),
    ({"x\ny": {"z": 1}}, '"x\\ny":\n  z: 1'),
]


@pytest.mark.parametrize(("value", "text"), FORMS)
def test_form(value: Any, text: str) -> None:
    assert dumps(value) == text
    assert loads(text) == value
    assert loads_lenient(text) == (value, [])


def test_dump_for_model_is_dumps() -> None:
    assert dump_for_model({"a": [1, 2]}) == dumps({"a": [1, 2]})


def test_types_are_kept() -> None:
    value = {"i": 1, "f": 1.0, "b": True, "n": None, "s": "1", "neg": -0.0, "small": 5e-324}
    back = loads(dumps(value))
    assert [type(v) for v in back.values()] == [type(v) for v in value.values()]
    assert repr(back["neg"]) == "-0.0" and back["small"] == 5e-324


def test_tuples_are_arrays() -> None:
    assert loads(dumps({"a": (1, 2)})) == {"a": [1, 2]}


def test_decoder_extras() -> None:
    """Forms the encoder does not write but a reader accepts."""
    assert loads("k: [a, b]") == {"k": ["a", "b"]}
    assert loads("k:\n  plain on its own line") == {"k": "plain on its own line"}
    assert loads("-\n  - 1\n  - 2") == [[1, 2]]
    assert loads("- - a: 1\n    b: 2\n  - 3") == [[{"a": 1, "b": 2}, 3]]
    assert loads('"a": 1') == {"a": 1}
    assert loads("k: x\n\n# comment\n  # indented comment\nj: y\n") == {"k": "x", "j": "y"}
    assert loads("k: a,b") == {"k": "a,b"}


def test_block_string_keeps_comment_like_lines_and_blank_lines() -> None:
    text = "k: |-\n  # not a comment\n\n  - not an item\nnext: 1"
    assert loads(text) == {"k": "# not a comment\n\n- not an item", "next": 1}


# -- encoder errors ---------------------------------------------------------------------------


@pytest.mark.parametrize("bad", [float("nan"), float("inf"), float("-inf")])
def test_non_finite_floats_are_rejected(bad: float) -> None:
    with pytest.raises(LoomEncodeError, match="not JSON numbers") as info:
        dumps({"a": [1, {"b": bad}]})
    assert info.value.path == "$.a[1].b"
    assert isinstance(info.value, ValueError)


def test_non_json_values_are_rejected() -> None:
    with pytest.raises(TypeError, match="set"):
        dumps({"a": {1, 2}})
    with pytest.raises(LoomEncodeTypeError, match="keys must be strings"):
        dumps({1: "a"})
    with pytest.raises(LoomEncodeError) as info:
        dumps({"t": [{"a": 1}, {"a": 2}, {"a": float("nan")}]})
    assert info.value.path == "$.t[2].a"


def test_cycles_are_rejected() -> None:
    a: list[Any] = [1]
    a.append({"self": a})
    with pytest.raises(LoomEncodeError, match="cycle"):
        dumps(a)


def test_shared_references_are_not_cycles() -> None:
    shared = {"x": 1}
    assert loads(dumps([shared, shared])) == [{"x": 1}, {"x": 1}]


# -- strict decoding errors -------------------------------------------------------------------

ERRORS: list[tuple[str, str, int, int]] = [
    ("3 spaces deeper than its parent; expected 2", "a:\n   b: 1", 2, 4),
    ("tab in indentation", "a:\n\tb: 1", 2, 1),
    ("duplicate key", "a: 1\na: 2", 2, 1),
    ("found an array item", "a: 1\n- b", 2, 1),
    ("expected an array item", "- a\nb: 1", 2, 1),
    ("unterminated quoted string", 'a: "abc', 1, 4),
    ("unexpected text after a quoted string", 'a: "abc" x', 1, 9),
    ("trailing whitespace", "a: 1 ", 1, 5),
    ("carriage return", "a: 1\r\nb: 2", 1, 5),
    ("code fence", "```\na: 1\n```", 1, 1),
    ("after the end of the document", "hello\nworld", 2, 1),
    ("unexpected indentation", "a: 1\n  b: 2", 2, 3),
    ("has no value", "a:\nb: 1", 1, 1),
    ("empty document", "", 1, 1),
    ("empty document", "# only a comment\n", 1, 1),
    ("without a closing ']'", "a: [x", 1, 4),
    ("without a closing '}'", "a: {x", 1, 4),
    ("block string starts with", "a: |x", 1, 4),
    ("empty value", "a: x, , y", 1, 7),
    ("bad quoted string", 'a: "\\q"', 1, 5),
    ("exactly one space after ':'", "a:  b", 1, 3),
    ("whitespace around key", "a : b", 1, 1),
    ("row has 1 cells", "t: {a,b}\n  1,2\n  3", 3, 3),
    ("no rows", "t: {a,b}\nx: 1", 1, 1),
    ("whitespace around a column name", "t: {a, b}\n  1,2", 1, 7),
    ("unexpected whitespace", "t: {a,b}\n  1, 2", 2, 5),
    ("flow mappings", "t: {a: 1}", 1, 5),
    ("one space after '-'", "-  x", 1, 2),
    ("U+0001", "a: x\x01y", 1, 5),
    ("U+0009", "a: x\ty", 1, 5),
    ("out of range", "a: 1e999", 1, 4),
    ("start in column 1", "  a: 1", 1, 3),
    ("no text below it", "a: |-\nb: 1", 1, 1),
    ("less indented than the block string", "a: |-\n  x\n y", 3, 2),
    ("byte order mark", "\ufeffa: 1", 1, 1),
    ("one space after '-'", "k:\n  - a: 1\n  -   b: 2", 3, 4),
]


@pytest.mark.parametrize(("message", "text", "line", "column"), ERRORS)
def test_strict_errors(message: str, text: str, line: int, column: int) -> None:
    with pytest.raises(LoomProtocolError) as info:
        loads(text)
    err = info.value
    assert isinstance(err, ValueError)
    assert (err.line, err.column) == (line, column), str(err)
    assert message in err.message
    assert str(err).startswith(f"line {line}, column {column}: ")


def test_bytes_input() -> None:
    assert loads("k: é".encode()) == {"k": "é"}
    with pytest.raises(LoomProtocolError, match="UTF-8"):
        loads(b"k: \xff")


# -- lenient decoding -------------------------------------------------------------------------

MODEL_OUTPUT = """\
```loom
intent: WORKFLOW_CREATE
confidence: 0.95  # fairly sure
reasoning: "User wants # this" # note
extractedEntities:
    trigger: schedule
    services: slack, email # two of them
    nodes:
        - id: schedule
          type: x
    text: |
        Hello.
        # a line of the text
channel: #general
```""".replace("WORKFLOW_CREATE", "WORKFLOW_CREATE  ")  # trailing spaces


def test_lenient_reads_model_output_and_says_what_it_assumed() -> None:
    value, notes = loads_lenient(MODEL_OUTPUT)
    assert value == {
        "intent": "WORKFLOW_CREATE",
        "confidence": 0.95,
        "reasoning": "User wants # this",
        "extractedEntities": {
            "trigger": "schedule",
            "services": ["slack", "email"],
            "nodes": [{"id": "schedule", "type": "x"}],
            "text": "Hello.\n# a line of the text\n",
        },
        "channel": "#general",
    }
    assert notes == [
        "line 1: removed the ``` fence around the document (lines 1 and 15)",
        "line 2: removed trailing whitespace (line 2)",
        "line 3: treated '# fairly sure' as a comment",
        "line 4: treated '# note' as a comment",
        "line 6: accepted a nested block indented 4 spaces (expected 2)",
        "line 7: treated '# two of them' as a comment",
    ]
    assert loads(MODEL_OUTPUT, lenient=True) == value
    with pytest.raises(LoomProtocolError):
        loads(MODEL_OUTPUT)


@pytest.mark.parametrize(
    ("text", "value", "note"),
    [
        ("a: 1\r\nb: 2\r\n", {"a": 1, "b": 2}, "line 1: read CRLF line endings as LF"),
        ("a: 1\na: 2", {"a": 2}, "line 2: duplicate key 'a': the last value wins"),
        ("a:\nb: 1", {"a": None, "b": 1}, "line 1: read the missing value of key 'a' as null"),
        ("a:  b", {"a": "b"}, "line 1: ignored extra spaces after the key 'a'"),
        ("a : b", {"a": "b"}, "line 1: read key 'a ' as 'a'"),
        ("a: [draft", {"a": "[draft"}, "line 1: read '[draft' as a string (no closing ']')"),
        ("  a: 1", {"a": 1}, "line 1: accepted a document indented 2 spaces"),
        ("-   x", ["x"], "line 1: accepted 3 spaces after '-'"),
        ("\ufeffa: 1", {"a": 1}, "line 1: ignored a byte order mark"),
        (
            "k:   # nothing here\n  x: 1",
            {"k": {"x": 1}},
            "line 1: treated '# nothing here' as a comment",
        ),
        ("```\na: 1", {"a": 1}, "line 1: removed an opening ``` fence that has no closing fence"),
        (
            't: {a, b}\n  1, x\n  2, "y, z"',
            {"t": [{"a": 1, "b": "x"}, {"a": 2, "b": "y, z"}]},
            "line 1: ignored spaces after ',' in the table",
        ),
    ],
)
def test_lenient_repairs(text: str, value: Any, note: str) -> None:
    assert loads_lenient(text) == (value, [note])


def test_lenient_keeps_hash_text_that_is_not_a_comment() -> None:
    assert loads_lenient("a: #general\nb: C# rocks\nc: x#y") == (
        {"a": "#general", "b": "C# rocks", "c": "x#y"},
        [],
    )


def test_lenient_still_rejects_real_errors() -> None:
    for text in ("a: 1\n- b", 'a: "abc', "a:\n\tb: 1", "a:\n    b: 1\n  c: 2"):
        with pytest.raises(LoomProtocolError):
            loads(text, lenient=True)
