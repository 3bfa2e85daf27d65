"""Scoring the writer's words in Neovim, as a person does it: `loom demo` in a real
terminal (tmux), the bundled local model, a paragraph typed, `:Loom score`; the screen
read after each step: the heatmap on the writer's words, the least likely span's sign and
its diagnostic, its code action branching there with the model's choice, and the toggle
off taking the marks away."""

from __future__ import annotations

import re
from pathlib import Path

from tests.e2e.test_nvim_journey import Terminal, Tree, out, pytestmark  # noqa: F401

PARAGRAPH = "Gulls wheeled over the fjord while the ferryman whistled a tune nobody knew."
MINE = "over the fjord while"  # a run of the paragraph's words no message repeats
#: the probability colours without 'termguicolors' (nvim/lua/loom/highlight.lua)
PROB_COLOURS = {"38;5;33", "38;5;37", "38;5;136", "38;5;166", "38;5;160"}


def plain(line: str) -> str:
    return re.sub(r"\x1b\[[0-9;:]*m", "", line)


def colours(line: str) -> set[str]:
    return {c for c in PROB_COLOURS if f"\x1b[{c}m" in line or f";{c}m" in line}


def test_score_the_writers_words_in_neovim(tmp_path: Path, out: Path) -> None:  # noqa: F811
    db = tmp_path / "loom.db"
    term, tree = Terminal(tmp_path, db, out), Tree(db)
    term.start()
    try:
        term.see("The house stood empty at the end of the lane.", timeout=60)
        term.keys("G", "A")
        term.type(f"\n\n{PARAGRAPH}")
        term.keys("Escape")
        term.see(PARAGRAPH)
        term.keep("paragraph-typed")
        painted = term.colour_lines()
        assert not colours(next(ln for ln in painted if MINE in plain(ln)))  # no heatmap yet

        # ── :Loom score: the buffer committed, the path scored, the least likely marked
        term.command("Loom score")
        term.see("✓ scored", "least likely span", timeout=120)
        shown = term.keep("scored")
        mine = tree.rows("SELECT n.id FROM node n JOIN node_tokens t ON t.node = n.id "
                         "WHERE n.author_type = 'human' AND n.content LIKE ? "
                         "AND t.scorer LIKE 'local (%'", f"%{PARAGRAPH}%")
        assert len(mine) == 1, shown
        line = next(ln for ln in term.colour_lines() if MINE in plain(ln))
        assert len(colours(line)) >= 2, repr(line)  # the writer's words in the heatmap
        # (the result's float names words of the paragraph too: its row is the one below)
        paragraph_row = next(ln for ln in shown.splitlines() if MINE in ln)
        assert paragraph_row.startswith("I "), shown  # an Information sign beside it

        # ── the last mark of the paragraph, and what it says
        term.keys("G", "$", "[", "d")
        term.keys("C-w", "d")
        shown = term.see("is unlikely here", "local (SmolLM2-135M-Instruct)")
        term.keep("diagnostic")
        term.keys("Escape")

        # ── its code action: branch there with the model's choice
        term.type("\\lo")
        shown = term.see("Branch here with the model's choice")
        term.keep("code-actions")
        choice = re.search(r"1: Branch here with the model's choice ‘(.+?)’", shown)
        assert choice, shown
        term.keys("1", "Enter")
        alt = choice.group(1).replace("␣", " ")
        made = tree.wait(lambda: tree.rows("SELECT content, author_type FROM node WHERE "
                                           "content = ? AND author_type = 'model'", alt),
                         "the model's choice as a branch")
        assert made
        head = tree.tip()
        assert head[2] == alt, head
        term.see(alt.strip())
        term.keep("branched")

        # ── off: the marks go
        term.type("\\le")
        shown = term.see("✓ scores hidden")
        term.wait(lambda s: not any(r.startswith("I ") for r in s.splitlines()),
                  "the signs gone")
        term.keep("scores-off")
    finally:
        term.kill()
