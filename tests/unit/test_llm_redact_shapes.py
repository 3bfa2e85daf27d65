"""The pattern table against a sample of every shape it claims, and against text that must
come through untouched: prose, ids, hashes, the demo tree, a real imported tree, the seeds."""

from __future__ import annotations

import hashlib
import json
import uuid

import pytest

from loom.model.ids import local_id_candidates, new_ulid
from loom.redact import (
    PATTERNS,
    PLACEHOLDER,
    find_spans,
    forget_secrets,
    redact,
    redact_obj,
    redact_pieces,
    register_secret,
)
from tests.conftest import FIXTURES, SHARED
from tests.redaction_samples import SAMPLES

BY_NAME = {p.name: p for p in PATTERNS}


@pytest.fixture(autouse=True)
def _clean_registry():
    forget_secrets()
    yield
    forget_secrets()


def test_the_table_has_at_least_thirty_named_patterns_each_with_a_sample():
    assert len(PATTERNS) >= 30
    assert len(BY_NAME) == len(PATTERNS), "pattern names are unique"
    assert set(BY_NAME) == {s.pattern for s in SAMPLES}, "every pattern has a sample"


@pytest.mark.parametrize("sample", SAMPLES, ids=lambda s: s.pattern)
def test_each_pattern_finds_its_own_sample(sample):
    pattern = BY_NAME[sample.pattern]
    assert any(t in sample.text.lower() for t in pattern.triggers), "a trigger gates it"
    at = sample.text.index(sample.secret)
    spans = []
    for m in pattern.regex.finditer(sample.text):
        spans.append(m.span("secret") if "secret" in pattern.regex.groupindex else m.span())
    assert any(s <= at and at + len(sample.secret) <= e for s, e in spans), spans


@pytest.mark.parametrize("sample", SAMPLES, ids=lambda s: s.pattern)
@pytest.mark.parametrize("context", ["{}", "say {} now", "({})", "key: {}\n", '"{}"'])
def test_every_shape_is_redacted_in_context(sample, context):
    text = context.format(sample.text)
    out = redact(text)
    assert sample.secret not in out
    assert PLACEHOLDER in out
    assert redact(out) == out, "idempotent"


def test_all_shapes_in_one_text_and_json():
    text = "\n".join(f"{i}. {s.text}" for i, s in enumerate(SAMPLES))
    out = redact(text)
    for s in SAMPLES:
        assert s.secret not in out
    assert redact(out) == out
    # The same inside a JSON payload (escaped newlines, quotes), walked or as text.
    payload = {"messages": [{"role": "user", "content": text}]}
    walked = json.dumps(redact_obj(payload))
    as_text = redact(json.dumps(payload))
    for s in SAMPLES:
        for form in (s.secret, json.dumps(s.secret)[1:-1]):
            assert form not in walked
            assert form not in as_text
    json.loads(as_text)  # still valid JSON


def test_credential_fields_keep_their_name():
    assert redact("Authorization: Bearer abc.def-ghi_123") == "Authorization: Bearer [REDACTED]"
    assert redact('{"api_key": "opaque"}') == '{"api_key": "[REDACTED]"}'
    assert redact("OPENAI_API_KEY=opaque1 rest") == "OPENAI_API_KEY=[REDACTED] rest"
    assert redact("redis://:s3cr3t@cache:6379/0") == "redis://:[REDACTED]@cache:6379/0"
    # Placeholders and empty values are not secrets.
    for text in ('{"api_key": null}', "password=None", '{"Authorization": "Basic ..."}',
                 'api_key="[REDACTED]"', "password: <your password>"):
        assert redact(text) == text


def test_a_key_cut_off_at_the_end_of_a_reply():
    key = next(s.secret for s in SAMPLES if s.pattern == "openai_project_key")
    cut = f"The key was {key[:14]}"
    assert key[:14] in redact(cut)  # mid-text this is not yet a key…
    assert key[:14] not in redact(cut, final=True)  # …but at the end of a reply it is
    register_secret("loomwire-Distinctive-Key-7f3a9c2e51")
    assert redact("echo: loomwire-Distin", final=True) == f"echo: {PLACEHOLDER}"
    assert redact("ordinary words at the end", final=True) == "ordinary words at the end"


def test_redact_pieces_finds_a_key_split_across_pieces():
    key = next(s.secret for s in SAMPLES if s.pattern == "github_token")
    pieces = ["token: ", key[:5], key[5:20], key[20:], " done"]
    out, touched = redact_pieces(pieces)
    assert "".join(out) == "token: [REDACTED] done"
    assert touched == [False, True, True, True, False]
    assert out[1] == PLACEHOLDER and out[2] == out[3] == ""
    clean = ["no ", "secrets ", "here"]
    assert redact_pieces(clean) == (clean, [False, False, False])


# -- false positives ---------------------------------------------------------------------

PROSE = """\
The house stood empty at the end of the lane. She asked the notary for the keys; he said
the secret was in the desk-bound ledger, a token of her mother's trust. Asia, Akiane and
Asiatic lilies lined the path. Risk-averse, task-oriented, she kept a skeleton key and a
bearer bond, the bearer of responsibilities nobody wanted. "Password?" he asked. She
shrugged: the private key to the house was under the mat, the API keys in the keyring.
Basic instinct. Token economy. A pass-through, a passport, a by-pass. Sketch-book, ask-me.
Set max_tokens: 50, temperature=0.7, top_p = 0.9, stop=["\\n"] and n:3 tokens:40.
→ continue from b3k9 n:3 tokens:40
→ annotate a7x2 "this is where the tone shifts"
→ link a7x2 to doc:"character notes" §motivation
See https://example.com:8080/docs/intro?page=2&sort=asc#top and mailto:marie@example.com,
git@github.com:socketteer/loom.git, ssh://git@example.com:22/repo, http://localhost:8000/v1.
It was 10:30 on 2024-05-01; version 2.0.1; ratio 3:2; key=value pairs; {"key": "value"}.
Skipping SKU-1234 and SK-2; sk8 park; the ghost_writer; hf-transfer; npm install; pypi-server.
"""


def ids_and_hashes() -> list[str]:
    ulids = [new_ulid() for _ in range(200)]
    local_ids = [c for u in ulids for c in local_id_candidates(u)[:2]]
    hashes = [hashlib.sha256(str(i).encode()).hexdigest() for i in range(200)]
    hashes += [hashlib.sha1(str(i).encode()).hexdigest() for i in range(50)]
    hashes += [hashlib.sha256(str(i).encode()).hexdigest().upper() for i in range(50)]
    uuids = [str(uuid.UUID(int=i * 7919 + 1)) for i in range(50)]
    return ulids + local_ids + hashes + uuids + [f"sha256:{h}" for h in hashes[:10]]


def test_prose_commands_and_urls_are_untouched():
    assert find_spans(PROSE) == []
    assert redact(PROSE, final=True) == PROSE


def test_ids_and_hashes_are_untouched():
    values = ids_and_hashes()
    text = " ".join(values)
    assert find_spans(text, final=True) == []
    for v in values:
        assert redact(v, final=True) == v


def test_the_demo_tree_is_untouched(app):
    from loom.demo import create_demo
    from loom.interchange.markdown import export_markdown
    from loom.interchange.openloom import export_openloom
    from loom.protocol import dumps
    from loom.store.schema import Document, Node

    ws = app.ws
    tree = create_demo(ws)
    texts: list[str] = []
    for node in Node.select().where(Node.tree == tree.id):
        texts += [node.content, node.summary or "", node.id, node.local_id, node.content_hash]
    texts += [d.content for d in Document.select()]
    _, tip = ws.position(ws.human(), tree)
    data = export_openloom(ws, tree)
    texts += [export_markdown(ws, tree, tip), json.dumps(data, ensure_ascii=False), dumps(data)]
    assert len(texts) > 20
    for text in texts:
        assert find_spans(text, final=True) == [], text[:200]


def test_a_real_imported_tree_is_untouched():
    """socketteer/loom's demo file: 764 nodes of human and model writing."""
    data = json.loads((FIXTURES / "socketteer-loom-demo.json").read_text(encoding="utf-8"))
    strings: list[str] = []

    def walk(value: object) -> None:
        if isinstance(value, dict):
            strings.extend(str(k) for k in value)
            for v in value.values():
                walk(v)
        elif isinstance(value, list):
            for v in value:
                walk(v)
        elif isinstance(value, str):
            strings.append(value)

    walk(data)
    assert sum(len(s) for s in strings) > 300_000
    changed = [s[:120] for s in strings if redact(s, final=True) != s]
    assert changed == []


def test_the_seeds_and_notes_are_untouched():
    """The specification texts: 90 kB of prose, examples, JSON and code."""
    files = sorted((SHARED / "seeds").glob("*.txt")) + sorted(SHARED.glob("*.md"))
    assert files
    for path in files:
        text = path.read_text(encoding="utf-8")
        assert find_spans(text) == [], path.name
