"""Authorship of edited model text at word granularity (issue 47: "said" → "whispered"
was coloured per letter, `whi` human, `s` model, `pere` human, `d` model)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from loom.lsp.features.decorations import _human_spans
from loom.model.worddiff import changed, pieces


def test_a_word_typed_over_another_is_the_humans_whole() -> None:
    original = "“Come in,” she said, and the door opened."
    edited = "“Come in,” she whispered, and the door opened."
    at = edited.index("whispered")
    assert changed(original, edited) == ((at, at + len("whispered")),)
    assert _human_spans(original, edited) == ((at, at + len("whispered")),)


def test_inserted_words_and_unchanged_neighbours() -> None:
    original, edited = "The cat sat down", "The old cat sat quietly down"
    spans = [edited[a:b] for a, b in changed(original, edited)]
    assert [s.strip() for s in spans] == ["old", "quietly"]
    assert changed("same text", "same text") == ()
    assert changed("", "new") == ((0, 3),)
    assert changed("gone", "") == ()  # a deletion leaves nothing of the human's to colour


@given(st.text(max_size=60), st.text(max_size=60))
def test_spans_are_whole_pieces_of_the_edited_text_in_order(a: str, b: str) -> None:
    assert "".join(pieces(b)) == b
    bounds = {0}
    pos = 0
    for p in pieces(b):
        pos += len(p)
        bounds.add(pos)
    last = 0
    for start, end in changed(a, b):
        assert last <= start < end <= len(b)
        assert start in bounds and end in bounds  # never inside a word
        last = end
