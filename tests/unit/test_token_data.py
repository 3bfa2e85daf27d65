"""Per-token data: laying provider entries over a node's text, the compact
stored form, and following a node's content through splits and human edits."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from loom.model import tokens as T


def entry(token: str, lp: float | None, *alts: tuple[str, float]) -> dict:
    return {"token": token, "logprob": lp,
            "top_logprobs": [{"token": a, "logprob": x} for a, x in alts]}


def test_align_keeps_tokens_that_spell_the_text_and_the_top_k_alternatives() -> None:
    got = T.align([
        entry("The", -0.1, ("A", -2.5), ("The", -0.1), ("One", -3.0)),
        entry(" cat", -1.2, (" dog", -0.9), (" cat", -1.2)),
        entry(" sat", None),
    ], "The cat sat.", k=2)
    assert [(t.start, t.text) for t in got] == [(0, "The"), (3, " cat"), (7, " sat")]
    assert got[0].alternatives == (("The", -0.1), ("A", -2.5))  # most likely first, k of them
    assert got[1].alternatives == ((" dog", -0.9), (" cat", -1.2))
    assert got[2].logprob is None and got[2].probability is None
    assert got[0].probability == pytest.approx(math.exp(-0.1))


def test_align_stops_at_the_first_token_that_is_not_the_text() -> None:
    # the provider's last token was cut by a stop sequence; a redacted one differs too
    got = T.align([entry("Hel", -1), entry("", -1), entry("lo", -1), entry(" wor", -1),
                   entry("ld", -1)], "Hello wo")
    assert "".join(t.text for t in got) == "Hello"
    assert T.align([entry("sk-abc", -1)], "[REDACTED]") == []
    assert T.align(None, "x") == [] and T.align([{"token": 3}], "3") == []


def test_stored_form_round_trips_and_is_small() -> None:
    text, tokens, pos = "", [], 0
    words = [" the", " house", " was", " empty", ".", " She", "\u00e9t\u00e9", " 🐈", "\x00"]
    for i in range(1000):
        w = words[i % len(words)]
        alts = tuple((words[(i + j) % len(words)], -0.5 * j - 0.25) for j in range(5))
        tokens.append(T.Token(pos, w, -((i * 37) % 4000) / 1000, alts))
        pos += len(w)
        text += w
    data = T.encode(tokens, 5)
    k, back = T.decode(data)
    assert k == 5 and len(back) == 1000
    for a, b in zip(tokens, back, strict=True):
        assert (a.start, a.text) == (b.start, b.text)
        assert b.logprob == pytest.approx(a.logprob, abs=5e-4)
        assert [x for x, _ in a.alternatives] == [x for x, _ in b.alternatives]
    assert len(data) < 20_000  # vs ~250 bytes a token as JSON
    assert T.decode_runs(data) == T.runs(back)


def test_unknown_probabilities_and_damage() -> None:
    tokens = [T.Token(0, "a", None), T.Token(1, "b", -0.01)]
    back = T.decode(T.encode(tokens, 3))[1]
    assert back[0].logprob is None and back[1].logprob == pytest.approx(-0.01)
    assert T.runs(back) == [(1, 2, 0)]  # unknown: not coloured
    with pytest.raises(ValueError):
        T.decode(b"nope")
    with pytest.raises(ValueError):
        T.decode(T.encode(tokens, 3)[:-4])


def test_split_keeps_whole_tokens_on_each_side() -> None:
    tokens = T.align([entry("ab", -1), entry("cd", -1), entry("ef", -1)], "abcdef")
    head, tail = T.split(tokens, 4)
    assert [(t.start, t.text) for t in head] == [(0, "ab"), (2, "cd")]
    assert [(t.start, t.text) for t in tail] == [(0, "ef")]
    head, tail = T.split(tokens, 3)  # through "cd": it belongs to neither half
    assert [t.text for t in head] == ["ab"] and [(t.start, t.text) for t in tail] == [(1, "ef")]


def test_an_edited_version_has_none_for_the_characters_a_human_changed() -> None:
    tokens = T.align([entry("The", -1), entry(" cat", -1), entry(" sat", -1),
                      entry(" down", -1)], "The cat sat down")
    got = T.through_edit(tokens, "The cat sat down", "The old cat sat quietly down")
    assert [(t.start, t.text) for t in got] == [(0, "The"), (7, " cat"), (11, " sat")]
    edited = "The old cat sat quietly down"
    assert all(edited[t.start:t.end] == t.text for t in got)
    assert T.through_edit(tokens, "x", "x") == tokens


def test_token_at_and_buckets() -> None:
    tokens = T.align([entry("ab", math.log(0.95)), entry("cd", math.log(0.6)),
                      entry("ef", math.log(0.3)), entry("gh", math.log(0.1)),
                      entry("ij", math.log(0.01)), entry("kl", math.log(0.97))],
                     "abcdefghijkl")
    assert T.token_at(tokens, 3).text == "cd" and T.token_at(tokens, 12) is None
    assert [T.bucket(t.probability) for t in tokens] == [0, 1, 2, 3, 4, 0]
    assert T.BUCKET_NAMES[4] == "probVeryLow"
    assert T.runs(tokens) == [(0, 2, 0), (2, 4, 1), (4, 6, 2), (6, 8, 3), (8, 10, 4),
                              (10, 12, 0)]


@given(st.lists(st.tuples(st.text(min_size=1, max_size=4),
                          st.floats(min_value=-30, max_value=0)), max_size=40),
       st.integers(min_value=0, max_value=160))
def test_split_and_store_follow_the_text(pieces: list[tuple[str, float]], at: int) -> None:
    text = "".join(p for p, _ in pieces)
    tokens = T.align([entry(p, lp, (p, lp)) for p, lp in pieces], text)
    assert "".join(t.text for t in tokens) == text
    back = T.decode(T.encode(tokens, 5))[1]
    assert [(t.start, t.text) for t in back] == [(t.start, t.text) for t in tokens]
    at = min(at, len(text))
    head, tail = T.split(back, at)
    assert all(text[t.start:t.end] == t.text for t in head)
    assert all(text[at:][t.start:t.end] == t.text for t in tail)
