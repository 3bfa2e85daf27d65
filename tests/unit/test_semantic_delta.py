"""Semantic tokens as an edit of the previous result (``full/delta``)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from loom.lsp.features.semantic_delta import SemanticResults, common_edit

ints = st.lists(st.integers(min_value=0, max_value=3), max_size=3000)


@given(ints, st.lists(st.tuples(st.integers(0, 3000), st.integers(0, 5), ints.map(
    lambda x: x[:6])), max_size=4))
def test_the_edit_turns_the_old_result_into_the_new(old: list[int], changes: list) -> None:  # type: ignore[type-arg]
    new = list(old)
    for at, cut, data in changes:
        at = min(at, len(new))
        new[at:at + cut] = data
    start, deleted, data = common_edit(old, new)
    assert old[:start] + data + old[start + deleted:] == new
    assert len(data) <= len(new)


def test_a_delta_needs_the_last_result_id() -> None:
    results = SemanticResults()
    rid, _ = results.full("u", [0, 1, 2, 3, 4] * 400)
    new = [0, 1, 2, 3, 4] * 399 + [0, 1, 9, 3, 4]
    rid2, edit = results.delta("u", rid, new)
    assert rid2 != rid and edit == (1997, 1, [9])
    assert results.delta("u", rid, new)[1] is None  # not the last one any more: all of it
    results.forget("u")
    assert results.delta("u", rid2, new)[1] is None
