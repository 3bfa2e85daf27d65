"""Deep and broken files: JSON nested to any depth is read without recursion, trees as deep
as a long story import and export, and what cannot be kept is refused in words."""

from __future__ import annotations

import contextlib
import json
import random
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from loom.cli import main
from loom.errors import LoomError
from loom.interchange import export_tree, import_bytes, import_data, jsontext
from loom.interchange.adapters import drop_secrets
from loom.interchange.openloom.read import MAX_DEPTH
from loom.interchange.socketteer import convert
from loom.protocol import loads as protocol_loads
from loom.store.schema import Node
from tests.unit.interchange_support import DEMO, fresh


def chain_text(depth: int, extra: str = "") -> str:
    """A socketteer file whose one story is ``depth`` nodes below the root (two JSON
    levels per node), written directly: building it as a value would need recursion."""
    head = '{"text": "w", "children": ['
    return ('{"root": ' + head * depth + '{"text": "end", "children": []' + extra + "}"
            + "]}" * depth + "}")


def depth_of(value: Any) -> int:
    """Levels of nesting, iteratively."""
    best, stack = 0, [(value, 0)]
    while stack:
        item, d = stack.pop()
        if isinstance(item, dict | list):
            best = max(best, d + 1)
            children = item.values() if isinstance(item, dict) else item
            stack.extend((c, d + 1) for c in children)
    return best


@contextlib.contextmanager
def recursion_limit(frames: int) -> Iterator[None]:
    """Only ``frames`` more Python frames than the caller has: a walk that recursed once
    per level of a deep tree would fail here."""
    old = sys.getrecursionlimit()
    here = 0
    frame = sys._getframe()
    while frame is not None:
        here, frame = here + 1, frame.f_back
    sys.setrecursionlimit(here + frames)
    try:
        yield
    finally:
        sys.setrecursionlimit(old)


# ── the decoder ──────────────────────────────────────────────────────────────


def test_a_story_100_000_nodes_deep_is_read_and_converted() -> None:
    text = chain_text(100_000)
    with recursion_limit(200):
        data = jsontext.loads(text)
        document, _ = convert(data, "deep")
    assert depth_of(data) == 200_003  # the file, each node and its children list, [] at the end
    nodes = document["trees"][0]["nodes"]
    assert len(nodes) == 100_001 and len(document["trees"][0]["edges"]) == 100_000


def test_the_flat_decoder_reads_what_json_reads() -> None:
    rng = random.Random(7)
    samples = [DEMO.read_text(encoding="utf-8"), "[]", "{}", ' \n[ 1 , -2.5e3 , "x" ]\t',
               '{"a": {"b": [true, false, null, {}]}, "é\\u00e9\\ud83d\\ude00": "\\n\\"\\\\"}',
               "0", "-0.0", '"only a string"', '{"dup": 1, "dup": 2}']
    for _ in range(200):  # random values, compact and indented
        value = _random_value(rng, 4)
        samples.append(json.dumps(value))
        samples.append(json.dumps(value, indent=2, ensure_ascii=False))
    for text in samples:
        assert jsontext._decode_flat(text) == json.loads(text), text[:80]


def test_the_fast_reader_reads_what_json_reads_or_leaves_it_to_the_careful_one() -> None:
    rng = random.Random(8)
    samples = [DEMO.read_text(encoding="utf-8"), "[]", "0", "-0.0", '{"dup": 1, "dup": 2}',
               '["\\ud83d\\ude00", "\\u00e9"]', "[1.5e300, -1e-9, 18446744073709551615]"]
    for _ in range(200):
        value = _random_value(rng, 4)
        samples += [json.dumps(value), json.dumps(value, indent=2, ensure_ascii=False)]
    for text in samples:
        got = jsontext.fast_loads(text.encode())
        if got is not jsontext.CAREFUL:  # (10**20 is left to the careful reading)
            assert got == json.loads(text) and json.loads(jsontext.dumps(got)) == got
    for careful in ["[100000000000000000000]", "[-9223372036854775809]", "[NaN]", "[1e400]",
                    '["\\ud800"]', "\ufeff[1]", "[" * 1100 + "]" * 1100, "[1,]", ""]:
        assert jsontext.fast_loads(careful.encode()) is jsontext.CAREFUL, careful[:30]
    assert json.loads(jsontext.dumps({"n": 10**30, "s": "\ud800"})) == {"n": 10**30,
                                                                         "s": "\ud800"}


def _random_value(rng: random.Random, depth: int) -> Any:
    kind = rng.randrange(7 if depth else 4)
    if kind == 0:
        return rng.choice([None, True, False])
    if kind == 1:
        return rng.choice([0, -1, 10**20, 3.25, -1e-9, 1.5e300])
    if kind in (2, 3):
        return "".join(rng.choice(["a", " ", "\n", '"', "\\", "é", "😀", "\x01", "/"])
                       for _ in range(rng.randrange(6)))
    if kind in (4, 5):
        return {f"k{i}": _random_value(rng, depth - 1) for i in range(rng.randrange(4))}
    return [_random_value(rng, depth - 1) for _ in range(rng.randrange(4))]


@pytest.mark.parametrize("text", ['[1,]', '{"a" 1}', '[1 2]', '{"a": 1,}', '{1: 2}', "[",
                                  '["x', "[tru]", "[1] 2", "", "  ", "{", '{"a"'])
def test_the_flat_decoder_fails_where_json_fails(text: str) -> None:
    with pytest.raises(json.JSONDecodeError) as expected:
        json.loads(text)
    with pytest.raises(json.JSONDecodeError) as got:
        jsontext._decode_flat(text)
    assert (got.value.msg, got.value.pos) == (expected.value.msg, expected.value.pos)


def test_deep_values_keep_their_problems_findable() -> None:
    deep = "[" * 5000 + "1e999" + "]" * 5000
    with pytest.raises(jsontext.JsonProblem) as err:
        jsontext.loads(deep)
    assert err.value.kind == "number" and err.value.pos == 5000
    with pytest.raises(jsontext.JsonProblem) as err:
        jsontext.loads("[" * 5000 + '"\\udc00"' + "]" * 5000)
    assert err.value.kind == "surrogate"
    assert "(4,984 steps left out)" in err.value.path


# ── import and export at depth ───────────────────────────────────────────────


def test_a_deep_story_imports_and_exports_in_every_format(tmp_path: Path) -> None:
    """No step recurses per level: with 250 spare frames, a story 3,000 nodes deep (6,000
    levels of JSON, six times Python's default limit) goes through import, the Open Loom,
    Markdown and Loom Protocol exports, and the Open Loom file back in."""
    depth = 3_000
    ws = fresh(tmp_path / "deep.db")
    with recursion_limit(250):
        report = import_bytes(ws, chain_text(depth).encode(), "deep.json")
        tree = report.trees[0].tree
        leaf = Node.get((Node.tree == tree.id) & (Node.content == "end"))
        assert leaf.depth == depth
        exported = export_tree(ws, tree, "openloom")
        markdown = export_tree(ws, tree, "md", node=leaf)
        protocol = export_tree(ws, tree, "loom")
        again = import_bytes(ws, str(exported).encode(), "again.openloom")
    assert len(json.loads(exported)["trees"][0]["nodes"]) == depth + 1
    assert isinstance(markdown, str) and "w" * depth + "end" in markdown.replace("\n", "")
    assert len(protocol_loads(str(protocol))["trees"][0]["nodes"]) == depth + 1
    copy = again.trees[0].tree
    assert Node.get((Node.tree == copy.id) & (Node.content == "end")).depth == depth


def test_deep_settings_lose_their_secrets_without_recursion() -> None:
    value: Any = {"api_key": "sk-x", "keep": 1}
    for _ in range(50_000):
        value = {"inner": [value], "password": "p"}
    with recursion_limit(100):
        cleaned = drop_secrets(value)
    at = cleaned
    for _ in range(50_000):
        assert set(at) == {"inner"}
        at = at["inner"][0]
    assert at == {"keep": 1}


def test_a_value_nested_past_the_limit_is_refused_by_name(tmp_path: Path) -> None:
    ws = fresh(tmp_path / "x.db")
    nested = "[" * 400 + "]" * 400
    err = _refused(ws, chain_text(2, extra=f', "notes": {nested}'), "LIMIT_EXCEEDED")
    assert f"nests values more than {MAX_DEPTH} levels deep" in err.message
    assert '.extensions.socketteer-loom.notes[0]' in err.message
    ok = "[" * 100 + "]" * 100  # deep, but within the limit: kept and exported
    report = import_bytes(ws, chain_text(2, extra=f', "notes": {ok}').encode(), "ok.json")
    exported = export_tree(ws, report.trees[0].tree, "loom")
    assert "notes" in str(exported)


def _refused(ws: Any, text: str | bytes, code: str, name: str = "bad.json") -> LoomError:
    raw = text.encode("utf-8", "surrogatepass") if isinstance(text, str) else text
    with pytest.raises(LoomError) as err:
        import_bytes(ws, raw, name)
    assert err.value.code == code, err.value.message
    assert "Error" not in err.value.message  # no Python exception names
    return err.value


# ── what JSON allows and Loom cannot keep ────────────────────────────────────


@pytest.mark.parametrize(("text", "code", "words"), [
    ('{"root": {"text": "\\ud800", "children": []}}', "INVALID_SYNTAX",
     "the text at root.text holds \\ud800, half of a UTF-16 surrogate pair"),
    ('{"root": {"text": "ok \\udfff\\ud800", "children": []}}', "INVALID_SYNTAX",
     "surrogate pair without its other half"),
    ('{"root": {"text": "x", "children": [], "\\ud83d": 1}}', "INVALID_SYNTAX",
     "a key at root holds half of a UTF-16 surrogate pair"),
    ('{"root": {"text": "x", "children": [], "n": ' + "9" * 5000 + "}}", "LIMIT_EXCEEDED",
     "bad.json holds a number with 5,000 digits (Loom reads numbers of at most 4,300 "
     "digits) at line 1 column 45"),
    ('{"root": {"text": "x", "children": [],\n "n": 1e400}}', "LIMIT_EXCEEDED",
     "holds the number 1e400 is too large to hold"),
    ('{"root": {"text": "x", "children": [], "n": NaN}}', "INVALID_SYNTAX",
     "holds NaN, which is not a JSON number at line 1 column 45"),
    ('{"root": {"text": "x", "children": [], "n": -Infinity}}', "INVALID_SYNTAX",
     "holds -Infinity, which is not a JSON number"),
])
def test_json_loom_cannot_keep_is_refused_in_words(tmp_path: Path, text: str, code: str,
                                                   words: str) -> None:
    ws = fresh(tmp_path / "x.db")
    err = _refused(ws, text, code)
    assert words in err.message, err.message
    assert err.hint


def test_a_paired_surrogate_escape_is_a_character(tmp_path: Path) -> None:
    ws = fresh(tmp_path / "x.db")
    report = import_data(ws, jsontext.loads(
        '{"root": {"text": "wave \\ud83c\\udf0a", "children": []}}'), name="emoji")
    assert Node.get(Node.tree == report.trees[0].tree.id).content == "wave 🌊"


def test_text_sent_by_an_editor_with_a_lone_surrogate(tmp_path: Path) -> None:
    """The editor sends the file's text; a lone surrogate there is named too."""
    ws = fresh(tmp_path / "x.db")
    err = _refused(ws, '{"root": {"text": "a\ud800", "children": []}}', "INVALID_SYNTAX")
    assert "half of a UTF-16 surrogate pair" in err.message and "offset 20" in err.message


def test_the_cli_says_what_is_wrong(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                    capsys: pytest.CaptureFixture[str]) -> None:
    """The deep-file reproductions, through ``loom import``."""
    monkeypatch.setenv("LOOM_DB", str(tmp_path / "cli.db"))
    monkeypatch.setenv("LOOM_SUBJECT", "none")
    cases = {
        "surrogate.json": ('{"root": {"text": "\\ud800", "children": []}}',
                           "✗ INVALID_SYNTAX: surrogate.json: the text at root.text holds "
                           "\\ud800"),
        "number.json": ('{"root": {"text": "x", "children": [], "n": ' + "9" * 5000 + "}}",
                        "✗ LIMIT_EXCEEDED: number.json holds a number with 5,000 digits"),
        "deep.json": (chain_text(600), '✓ imported "deep" (601 nodes)'),
    }
    for name, (text, expected) in cases.items():
        path = tmp_path / name
        path.write_text(text, encoding="utf-8")
        code = main(["import", str(path)])
        out = capsys.readouterr()
        assert (out.out + out.err).startswith(expected), out
        assert "Traceback" not in out.err and "INTERNAL" not in out.err
        assert code == (0 if expected.startswith("✓") else 1)


# ── the Loom Protocol's bound ────────────────────────────────────────────────


def _nested(levels: int, kind: str) -> Any:
    value: Any = {"leaf": "x"} if kind == "object" else ["x", "y"]
    for i in range(levels - 1):
        value = {"k": value, "n": i} if kind == "object" else [value, i]
    return value


@pytest.mark.parametrize("kind", ["object", "array"])
def test_the_loom_protocol_reads_and_writes_up_to_its_bound(kind: str) -> None:
    """128 levels round-trip with little stack to spare; a deeper value, however deep, is
    a clear error from the encoder and the decoder, never a RecursionError."""
    from loom.protocol import LoomEncodeError, LoomProtocolError, dumps
    from loom.protocol.lexical import MAX_DEPTH

    value = _nested(MAX_DEPTH, kind)
    with recursion_limit(700):
        text = dumps(value)
        assert protocol_loads(text) == value
        for levels in (MAX_DEPTH + 1, 100_000):
            with pytest.raises(LoomEncodeError) as err:
                dumps(_nested(levels, kind))
            assert f"nests more than {MAX_DEPTH} levels deep" in str(err.value)
        # deeper, written by hand (the encoder refuses to); an inline array at the bottom
        # opens no block, so two more levels are sure to pass the decoder's bound
        too_deep = _wrap(_wrap(text, kind), kind)
        with pytest.raises(LoomProtocolError) as perr:
            protocol_loads(too_deep)
        assert f"nests more than {MAX_DEPTH} levels deep" in perr.value.message


def _wrap(text: str, kind: str) -> str:
    """Loom Protocol text one level deeper: under a key, or as an array's only item."""
    indented = text.replace("\n", "\n  ")
    return f"k:\n  {indented}" if kind == "object" else f"- {indented}"


def test_running_out_of_memory_is_a_limit_not_a_crash(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """MemoryError is named in words, by the JSON reader and by the executor's boundary."""
    from loom.app import open_app
    from loom.commands import syntax

    def no_memory(*_: Any, **__: Any) -> Any:
        raise MemoryError

    ws = fresh(tmp_path / "x.db")
    size = len(chain_text(1))
    monkeypatch.setattr(jsontext, "fast_loads", no_memory)  # orjson's reading
    err = _refused(ws, chain_text(1), "LIMIT_EXCEEDED", name="big.json")
    assert err.message == f"there is not enough memory to read big.json ({size} bytes)"
    monkeypatch.setattr(jsontext, "fast_loads", lambda raw: jsontext.CAREFUL)
    monkeypatch.setattr(jsontext, "loads", no_memory)  # the careful reading
    err = _refused(ws, chain_text(1), "LIMIT_EXCEEDED", name="big.json")
    assert err.message == f"there is not enough memory to read big.json ({size} bytes)"
    ws.db.close()
    app = open_app(tmp_path / "y.db", use_default_subject=False)
    monkeypatch.setattr("loom.interchange.import_bytes", no_memory)
    result = app.executor.execute(syntax.Import(content="{}", name="x.json"),
                                  app.actor(None))
    assert not result.ok and result.code == "LIMIT_EXCEEDED"
    assert result.text.startswith("✗ LIMIT_EXCEEDED: there is not enough memory to import")
