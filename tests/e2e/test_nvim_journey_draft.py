"""The writer's hour, second pass (issue 47), as a fiction writer new to Loom goes through
it: ``loom demo`` in a real terminal (tmux), the bundled local model, keys typed at typing
speed, the screen read after every step and the tree read from the database.

Each step failed before:
- ``]n``, ``[n``, ``]n``: the third answered that the parent has no siblings (item 4);
- ``→ continue n:0`` made three continuations (item 3);
- a typo's reading, and all but the first line of ``→ view``, showed only in ``:Loom
  messages`` (item 6);
- a failed ``→ continue`` took the writer's line away and left its ``E`` on prose (item 5);
- ``:Loom explore`` committed unsaved typing without a word (item 7);
- ``ggdG`` then ``:w`` emptied every node on the path without asking, and the undo that
  followed committed the story again as one new node; now the save asks, the undo is the
  path again with nothing to commit, most of the path rewritten can become a new branch,
  and emptied versions can be switched back (item 1).

Screens go to ``$LOOM_JOURNEY_OUT/neovim-draft`` (CI keeps them) or the test's folder."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from tests.e2e.test_nvim_journey import REQUIRED, Terminal, Tree, squash
from tests.local_model import requires_local_model

pytestmark = [
    *requires_local_model,
    pytest.mark.skipif(shutil.which("tmux") is None and not REQUIRED,
                       reason="tmux is not installed (scripts/tmux-setup.sh)"),
]

STORY = "The house stood empty at the end of the lane."
KITCHEN = "Inside, the kitchen smelled of cold ash"
GATE = "The gate was locked."


@pytest.fixture
def out(tmp_path: Path) -> Path:
    base = os.environ.get("LOOM_JOURNEY_OUT")
    folder = Path(base) / "neovim-draft" if base else tmp_path / "screens"
    if folder.exists():
        shutil.rmtree(folder)
    folder.mkdir(parents=True)
    return folder


def _count(tree: Tree, where: str = "1", *args: object) -> int:
    return int(tree.rows(f"SELECT count(*) FROM node WHERE {where}", *args)[0][0])


def _versions(tree: Tree) -> list[tuple[object, ...]]:
    """Every version in the tree: (label, of, author, text), to compare and to show."""
    return [tuple(r) for r in tree.rows(
        "SELECT n.label, o.label, n.author_type, substr(n.content, 1, 40) FROM node n "
        "JOIN node o ON o.id = n.version_of ORDER BY n.created")]


def _label(tree: Tree, text: str) -> str:
    return str(tree.rows("SELECT label FROM node WHERE content LIKE ? AND version_of IS NULL",
                         f"%{text}%")[0][0])


def test_deleting_a_draft_never_wrecks_the_tree(tmp_path: Path, out: Path) -> None:
    db = tmp_path / "loom.db"
    term, tree = Terminal(tmp_path, db, out), Tree(db)
    term.start()
    try:
        term.see(STORY, "The House at the End of the Lane", timeout=60)
        term.keep("demo-opens")
        _cycling(term, tree)
        _zero_and_typo(term, tree)
        _failed_continue(term, tree)
        _explore_says_it_committed(term, tree)
        _deleting_the_draft(term, tree)
    finally:
        term.kill()


def _cycling(term: Terminal, tree: Tree) -> None:
    """Item 4: ]n, [n, ]n all cycle the same node (the third stalled on the parent)."""
    term.keys("G", "$", "]", "n")
    term.wait(lambda s: GATE in s and "◀ 2/2 ▶" in s, "the second sibling")
    term.keys("[", "n")
    term.wait(lambda s: KITCHEN in s and "◀ 1/2 ▶" in s, "the first sibling again")
    term.keys("]", "n")
    shown = term.wait(lambda s: GATE in s and "◀ 2/2 ▶" in s, "the second sibling again")
    assert "has no siblings" not in shown
    term.keep("cycled-there-and-back-and-there")
    term.keys("[", "n")
    term.wait(lambda s: KITCHEN in s and "◀ 1/2 ▶" in s, "back on the first")


def _zero_and_typo(term: Terminal, tree: Tree) -> None:
    """Item 3: an explicit n:0 is refused; item 6: a typo's reading is on the line shown."""
    models = _count(tree, "author_type = 'model'")
    term.keys("G", "o")
    term.type("→ continue n:0")
    term.keys("Escape")
    term.command("w")
    shown = term.see("✗ LIMIT_EXCEEDED: n must be at least 1")
    assert "→ continue n:0" in shown  # the line stays, to be fixed
    term.keep("n-zero-refused")
    assert _count(tree, "author_type = 'model'") == models  # before: three more
    term.keys("d", "d")
    term.keys("o")
    term.type("→ contineu n:2 tokens:6")
    term.keys("Escape")
    term.command("w")
    term.see("(read as → continue n:2 tokens:6)", timeout=15)
    term.keep("typo-read-as-said")
    tree.wait(lambda: _count(tree, "author_type = 'model'") == models + 2,
              "two continuations", timeout=90)
    term.wait(lambda s: "contineu" not in s, "the → line gone")
    # a reading (→ view) stays on screen to be read, not only in :Loom messages
    root = _label(tree, STORY)
    term.keys("G", "o")
    term.type(f"→ view {root}")
    term.keys("Escape")
    term.command("w")
    shown = term.see(f"[{root}] human", "Loom reading", timeout=15)
    assert "continuation" in shown.split("Loom reading")[0].split(f"[{root}] human")[-1] \
        or "continuation" in shown, shown
    term.keep("a-reading-stays")
    term.keys("C-w", "j", "q")
    term.wait(lambda s: "Loom reading" not in s, "the reading closed")


def _failed_continue(term: Terminal, tree: Tree) -> None:
    """Item 5: a failed → continue keeps the writer's line, its ✗ under it; a success
    after it leaves no ✗ behind."""
    term.keys("G", "o")
    term.type("→ continue n:1 model:claude")
    term.keys("Escape")
    term.command("w")
    shown = term.see("no API key for anthropic", timeout=30)
    term.wait(lambda s: "→ continue n:1 model:claude" in s, "the line kept", timeout=10)
    term.keep("failed-continue-keeps-its-line")
    assert "E" in "".join(line[:2] for line in shown.splitlines()
                          if "→ continue n:1 model:claude" in line), shown
    term.keys("G", "d", "d")
    term.keys("o")
    term.type("→ continue n:1 tokens:6")
    term.keys("Escape")
    term.command("w")
    term.wait(lambda s: "→ continue" not in s and "model:claude" not in s,
              "the continuation landed, the lines gone", timeout=90)
    shown = term.keep("after-a-success")
    assert not any(line.startswith("E ") for line in shown.splitlines()), shown


def _explore_says_it_committed(term: Terminal, tree: Tree) -> None:
    """Item 7: typing not yet saved is committed before the exploration, and said."""
    term.keys("G", "A")
    term.see("-- INSERT --", timeout=10)  # (a key pressed as a landing redraws is lost)
    term.type(" Marie listened.")
    term.keys("Escape")
    term.command("Loom explore depth:1 n:1 budget:400")
    term.see("✓ your unsaved text was committed first: [", timeout=30)
    term.keep("explore-says-it-committed")
    assert _count(tree, "content LIKE '%Marie listened%' AND author_type = 'human'") == 1
    term.see("✓ explored from", timeout=120)


def _deleting_the_draft(term: Terminal, tree: Tree) -> None:
    """Item 1: ggdG then :w asks; Cancel and u leave the tree as it was; most of the path
    rewritten becomes a branch; emptied versions switch back."""
    nodes, versions = _count(tree), _versions(tree)
    term.keys("g", "g", "d", "G")
    term.wait(lambda s: STORY not in s, "the buffer emptied")
    term.command("w")
    term.see("Saving would empty", "[C]ancel", timeout=15)
    term.keep("asked-before-emptying")
    term.keys("c")
    term.see("nothing was saved")
    assert _count(tree) == nodes and _count(tree, "content = ''") == _count(
        tree, "content = '' AND version_of IS NULL")  # no empty version made
    term.keys("u")
    term.see(STORY, "Marie listened.")
    term.command("w")
    term.see("✓ nothing to commit")
    term.keep("undo-is-the-path-again")
    assert _count(tree) == nodes  # before: the story again, as one new node

    # most of the path rewritten: keep the first sentence, type the rest anew, save as a
    # new branch after the root
    root = _label(tree, STORY)
    term.keys("g", "g", "0")
    term.type("f.")  # to the end of the first sentence
    term.keys("l", "v", "G", "$", "d")  # everything after it, to the end of the buffer
    term.keys("A")
    term.type(" Nobody came.")
    term.keys("Escape")
    term.command("w")
    term.see("new branch after [" + root + "]", "[C]ancel", timeout=15)
    term.keep("asked-before-rewriting")
    term.keys("s")
    term.see(f"✓ saved as a new branch after [{root}]")
    term.keep("saved-as-a-branch")
    kids = tree.rows("SELECT n.content FROM edge_source s JOIN node n ON n.id = s.target "
                     "JOIN edge e ON e.target = s.target WHERE s.node = (SELECT id FROM node "
                     "WHERE label = ?) AND e.kind = 'continuation'", root)
    assert [k[0] for k in kids][-1] == " Nobody came." and len(kids) == 2, kids
    assert _versions(tree) == versions, (versions, _versions(tree))  # a branch, not versions

    # emptied anyway, on purpose: then each original switched back
    term.keys("g", "g", "d", "G")
    term.command("w")
    term.see("Saving would empty", timeout=15)
    term.keys("r")
    term.see("✓ committed 2 nodes")
    term.keep("emptied-on-purpose")
    assert _count(tree, "version_of IS NOT NULL AND content = ''") == 2, _versions(tree)
    term.keys("i")
    term.type(f"→ switch to {root}")
    term.keys("Escape")
    term.command("w")
    term.see(f"✓ switched to [{root}]", STORY, timeout=15)
    term.command("Loom tree")
    shown = term.see("other versions:", f"[{root}']")
    assert squash(f"[{root}]*") in squash(shown) or squash(f"[{root}]") in squash(shown)
    term.keep("overview-names-the-versions")
