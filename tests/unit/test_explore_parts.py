"""``→ explore``'s pure parts: the grammar and canonical form, the judge's reply read into a
score, the score in the tree overview."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

import pytest

from loom.agent.explore.judge import Verdict, messages, parse
from loom.commands import syntax
from loom.commands.canonical import to_text
from loom.commands.context import Actor, ExploreRequest, ExploreSummary
from loom.commands.executor import parse_line
from loom.commands.help import render_help_tool
from loom.model import marks
from loom.render import overview
from loom.store.schema import Tree


@pytest.mark.parametrize(("line", "canonical"), [
    ("→ explore", "→ explore"),
    ('→ explore from a7x2 depth:3 n:2 judge:"vivid and odd"',
     '→ explore from a7x2 depth:3 n:2 judge:"vivid and odd"'),
    ('→ explore a7x2 "vivid" budget:5000 threshold:6',
     '→ explore from a7x2 budget:5000 threshold:6 judge:"vivid"'),
    ("→ explore end", "→ explore end"),
    ("→ explore finish", "→ explore end"),
    ("→ explore stop", "→ explore end"),  # the old spelling (read as → explore end)
    # stop: is continue's stop string, passed on to each continue (issue 44 item 6)
    ('→ explore from a7x2 stop:"." n:2', '→ explore from a7x2 n:2 stop:"."'),
    ('→ explore until:"\\n\\n" depth:2', '→ explore depth:2 stop:"\\n\\n"'),
    ("→ autoloom levels:2 width:3", "→ explore depth:2 n:3"),
    ('explore from a7x2 rubric:"true to Marie"', '→ explore from a7x2 judge:"true to Marie"'),
    # continue's models and sampling, as continue writes them
    ("→ explore depth:2 temp:0.7 model:haiku max-tokens:40",
     "→ explore depth:2 model:haiku tokens:40 temperature:0.7"),
    ('→ explore models:a,b seed:3 top_p:0.9 min_p:0.05 bias:"50256:-100"',
     '→ explore models:a,b top_p:0.9 min_p:0.05 seed:3 logit_bias:"50256:-100"'),
])
def test_parses_and_reads_back(line: str, canonical: str) -> None:
    cmd = parse_line(line)
    assert isinstance(cmd, syntax.Explore), cmd
    assert to_text(cmd) == canonical
    assert parse_line(to_text(cmd)) == cmd


@pytest.mark.parametrize(("line", "message"), [
    ("→ explore depth:x", 'depth must be a whole number, got "x"'),
    ("→ explore end a7x2", "explore end takes nothing else"),
    ('→ explore "a" "b"', "explore takes one rubric"),
    ("→ explore model:a models:b", "model: and models: both name the models"),
    ("→ explore temperature:hot", 'temperature must be a number, got "hot"'),
    ('→ explore end stop:"."', "explore end takes nothing else"),
])
def test_mistakes_are_said(line: str, message: str) -> None:
    got = parse_line(line)
    assert isinstance(got, syntax.ParseError) and got.message == message


def test_help_page() -> None:
    page = render_help_tool("explore") or ""
    assert page.startswith("explore — Let the collaborator explore")
    assert "→ explore end" in page


@pytest.mark.parametrize(("reply", "verdict"), [
    ("7/10 — vivid and odd", Verdict(7, "vivid and odd")),
    ("Score: 8 - strong image", Verdict(8, "strong image")),
    ("**6/10** reads well", Verdict(6, "reads well")),
    ("I like it. 9 out of 10.", Verdict(9, "I like it")),
    ("Rating: 7/10, vivid", Verdict(7, "vivid")),
    ("3/10\nflat and repetitive", Verdict(3, "flat and repetitive")),
    ("<think>2/10?</think>5/10 — fine", Verdict(5, "fine")),
    ("7.6/10 — close", Verdict(8, "close")),
    ("10 - perfect", Verdict(10, "perfect")),
])
def test_the_judges_reply_read(reply: str, verdict: Verdict) -> None:
    assert parse(reply) == verdict


@pytest.mark.parametrize("reply", ["This is great", "15 - wow", "2026 was a year", ""])
def test_a_reply_without_a_score_is_none(reply: str) -> None:
    assert parse(reply) is None


@pytest.mark.parametrize(("reply", "verdict"), [
    # issue 47: the bundled judge answered "11/10 — …", and it counted as no score
    ("11/10 — The human asked you to tell them", Verdict(10, "The human asked you to tell "
                                                        "them", 11.0)),
    ("12 out of 10, a triumph", Verdict(10, "a triumph", 12.0)),
])
def test_a_score_out_of_ten_above_ten_is_clamped(reply: str, verdict: Verdict) -> None:
    assert parse(reply) == verdict


def test_the_request_holds_the_rubric_the_text_and_the_branch() -> None:
    sent = messages("surprising", "x" * 5_000 + "The keeper climbed.", " The lamp was out.")
    assert sent[0].role == "system" and "N/10" in sent[0].content
    # one worked example (user, assistant), then the branch to judge
    assert [m.role for m in sent] == ["system", "user", "assistant", "user"]
    assert parse(sent[2].content) is not None
    user = sent[3].content
    assert user.startswith("Rubric: surprising\n")
    assert "…" in user and "The keeper climbed.\n>>>" in user  # the end of a long text
    assert "<<<\n The lamp was out.\n>>>" in user
    assert len(user) < 3_400


@dataclass
class _Row:
    id: str
    label: str
    text: str
    by_model: bool
    bookmarked: bool
    extra: str | None
    parent: str | None = None


def test_the_overview_shows_the_score() -> None:
    judged = json.dumps({"judge": {"score": 7, "reason": "alive", "rubric": "r"}})
    rows = {"r": _Row("r", "r001", "The keeper climbed.", False, False, None),
            "a": _Row("a", "a7x2", "The lamp was out.", True, False, judged, "r"),
            "b": _Row("b", "b3k9", "Fog.", True, False, None, "r")}
    drawn = overview.draw("Lighthouse", "buffer", "r", rows, {"r": ["a", "b"]}, ["r", "a"],
                          "a").text
    assert "[a7x2]* 7/10 (alive) › The lamp was out." in drawn
    assert "[b3k9] › Fog." in drawn
    assert marks.judge_line(judged) == "7/10 — alive"
    assert marks.judge_line(None) is None


class _EndedMeanwhile:
    """An explorer whose exploration's last step ended just as the stop was asked."""

    def start(self, request: ExploreRequest) -> ExploreSummary:
        raise AssertionError("not started here")

    def stop(self, tree: Tree) -> ExploreSummary | None:
        return ExploreSummary(source="a7x2", made=4, scored=4, pruned=1, spent=900,
                              budget=20_000, ended="no branch reached 5/10 at level 2")


def test_a_stop_says_when_the_exploration_had_ended_on_its_own(app) -> None:  # type: ignore[no-untyped-def]
    ws = app.ws
    human = ws.human()
    tree = ws.create_tree("Lighthouse", "buffer", root_content="The keeper climbed.",
                          author=human)
    app.executor.explorer = _EndedMeanwhile()
    result = app.executor.execute("→ explore end", Actor(human, tree))
    assert result.text == ("✓ the exploration from [a7x2] had ended before the stop (no branch "
                           "reached 5/10 at level 2): 4 nodes made, 4 scored, 1 pruned · 900 "
                           "of 20,000 tokens")
    assert result.data["stopped"] is False


def test_view_and_the_overview_show_the_judges_score_reason_and_pruning(app) -> None:  # type: ignore[no-untyped-def]
    """README: "the score and its reason in hover and the overview"; and a collaborator or
    an MCP agent reads the judge's work with → view (before: neither score nor pruned
    state there, and the overview's score without its reason)."""
    from loom.store import reader

    ws = app.ws
    human = ws.human()
    tree = ws.create_tree("Lighthouse", "buffer", root_content="The keeper climbed.",
                          author=human)
    root = ws.node(tree.root)
    kept = ws.add_node(tree, root, " The lamp was out.", human)
    weak = ws.add_node(tree, root, " Fog, fog.", human)
    reader.set_judgement(ws, ws.node(kept.id), human, 7, "alive, and it opens a door", "r")
    reader.set_judgement(ws, ws.node(weak.id), human, 2, "repeats itself", "r")
    actor = Actor(human, tree)
    assert app.executor.execute(f"→ prune {weak.local_id}", actor).ok

    viewed = app.executor.execute(f"→ view {kept.local_id}", actor).text
    assert "Judge: 7/10 — alive, and it opens a door" in viewed, viewed
    assert "pruned" not in viewed
    pruned = app.executor.execute(f"→ view {weak.local_id}", actor).text
    assert "Judge: 2/10 — repeats itself" in pruned, pruned
    assert (f"Pruned: hidden from views, search and model context (→ unprune "
            f"{weak.local_id} shows it again)") in pruned, pruned
    plain = app.executor.execute(f"→ view {root.local_id}", actor).text
    assert "Judge:" not in plain and "Pruned" not in plain

    drawn = app.executor.execute("→ tree with-text", actor).text
    assert re.search(rf"\[{kept.local_id}\]\*? 7/10 \(alive, and it opens a door\) The lamp "
                     "was out.", drawn), drawn
