"""The pure parts of the buffer: node ranges through edits, pending edits, the lines a
human typed, and positions in VS Code's (utf-16) and Neovim's (utf-8) encodings."""

from __future__ import annotations

import pytest

from loom.lsp.buffer import BufferSession, Segment
from loom.lsp.features.command_lines import candidate_lines
from loom.lsp.positions import TextDoc

ENCODINGS = ("utf-16", "utf-8")


def _session(encoding: str = "utf-16") -> BufferSession:
    parts = ["Root. ", "→ model wrote︱this. ", "Human end."]
    segs, offset = [], 0
    for i, p in enumerate(parts):
        segs.append(Segment(f"n{i}", f"n{i}", i == 1, offset, offset + len(p), p))
        offset += len(p)
    return BufferSession("".join(parts), segs, encoding)


@pytest.mark.parametrize("encoding", ENCODINGS)
def test_typing_inside_a_node_makes_it_pending_and_moves_the_rest(encoding: str) -> None:
    s = _session(encoding)
    at = s.text.index("wrote") + len("wrote")
    edit = s.apply(at, at, " quickly")
    assert edit.touched == [1] and not edit.working
    assert s.pending() == [1]
    assert s.segment_text(1) == "→ model wrote quickly︱this. "
    assert s.segment_text(2) == "Human end."  # moved, unchanged


@pytest.mark.parametrize("encoding", ENCODINGS)
def test_typing_at_the_end_goes_to_the_working_buffer(encoding: str) -> None:
    s = _session(encoding)
    end = len(s.text)
    edit = s.apply(end, end, " And more.")
    assert edit.working and s.working_text == " And more." and s.pending() == []


def test_undoing_an_edit_makes_the_node_clean_again() -> None:
    s = _session()
    at = s.text.index("Root.") + 4
    s.apply(at, at, "!")
    assert s.pending() == [0]
    s.apply(at, at + 1, "")
    assert s.pending() == []


def test_a_selection_across_two_nodes_edits_both() -> None:
    s = _session()
    start, end = s.text.index("Root"), s.text.index("model")
    edit = s.apply(start, end, "X")
    assert edit.touched == [0, 1]
    assert s.segment_text(0) == "X"  # the first node takes the new text
    assert s.segment_text(1) == "model wrote︱this. "  # the second keeps its tail
    assert s.pending() == [0, 1]


@pytest.mark.parametrize("encoding", ENCODINGS)
def test_positions_round_trip_past_multibyte_characters(encoding: str) -> None:
    doc = TextDoc("→ a︱b\n→ c", encoding)
    for offset in range(len(doc.text) + 1):
        line, char = doc.position_at(offset)
        assert doc.offset_at(line, char) == offset
    # "→" is 1 unit in utf-16 and 3 bytes in utf-8
    assert doc.position_at(2) == (0, 2 if encoding == "utf-16" else 4)


def test_only_lines_the_human_added_are_commands() -> None:
    original = "Prose.\n→ view a7x2\n"
    segs = [Segment("n0", "n0", False, 0, len(original), original)]
    text = original + "→ annotate a7x2 \"typed\"\n-> view b3k9"
    assert candidate_lines(text, segs) == [2, 3]  # the node's own line is prose
    # a command typed into the node: only the added copy counts
    edited = "Prose.\n→ view a7x2\n→ view a7x2\n"
    segs = [Segment("n0", "n0", False, 0, len(edited), original)]
    assert candidate_lines(edited, segs) == [2]


@pytest.mark.parametrize("encoding", ENCODINGS)
def test_keys_typed_on_a_long_path_give_the_same_ranges_as_moving_each(encoding: str) -> None:
    # Moves of the ranges after a typed key are deferred: reading them, from
    # any node and after keys in several nodes and backspaces, gives the true ranges.
    parts = [f"node {i} text. " for i in range(300)]
    segs, offset = [], 0
    for i, p in enumerate(parts):
        segs.append(Segment(f"n{i}", f"n{i}", i % 2 == 1, offset, offset + len(p), p))
        offset += len(p)
    s = BufferSession("".join(parts), segs, encoding)
    expected = [len(p) for p in parts]
    for node, keys in ((150, "abc"), (150, "d"), (20, "→x"), (299, "yz"), (150, "")):
        for key in keys:
            at = sum(expected[:node]) + 3
            s.apply(at, at, key)
            expected[node] += 1
        if not keys:  # a backspace
            at = sum(expected[:node]) + 3
            s.apply(at - 1, at, "")
            expected[node] -= 1
        assert s.committed_end == sum(expected)
        assert s.segment_at(sum(expected[:node]) + 1) == node
    starts = [sum(expected[:i]) for i in range(len(parts))]
    assert [(x.start, x.end) for x in s.segments] == [
        (a, a + n) for a, n in zip(starts, expected, strict=True)]
    assert s.pending() == [20, 150, 299]


def test_undoing_a_deletion_of_everything_gives_each_node_its_text_back() -> None:
    """Issue 47, item 1: ``ggdG`` then ``u`` in Neovim is one deletion of the whole text,
    then one insertion of it at offset 0. Before, the insertion went to the working buffer:
    every node read as emptied and the story as one new node typed at the end."""
    s = _session()
    whole = s.text
    s.apply(0, len(whole), "")
    assert s.pending() == [0, 1, 2]
    s.apply(0, 0, whole)
    assert s.pending() == [] and s.working_text == ""
    assert [s.segment_text(i) for i in range(3)] == ["Root. ", "→ model wrote︱this. ",
                                                      "Human end."]


def test_an_undo_across_a_node_boundary_maps_back_onto_both_nodes() -> None:
    s = _session()
    cut = s.text.index("wrote")
    gone = s.text[s.text.index("Root") + 2:cut]  # the end of n0 and the start of n1
    start = s.text.index("Root") + 2
    s.apply(start, cut, "")
    assert s.pending() == [0, 1]
    s.apply(start, start, gone)  # the undo: an insertion at the boundary
    assert s.pending() == []
    assert s.segment_text(0) == "Root. " and s.segment_text(1).startswith("→ model")


def test_text_typed_after_a_restored_buffer_stays_working_text() -> None:
    s = _session()
    whole = s.text
    s.apply(0, len(whole), "")
    s.apply(0, 0, whole + " More.")  # restored, and more typed in one change
    assert s.pending() == [] and s.working_text == " More."


def test_a_real_rewrite_stays_pending() -> None:
    s = _session()
    start = s.text.index("Human")
    s.apply(start, len(s.text), "Someone else's end.")
    assert s.pending() == [2]
