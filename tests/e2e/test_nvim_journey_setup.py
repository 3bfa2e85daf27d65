"""From `loom demo` to the writer's own Neovim, as a person goes through it in a real
terminal (tmux, a shell, keys typed at typing speed, each screen read as it is shown):

* `loom demo --db story.db` typed at the prompt (the database after the subcommand);
* in the demo: a continuation (a model behind a local HTTP server, with token
  probabilities); `K` on a word the model wrote shows its alternatives in columns, not a
  Markdown table's source; "said" changed to "whispered" is coloured as the human's
  whole word, not per letter; CTRL-] from the overview into another path names the tree in
  the status line and the tab line, not the `loom://` address; `:help loom-explore`;
* after Neovim exits, the lines `loom demo` prints for one's own init.lua, pasted there
  with `loom` not on $PATH (as scripts/run.sh leaves it): `:Loom open` opens the story;
* the real lazy.nvim with `{ "loom-lsp/loom" }` alone (options in vim.g.loom, no setup()),
  installing from a local repository: `:Loom` is there, says how to point the plugin at the
  server it cannot find, and with `server_path` set opens the story; `:help loom`.

Each screen is written to ``$LOOM_JOURNEY_OUT``/neovim-setup (CI keeps them) or the test's
temporary directory."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.e2e.fake_provider import (
    OPENAI_COMPLETIONS,
    FakeProvider,
    LogprobToken,
    openai_logprob_stream,
)
from tests.e2e.test_nvim_journey import Terminal, Tree
from tests.e2e.test_nvim_loading import LAZY, clone
from tests.e2e.test_nvim_plugin import NVIM

REQUIRED = os.environ.get("CI") == "true"
pytestmark = [
    pytest.mark.nvim,
    pytest.mark.skipif(shutil.which("tmux") is None and not REQUIRED,
                       reason="tmux is not installed (scripts/tmux-setup.sh)"),
    pytest.mark.skipif(not LAZY.is_dir() and not REQUIRED,
                       reason="../shared/vendor/lazy.nvim is not here"),
]

TITLE = "The House at the End of the Lane"
SAID: list[LogprobToken] = [
    (' "Come', -0.3, [(' "Come', -0.3)]), (' in,"', -0.2, [(' in,"', -0.2)]),
    (" she", -0.1, [(" she", -0.1)]),
    (" said", -0.9, [(" said", -0.9), (" whispered", -1.2), (" called", -2.3)]),
    (",", -0.05, [(",", -0.05)]), (" and", -0.1, [(" and", -0.1)]),
    (" the", -0.1, [(" the", -0.1)]), (" door", -0.4, [(" door", -0.4)]),
    (" opened.", -0.6, [(" opened.", -0.6)]),
]
CONTINUATION = "".join(t for t, _lp, _alts in SAID)
LOOM = Path(sys.executable).parent / "loom"
SGR = re.compile(r"\x1b\[([0-9;:]*)m")


class Shell(Terminal):
    """A terminal with a shell at a prompt in the writer's folder. On $PATH: the writer's
    own Neovim and the system's tools, not this venv's bin (scripts/run.sh leaves it off)."""

    def __init__(self, tmp: Path, db: Path, out: Path, env: dict[str, str]) -> None:
        super().__init__(tmp, db, out)
        self.tmp = tmp
        own = tmp / "bin"
        own.mkdir()
        (own / "nvim").symlink_to(str(NVIM))
        self.env.update(env)
        self.env.update({"PATH": f"{own}{os.pathsep}/usr/bin{os.pathsep}/bin",
                         "HOME": str(tmp), "PS1": "$ ", "TERM": "xterm-256color"})
        self.env.pop("VIRTUAL_ENV", None)

    def start(self) -> None:
        subprocess.run(["tmux", "-L", self.sock, "new-session", "-d", "-s", "w", "-x", "160",
                        "-y", "40", "-c", str(self.tmp), "bash --norc --noprofile"],
                       env=self.env, check=True)
        self.prompt()

    def prompt(self) -> str:
        """Wait for the shell's prompt (`$ `, or bash's own `bash-5.2# ` for root)."""
        return self.wait(lambda s: bool(re.search(r"[$#] ?$", s.rstrip("\n").splitlines()[-1]
                                                  if s.strip() else "")), "the prompt")

    def joined(self) -> str:
        """The screen with wrapped lines joined (what a person copies)."""
        return subprocess.run(["tmux", "-L", self.sock, "capture-pane", "-p", "-J", "-t", "w"],
                              capture_output=True, text=True, check=False).stdout

    def colours(self) -> str:
        return subprocess.run(["tmux", "-L", self.sock, "capture-pane", "-p", "-e", "-t", "w"],
                              capture_output=True, text=True, check=False).stdout


def _foreground(fg: str, params: str) -> str:
    """The foreground after one SGR sequence (its parameters, `38;5;n`-style included)."""
    codes = params.replace(":", ";").split(";")
    i = 0
    while i < len(codes):
        code = codes[i]
        if code in ("", "0", "39"):
            fg = ""
        elif code == "38":
            width = 3 if codes[i + 1:i + 2] == ["5"] else 5
            fg = ";".join(codes[i:i + width])
            i += width - 1
        elif code == "48":  # a background colour: skip its numbers
            i += 2 if codes[i + 1:i + 2] == ["5"] else 4
        elif re.fullmatch(r"3[0-7]|9[0-7]", code):
            fg = code
        i += 1
    return fg


def styles(screen: str, word: str) -> list[str]:
    """The foreground colour (as the terminal's SGR codes) of each character of the first
    `word` on a screen captured with its colours (tmux sends changes only: a colour set on
    one line holds on the next)."""
    fg = ""
    for line in screen.splitlines():
        at = SGR.sub("", line).find(word)
        out: list[str] = []
        col, i = 0, 0
        while i < len(line):
            m = SGR.match(line, i)
            if m:
                fg = _foreground(fg, m.group(1))
                i = m.end()
                continue
            if at >= 0 and at <= col < at + len(word):
                out.append(fg)
            col += 1
            i += 1
        if at >= 0:
            return out
    return []


def whole_and_human(screen: str) -> bool:
    """"whispered" in one colour, and the human's (the root's "stood"), not the model's
    ("she")."""
    word, human, model = styles(screen, "whispered"), styles(screen, "stood"), styles(screen,
                                                                                       " she ")
    return (bool(word) and len(set(word)) == 1 and bool(human) and word[0] == human[0]
            and bool(model) and word[0] != model[1])


@pytest.fixture
def out(tmp_path: Path) -> Path:
    base = os.environ.get("LOOM_JOURNEY_OUT")
    folder = Path(base) / "neovim-setup" if base else tmp_path / "screens"
    if folder.exists():
        shutil.rmtree(folder)
    folder.mkdir(parents=True)
    return folder


def test_from_the_demo_to_the_writers_own_neovim(tmp_path: Path, out: Path) -> None:
    assert LOOM.exists(), f"{LOOM}: this installation's loom"
    db = tmp_path / "story.db"
    with FakeProvider() as served:
        config = tmp_path / "loom.toml"
        config.write_text('[profiles.fake]\nprovider = "openai-compatible"\nmodel = "fake-base"\n'
                          f'base_url = "{served.openai_base_url}"\nmax_attempts = 1\n\n'
                          '[defaults]\nsubject = "fake"\n', encoding="utf-8")
        served.set_default(OPENAI_COMPLETIONS, openai_logprob_stream([SAID]))
        term = Shell(tmp_path, db, out, {"LOOM_CONFIG": str(config),
                                         "LOOM_API_KEY": "sk-test-not-a-secret"})
        term.start()
        try:
            _the_demo(term, Tree(db))
            lines = _what_the_demo_says(term)
            _own_neovim(term, lines)
            _lazy_nvim(term, tmp_path, db)
        finally:
            term.kill()


def _the_demo(term: Shell, tree: Tree) -> None:
    # ── the database after the subcommand (it was `unrecognized arguments: --db`)
    term.type(f"{LOOM} demo --db story.db\n")
    term.see("The house stood empty at the end of the lane.", "Loom demo: K hover", TITLE,
             timeout=60)
    term.keep("demo-with-db-after-the-command")

    # ── a continuation with token probabilities; K on "said": the alternatives in columns
    term.command("Loom continue 1")
    term.see(CONTINUATION.strip(), timeout=30)
    tree.wait(lambda: tree.rows("SELECT count(*) FROM node_tokens")[0][0] == 1,
              "the continuation's token data")
    term.type("/said\n")
    term.keys("K")
    shown = term.wait(lambda s: "␣whispered" in s and "▸ ␣said" in s, "the token's hover")
    term.keep("token-hover", shown)
    assert "|:-:|" not in shown and "| ▸ |" not in shown and "```" not in shown, shown
    rows = [m for line in shown.splitlines()
            if (m := re.search(r"[▸ ] ␣(said|whispered|called) +[\d.]+%", line))]
    assert len(rows) == 3 and len({m.end() for m in rows}) == 1, rows  # in line

    # ── "said" → "whispered" inside the model's text: the human's word, whole
    term.keys("l", "b", "c", "i", "w")
    term.type("whispered")
    term.keys("Escape")
    shown = term.wait(lambda s: "whispered," in s, "the edited word")
    coloured = term.wait(lambda _s: whole_and_human(term.colours()) and term.colours(),
                         '"whispered" coloured as the human\'s whole word', timeout=15)
    term.keep("whispered-in-model-text", SGR.sub("", str(coloured)))
    term.keys("u")
    term.see(" she said,")

    # ── CTRL-] from the overview into another path: the tree's title, not the address
    term.command("Loom tree")
    term.see("your path", "She walked the last few metres")
    term.type("/walked\n")
    term.keys("0", "f", "[", "l", "C-]")
    shown = term.wait(lambda s: "She walked the last few metres slowly" in s
                      and "your path" not in s and TITLE in s.splitlines()[-2],
                      "the other path, the title in the status line")
    term.keep("jumped-into-another-path", shown)
    assert "loom://" not in shown and "%20" not in shown, shown
    term.command("tab split")
    shown = term.wait(lambda s: TITLE in s.splitlines()[0], "the tab line")
    term.keep("tab-line", shown)
    assert "l//p" not in shown and "%20" not in shown and "loom://" not in shown, shown
    term.command("tabclose")

    # ── every subcommand has a help tag
    term.command("help loom-explore")
    shown = term.see("loom-explore", ":Loom explore [OPTIONS]")
    term.keep("help-loom-explore", shown)
    assert "E149" not in shown
    term.command("qa!")


def _what_the_demo_says(term: Shell) -> list[str]:
    term.see("The demo ran Neovim with a configuration of its own", "vim.opt.rtp:append(")
    term.prompt()
    term.keep("demo-says-how-to-use-the-plugin")
    lines = [line.strip() for line in term.joined().splitlines()
             if line.startswith("  vim.")]
    assert len(lines) == 2 and lines[0].startswith("vim.opt.rtp:append("), lines
    assert f'server_path = "{LOOM}"' in lines[1], lines  # loom is not on this PATH
    return lines


def _own_neovim(term: Shell, lines: list[str]) -> None:
    """The printed lines pasted into the writer's init.lua; `loom` not on $PATH."""
    init = Path(term.env["XDG_CONFIG_HOME"]) / "nvim" / "init.lua"
    init.parent.mkdir(parents=True, exist_ok=True)
    init.write_text("\n".join(lines) + "\n", encoding="utf-8")
    shown = _open_the_story(term, "own-neovim")
    assert "did not start" not in shown and "✗" not in shown, shown
    term.command("qa!")
    term.prompt()


def _open_the_story(term: Shell, step: str) -> str:
    """`nvim` at the prompt, then `:Loom open` and the demo tree picked from the list."""
    term.keys("C-l")
    term.type("nvim\n")
    term.wait(lambda s: s.count("~") > 5, "Neovim")
    term.command("Loom open")
    term.see(TITLE, "Type number and <Enter>")
    term.keep(f"{step}-picks-a-tree")
    term.type("1\n")
    shown = term.see("The house stood empty at the end of the lane.", timeout=30)
    term.keep(f"{step}-opens-the-story", shown)
    return shown


def _lazy_nvim(term: Shell, tmp: Path, db: Path) -> None:
    """lazy.nvim with `{ "loom-lsp/loom" }` (the README's spec, verbatim), from a local
    repository that stands for GitHub; vim.g.loom names the database."""
    remote = tmp / "remote"
    clone(remote / "loom-lsp" / "loom")
    init = Path(term.env["XDG_CONFIG_HOME"]) / "nvim" / "init.lua"

    def write_init(g_loom: str) -> None:
        init.write_text(f'vim.opt.rtp:prepend("{LAZY}")\n'
                        f"vim.g.loom = {g_loom}\n"
                        'require("lazy").setup({ spec = { { "loom-lsp/loom" } },\n'
                        f'  git = {{ url_format = "{remote}/%s" }} }})\n', encoding="utf-8")

    write_init(f'{{ db = "{db}" }}')
    term.keys("C-l")
    term.type("nvim\n")
    # on its first start lazy.nvim installs what is missing in a window of its own
    term.see("lazy.nvim", "loom", "clone", timeout=60)
    installed = Path(term.env["XDG_DATA_HOME"]) / "nvim" / "lazy" / "loom" / "nvim"
    Tree(db).wait(lambda: installed.is_dir(), "the clone", timeout=60)
    term.keep("lazy-installs-loom")
    term.keys("q")  # lazy.nvim's key to close its window
    term.wait(lambda s: "Tasks:" not in s, "lazy.nvim's window closed")
    term.command("Loom open")
    shown = term.see("✗ the loom language server was not found", "server_path",
                     ":help loom-server")
    term.keep("lazy-no-loom-on-path", shown)
    assert "E492" not in shown and "Not an editor command" not in shown, shown
    term.command("qa!")
    term.prompt()

    # the writer does what the hint says
    write_init(f'{{ db = "{db}", server_path = "{LOOM}" }}')
    _open_the_story(term, "lazy")
    term.command("help loom")
    shown = term.see("Branching trees of human and model writing", "loom-install")
    term.keep("lazy-help-loom", shown)
    assert "E149" not in shown, shown
    term.command("qa!")
