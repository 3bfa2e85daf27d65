"""The three-way merge that re-applies a human's unsaved edit onto another's version."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from loom.lsp.merge import merge3, tokens

BASE = "The house stood empty at the end of the lane."


def test_edits_of_different_words_merge() -> None:
    mine = "The old house stood empty at the end of the lane."
    theirs = "The house stood empty at the end of the long lane."
    assert merge3(BASE, mine, theirs) == "The old house stood empty at the end of the long lane."


def test_edits_of_the_same_word_conflict() -> None:
    assert merge3(BASE, BASE.replace("empty", "silent"),
                  BASE.replace("empty", "deserted")) is None


def test_an_insertion_touching_their_change_conflicts() -> None:
    # "stood" replaced by them, "quietly" inserted right after it by me: ambiguous
    assert merge3(BASE, BASE.replace("stood", "stood quietly"),
                  BASE.replace("stood", "sat")) is None


def test_the_same_edit_on_both_sides_counts_once() -> None:
    both = BASE.replace("lane", "road")
    assert merge3(BASE, both, both) == both
    assert merge3(BASE, both + " Rain.", both) == both + " Rain."


def test_one_sided_changes_are_taken_whole() -> None:
    assert merge3(BASE, BASE, "Something else.") == "Something else."
    assert merge3(BASE, "Mine only.", BASE) == "Mine only."


def test_edits_at_both_ends_of_a_node_merge() -> None:
    mine = "At dusk, " + BASE
    theirs = BASE[:-1] + ", overgrown."
    assert merge3(BASE, mine, theirs) == "At dusk, " + BASE[:-1] + ", overgrown."


words = st.lists(st.sampled_from(["a", "bb", "ccc", " ", "\n", ".", "é", "𝄞"]), max_size=12)


@given(words)
def test_tokens_join_back_to_the_text(parts: list[str]) -> None:
    text = "".join(parts)
    assert "".join(tokens(text)) == text


@given(words, words, words)
def test_a_merge_does_not_depend_on_whose_edit_is_whose(base: list[str], mine: list[str],
                                                          theirs: list[str]) -> None:
    b, m, t = "".join(base), "".join(mine), "".join(theirs)
    assert merge3(b, m, t) == merge3(b, t, m)
    assert merge3(b, m, b) == m and merge3(b, b, t) == t
