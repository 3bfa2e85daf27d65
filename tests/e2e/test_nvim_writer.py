"""The writer's loom in a real headless Neovim: typing commands at human speed,
labels and messages that stay out of the way, bookmarks, search, the tree picture and the
sibling picker. Same harness as ``test_nvim_plugin.py`` (the demo database, the plugin
from ``nvim/``, the real server)."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.e2e import test_nvim_plugin as harness
from tests.e2e.fake_provider import (
    OPENAI_CHAT,
    OPENAI_COMPLETIONS,
    FakeProvider,
    openai_chat_stream,
    openai_completion_stream,
)
from tests.e2e.test_nvim_plugin import STORY_START, Demo, Editor, loom_cli, wait_for

# the harness's fixtures, used here by name
template = harness.template
demo = harness.demo
editor = harness.editor

pytestmark = pytest.mark.nvim


def type_slowly(editor: Editor, text: str, delay: float = 0.15) -> None:
    """Type ``text`` one key at a time, as a person does (150 ms a key by default)."""
    for ch in text:
        editor.nvim.input("<lt>" if ch == "<" else ch)
        time.sleep(delay)


def test_typing_a_command_at_human_speed_is_never_rewritten(editor: Editor, demo: Demo) -> None:
    """Before: with Neovim's default completeopt (menu,popup) the auto-triggered
    completion inserted its first item while the user typed."""
    editor.cmd("set completeopt=menu,popup")  # what `loom demo` leaves: Neovim's default
    editor.open(demo.uri(demo.tip))
    cot = editor.lua("return vim.bo.completeopt")
    assert "noselect" in cot or "noinsert" in cot, cot
    for typed in ("→ continue n:3", '→ annotate root "a quiet start"', "→ view root full"):
        editor.nvim.input("<Esc>Go")
        type_slowly(editor, typed)
        time.sleep(0.6)  # let a late completion answer arrive
        editor.nvim.input("<Esc>")
        wait_for(lambda: editor.lua("return vim.fn.mode()") == "n", 5, "normal mode")
        assert editor.lines[-1] == typed, editor.lines[-1]


def test_arrow_typed_as_ascii_becomes_the_arrow(editor: Editor, demo: Demo) -> None:
    """`->` then a space at the start of a line is turned into `→ ` (the docs say how to
    type `→` directly: the digraph CTRL-K - >)."""
    editor.open(demo.uri(demo.tip))
    editor.nvim.input("Go")
    type_slowly(editor, "-> view root", 0.05)
    editor.nvim.input("<Esc>")
    wait_for(lambda: editor.lines[-1] == "→ view root", 5, "the arrow")
    # in prose, an arrow stays what it is
    editor.nvim.input("Go")
    type_slowly(editor, "she went -> there", 0.02)
    editor.nvim.input("<Esc>")
    wait_for(lambda: editor.lines[-1] == "she went -> there", 5, "prose untouched")
    # the command line kept its arrow, and nothing else in the buffer moved
    assert editor.lines[-2] == "→ view root", editor.lines[-3:]
    assert editor.text.startswith(STORY_START), editor.text[:80]
    assert sum(line.startswith("→") for line in editor.lines) == 1, editor.lines



@pytest.fixture
def fake(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeProvider]:
    """A local OpenAI-compatible server as the subject model (set up before the editor,
    whose server inherits the environment)."""
    with FakeProvider() as server:
        config = tmp_path / "config.toml"
        config.write_text('[profiles.fake]\nprovider = "openai-compatible"\n'
                          f'model = "fake-base"\nbase_url = "{server.openai_base_url}"\n'
                          '[defaults]\nsubject = "fake"\ncollaborator = "fake"\n',
                          encoding="utf-8")
        monkeypatch.setenv("LOOM_CONFIG", str(config))
        monkeypatch.setenv("LOOM_API_KEY", "sk-test-not-a-secret")
        monkeypatch.setenv("LOOM_NO_KEYRING", "1")
        yield server


def vim_messages(editor: Editor) -> str:
    return str(editor.lua("return vim.fn.execute('messages')"))


def modified(editor: Editor) -> bool:
    return bool(editor.lua("return vim.bo.modified"))


def test_a_command_run_from_the_buffer_leaves_it_clean(editor: Editor, demo: Demo) -> None:
    """Before: `[+]` after <leader>lr ran a command that changed the path;
    and "Workspace edit Loom" in the messages for every edit the server made."""
    editor.open(demo.uri(demo.tip))
    walnut = demo.local_id("walnut trees had dropped")
    line = editor.append_line(f"→ switch to {walnut}")
    editor.nvim.current.window.cursor = (line, 0)
    assert modified(editor)
    editor.nvim.input("\\lr")
    wait_for(lambda: "walnut trees had dropped" in editor.text, 10, "the switched path")
    wait_for(lambda: not modified(editor), 5, "a clean buffer after the server's edits")
    assert "Workspace edit" not in vim_messages(editor)
    # typing afterwards is the user's: modified again, and no server edit clears it
    editor.nvim.input("GA She went in.<Esc>")
    time.sleep(1.0)
    assert modified(editor)


def test_read_only_views_refresh_and_write_quietly(editor: Editor, demo: Demo) -> None:
    """Before: `:w` warned W10 / failed with E45 in a read-only view."""
    editor.open(f"loom://tree/{demo.tree}")
    loom_cli(demo.db, "do", demo.tree, f'→ respond {demo.tip} " The phone rang."')
    wait_for(lambda: "The phone rang" in "".join(editor.lines) or
             editor.lua("return vim.b.changedtick") > 3, 10, "the overview refreshed")
    time.sleep(0.5)
    editor.cmd("write")
    assert "W10" not in vim_messages(editor) and "E45" not in vim_messages(editor)
    assert any("read-only" in m for m in editor.messages()), editor.messages()
    assert editor.lua("return vim.bo.modifiable") is False


def test_a_failed_save_says_so_once(editor: Editor, demo: Demo) -> None:
    """A save whose command fails: the message reads `✗ NOT_FOUND: …`, not `✗ ✗ NOT_FOUND`
    (the server's answer already carries the mark)."""
    editor.open(demo.uri(demo.tip))
    editor.append_line("→ view zzzzzz")
    editor.cmd("write")
    wait_for(lambda: any("NOT_FOUND" in m for m in editor.messages()), 10, "the failure")
    failures = [m for m in editor.messages() if "NOT_FOUND" in m]
    assert all(m.startswith("✗ NOT_FOUND") for m in failures), failures


def test_continue_says_when_it_has_finished(fake: FakeProvider, editor: Editor,
                                            demo: Demo) -> None:
    """Before: Neovim never said `✓ 3 continuations`; and the buffer stayed
    modified after the generation landed."""
    fake.script(OPENAI_COMPLETIONS, openai_completion_stream(
        [" The door was open.", " Nobody answered.", " A dog barked."], event_delay_s=0.02))
    editor.open(demo.uri(demo.tip))
    editor.cmd("Loom continue 3")
    wait_for(lambda: any(m.startswith("✓ 3 continuations") for m in editor.messages()), 20,
             "✓ 3 continuations")
    wait_for(lambda: editor.text.endswith(" The door was open."), 5, "the first continuation")
    wait_for(lambda: not modified(editor), 5, "a clean buffer")
    status = editor.lua("return vim.b.loom_status")
    assert status and not status["generating"], status
    assert "Workspace edit" not in vim_messages(editor)
    # generation details where you read: hover on the model text says how it was made,
    # and that it is one of the request's three continuations
    editor.set_cursor_on("The door was open")
    value = editor.request("textDocument/hover")["contents"]["value"]
    assert "Generated: `fake-base`" in value and "tokens" in value, value
    assert "Continuation 1 of 3 from one request" in value, value


def test_write_on_a_continue_line_returns_at_once_and_the_continuations_land(
        fake: FakeProvider, editor: Editor, demo: Demo) -> None:
    """`:w` on `→ continue n:3` waited for the whole generation, timed
    out after 10 s (`✗ loom/save: timeout`) and lost the line and the streamed text."""
    words = "".join(f" word{i}" for i in range(60))
    fake.script(OPENAI_COMPLETIONS, openai_completion_stream(
        [words, " Nobody answered.", " A dog barked."], event_delay_s=0.25))  # ~15 s
    editor.open(demo.uri(demo.tip))
    editor.append_line("She knocked twice.")
    editor.append_line("→ continue n:3")
    editor.cmd("write")  # returns once the save is answered
    assert any(m.startswith("✓ generating 3 continuations") for m in editor.messages()), \
        editor.messages()
    assert "timeout" not in vim_messages(editor)
    wait_for(lambda: "→ continue" not in editor.text, 5, "the command line to go")
    wait_for(lambda: "word3" in editor.text, 10, "the continuation streaming in")
    wait_for(lambda: any(m.startswith("✓ 3 continuations") for m in editor.messages()), 40,
             "✓ 3 continuations")
    wait_for(lambda: editor.text.endswith(words), 5, "the first continuation in place")
    assert demo.scalar("SELECT count(*) FROM generation") == 3
    assert demo.scalar("SELECT count(*) FROM node WHERE content LIKE '%She knocked twice.%'") \
        == 1
    wait_for(lambda: not modified(editor), 5, "a clean buffer")


def test_cancel_is_not_an_error(fake: FakeProvider, editor: Editor, demo: Demo) -> None:
    words = "".join(f" word{i}" for i in range(80))
    fake.script(OPENAI_COMPLETIONS, openai_completion_stream([words], event_delay_s=0.1))
    editor.open(demo.uri(demo.tip))
    before = editor.text
    editor.cmd("Loom continue 1")
    wait_for(lambda: "word" in editor.text, 20, "streaming")
    editor.cmd("Loom cancel")
    wait_for(lambda: any("generation cancelled" in m for m in editor.messages()), 20,
             "the cancellation message")
    errors = [m for m in editor.lua("return _G.loom_messages") if m["level"] == 4]
    assert not errors, errors
    wait_for(lambda: editor.text == before, 10, "the streamed text gone")
    wait_for(lambda: not modified(editor), 5, "a clean buffer")


def test_hover_shows_the_nodes_own_text_then_a_labelled_summary(editor: Editor,
                                                                demo: Demo) -> None:
    """Before: a small model's wrong summary was shown as the node's text."""
    import sqlite3

    node = demo.local_id("windows seemed to watch")
    with sqlite3.connect(demo.db) as con:  # what the bundled 135M model wrote
        con.execute("UPDATE node SET summary = ?, summary_source = 'model' WHERE local_id = ?",
                    ("She had been watching her mother's car, a crucial detail to remember.",
                     node))
    editor.open(demo.uri(demo.tip))
    editor.set_cursor_on("windows seemed to watch")
    value = editor.request("textDocument/hover")["contents"]["value"]
    own = value.index("and the windows seemed to watch her approach")
    summary = value.index("She had been watching")
    assert own < summary, value
    label = value[:summary].rsplit("\n", 1)[-1]
    assert "summary (written by a model)" in label.lower(), value
    # (above it, a model node's hover may say why it has no token probabilities)
    assert any(line.startswith(f"**[{node}] model") for line in value.splitlines()[:6]), value


def test_siblings_are_marked_where_they_are_and_picked_side_by_side(editor: Editor,
                                                                   demo: Demo) -> None:
    """Before: Neovim showed no sibling indicator; a picker shows every sibling's text."""
    editor.open(demo.uri(demo.tip))
    windows = demo.local_id("windows seemed to watch")

    def hint_labels() -> list[str]:
        out = []
        for h in editor.lua("return vim.lsp.inlay_hint.get({ bufnr = 0 })") or []:
            label = h["inlay_hint"]["label"]
            out.append(label if isinstance(label, str) else "".join(p["value"] for p in label))
        return out

    labels = wait_for(hint_labels, 10, "inlay hints")
    assert f"¦›{windows} ◀ 1/3 ▶" in labels, labels
    assert not any("︱" in label for label in labels)  # the glyph that drew as a box
    editor.set_cursor_on("windows seemed to watch")
    editor.cmd("Loom siblings")
    float_lines = wait_for(lambda: editor.lua("""
        for _, w in ipairs(vim.api.nvim_list_wins()) do
          if vim.api.nvim_win_get_config(w).relative ~= '' then
            return vim.api.nvim_buf_get_lines(vim.api.nvim_win_get_buf(w), 0, -1, false)
          end
        end
        return nil"""), 10, "the siblings float")
    shown = "\n".join(float_lines)
    for text in ("windows seemed to watch", "walnut trees had dropped", "key still hung"):
        assert text in shown, shown
    assert shown.startswith(f"● 1/3 [{windows}] model"), shown
    # pick the walnut sibling
    row = next(i for i, line in enumerate(float_lines, 1) if "walnut trees" in line)
    editor.nvim.current.window.cursor = (row, 0)
    editor.nvim.input("<CR>")
    wait_for(lambda: "walnut trees had dropped" in editor.text, 10, "the picked sibling")
    assert "windows seemed to watch" not in editor.text
    wait_for(lambda: not modified(editor), 5, "a clean buffer")
    wait_for(lambda: any("switched to" in m and "(2/3)" in m for m in editor.messages()), 5,
             "✓ switched to … (2/3)")


def test_compare_two_siblings_in_diff_mode(editor: Editor, demo: Demo) -> None:
    editor.open(demo.uri(demo.tip))
    editor.set_cursor_on("windows seemed to watch")
    editor.cmd("Loom diff")
    wait_for(lambda: editor.lua("return #vim.api.nvim_tabpage_list_wins(0)") == 2, 10,
             "two windows")
    texts = wait_for(lambda: editor.lua("""
        local texts = {}
        for _, w in ipairs(vim.api.nvim_tabpage_list_wins(0)) do
          if not vim.wo[w].diff then return false end
          texts[#texts + 1] = table.concat(vim.api.nvim_buf_get_lines(
            vim.api.nvim_win_get_buf(w), 0, -1, false), "\\n")
        end
        if texts[1]:find("windows seemed", 1, true) and texts[2]:find("walnut trees", 1, true)
        then return texts end
        return false"""), 10, "the two siblings' paths in diff mode")
    here, sibling = texts
    # the same beginning, then each sibling's own text: one path each, nothing mixed
    assert here.startswith(STORY_START) and sibling.startswith(STORY_START), texts
    assert "walnut trees" not in here and "windows seemed" not in sibling, texts


FIXTURE = Path(__file__).resolve().parents[3] / "shared" / "fixtures" / "socketteer-loom-demo.json"


def test_open_a_tree_by_its_title(editor: Editor, demo: Demo) -> None:
    """Before: `:Loom open The House at the End of the Lane` failed (`tree "The" does
    not exist`), and completion offered only ULIDs."""
    title = "The House at the End of the Lane"
    editor.cmd(f"Loom open {title}")
    wait_for(lambda: editor.bufname().startswith(f"loom://path/{demo.tree}/"), 10, "by title")
    wait_for(lambda: editor.text.startswith(STORY_START), 10, "the story's text")
    editor.cmd("enew")
    editor.cmd("Loom open the house")  # a unique start of the title, any case
    wait_for(lambda: editor.bufname().startswith(f"loom://path/{demo.tree}/"), 10, "by prefix")
    editor.cmd("enew")
    editor.cmd(f"Loom open {title} {demo.tip}")  # a title, then a node
    wait_for(lambda: editor.bufname().startswith(f"loom://path/{demo.tree}/{demo.tip}"), 10,
             "title and node")
    items = editor.lua("return vim.fn.getcompletion('Loom open The Ho', 'cmdline')")
    assert "House at the End of the Lane" in items, items
    # the CLI takes the start of a title too
    assert "[" in loom_cli(demo.db, "do", "the house", "→ view root")


def test_an_imported_tree_opens_on_its_selected_node_with_text(editor: Editor,
                                                              demo: Demo) -> None:
    """Before: the 764-node socketteer file opened on the root's empty first child (its
    selected node) with nothing on screen and no word on why."""
    if not FIXTURE.exists():
        pytest.skip(f"no fixture at {FIXTURE}")
    editor.cmd("enew")
    started = time.monotonic()
    editor.cmd(f"Loom import {FIXTURE}")
    wait_for(lambda: editor.bufname().startswith("loom://path/") and editor.text.strip(), 30,
             "the imported tree's path")
    opened = time.monotonic() - started
    print(f"import + open of the 764-node file: {opened * 1000:.0f} ms")
    wait_for(editor.attached, 10, "the client")
    selected = loom_cli(demo.db, "do", "socketteer", "→ tree depth:1")
    star = selected.split("]*")[0].rsplit("[", 1)[1]  # the node marked as the position
    assert editor.bufname().split("/")[4] == star  # the path through the selected node
    labels = wait_for(lambda: [
        h["inlay_hint"]["label"] if isinstance(h["inlay_hint"]["label"], str)
        else "".join(p["value"] for p in h["inlay_hint"]["label"])
        for h in editor.lua("return vim.lsp.inlay_hint.get({ bufnr = 0 })") or []], 10,
        "inlay hints")
    assert any(f"¦{star} (no text)" in label for label in labels), labels  # says why
    started = time.monotonic()
    editor.cmd("edit")  # reopening it: the read of the path from the store
    wait_for(lambda: editor.text.strip(), 10, "the text again")
    print(f"reopening the imported path: {(time.monotonic() - started) * 1000:.0f} ms")


def test_bookmark_tag_search_and_delete_from_neovim(editor: Editor, demo: Demo) -> None:
    editor.open(demo.uri(demo.tip))
    editor.lua("""
        _G.loom_picks = {}
        vim.ui.select = function(items, opts, on_choice)
          local labels = {}
          for _, it in ipairs(items) do
            labels[#labels + 1] = opts.format_item and opts.format_item(it) or tostring(it)
          end
          table.insert(_G.loom_picks, { prompt = opts.prompt, items = labels })
          on_choice(items[1])
        end""")
    editor.set_cursor_on("windows seemed")
    node = demo.local_id("windows seemed to watch")
    editor.cmd("Loom bookmark tone shift")
    wait_for(lambda: demo.scalar("SELECT bookmarked FROM node WHERE local_id = ?", node) == 1,
             10, "the bookmark")
    editor.cmd("Loom tag dream late-night")
    wait_for(lambda: any("#dream #late-night" in m for m in editor.messages()), 10, "tags")
    editor.cmd("Loom bookmarks")
    wait_for(lambda: any(p["prompt"] == "Bookmarks" for p in editor.lua("return _G.loom_picks")),
             10, "the bookmarks picker")
    picks = [p for p in editor.lua("return _G.loom_picks") if p["prompt"] == "Bookmarks"]
    assert picks[0]["items"][0].startswith("★ tone shift"), picks
    # search every tree: the first hit opens its path
    editor.cmd("enew")
    editor.cmd("Loom search walnut leaves")
    wait_for(lambda: "walnut trees had dropped" in editor.text, 10, "the hit's path")
    search = [p for p in editor.lua("return _G.loom_picks") if p["prompt"].startswith("Search")]
    assert "«walnut»" in search[0]["items"][0], search
    # delete asks first (the stub answers the first choice: Delete), then follows
    wait_for(editor.attached, 10, "the client")
    editor.set_cursor_on("walnut trees had dropped")
    editor.cmd("Loom delete")
    wait_for(lambda: "walnut trees had dropped" not in editor.text, 10, "the subtree gone")
    asked = [p for p in editor.lua("return _G.loom_picks") if p["prompt"].startswith("Delete")]
    assert asked and asked[0]["items"] == ["Delete", "Cancel"], asked
    wait_for(lambda: any("within 30 days" in m for m in editor.messages()), 10,
             "the message saying how to undo it")
    wait_for(lambda: not modified(editor), 5, "a clean buffer")


def test_the_overview_shows_text_marks_the_path_and_folds(editor: Editor, demo: Demo) -> None:
    """Before: the overview was a wall of bare ids."""
    loom_cli(demo.db, "do", demo.tree, '→ bookmark root "the opening"')
    editor.open(demo.uri(demo.tip))
    editor.cmd("Loom tree")
    wait_for(lambda: editor.bufname().startswith(f"loom://tree/{demo.tree}/"), 10, ":Loom tree")
    text = editor.text
    windows = demo.local_id("windows seemed to watch")
    walnut = demo.local_id("walnut trees had dropped")
    assert f"● [{windows}] › and the windows seemed to watch her approach" in text, text
    assert f"○ [{walnut}] › and the walnut trees" in text, text  # not on the path
    assert f"[{demo.tip}]* › Inside, the kitchen" in text  # the position
    assert '★[' in text and '★ "the opening"' in text  # the bookmark
    # every branch folds (the server's folding ranges through vim.lsp.foldexpr)
    line = next(i for i, t in enumerate(editor.lines, 1) if f"[{windows}]" in t)
    wait_for(lambda: editor.lua("return vim.fn.foldlevel(...)", line) > 0, 10, "folds")
    editor.nvim.current.window.cursor = (line, 0)
    editor.cmd("normal! zc")
    assert editor.lua("return vim.fn.foldclosed(...)", line) == line
    # <CR> on a line opens that node's path
    editor.cmd("normal! zR")
    row = next(i for i, t in enumerate(editor.lines, 1) if f"[{walnut}]" in t)
    editor.nvim.current.window.cursor = (row, 0)
    editor.nvim.input("<CR>")
    wait_for(lambda: editor.bufname().startswith(f"loom://path/{demo.tree}/{walnut}"), 10,
             "the walnut path")


def test_the_tree_as_a_picture(editor: Editor, demo: Demo) -> None:
    """Before: a picture of the tree where choosing a node opens its path."""
    editor.open(demo.uri(demo.tip))
    editor.cmd("Loom picture")
    lines = wait_for(lambda: editor.lua("""
        for _, w in ipairs(vim.api.nvim_list_wins()) do
          if vim.api.nvim_win_get_config(w).relative ~= '' then
            return vim.api.nvim_buf_get_lines(vim.api.nvim_win_get_buf(w), 0, -1, false)
          end
        end"""), 10, "the picture float")
    drawn = "\n".join(lines)
    assert "◉" in drawn and "┬" in drawn and "○" in drawn, drawn
    footer = editor.lua("return vim.api.nvim_win_get_config(0).footer")
    assert "Inside, the kitchen" in str(footer), footer  # the node under the cursor
    # walk to the walnut node (a ○ on a row below) and open it
    walnut = demo.local_id("walnut trees had dropped")
    for row in range(1, len(lines) + 1):
        found = False
        for col in range(len(lines[row - 1].encode())):
            editor.nvim.current.window.cursor = (row, col)
            if f"[{walnut}]" in str(editor.lua("return vim.api.nvim_win_get_config(0).footer")):
                found = True
                break
        if found:
            break
    assert found, "no cell shows the walnut node"
    editor.nvim.input("<CR>")
    wait_for(lambda: "walnut trees had dropped" in editor.text, 10, "the walnut path")
    # the SVG for the browser: every node is a clickable group
    editor.lua("vim.ui.open = function(path) _G.opened = path; return nil end")
    editor.cmd("Loom picture svg")
    path = wait_for(lambda: editor.lua("return _G.opened"), 10, "the SVG file")
    svg = Path(path).read_text(encoding="utf-8")
    assert svg.startswith("<svg") and svg.count('class="node"') == 11, svg[:200]


def test_several_models_at_once_and_the_model_picker(fake: FakeProvider, editor: Editor,
                                                    demo: Demo, tmp_path: Path) -> None:
    """`→ continue models:a,b` typed and saved: a sibling from each model, and hover on
    each says which model wrote it; `:Loom model` picks the model for the tree."""
    with (tmp_path / "config.toml").open("a", encoding="utf-8") as config:
        config.write(f'\n[profiles.second]\nprovider = "openai-compatible"\n'
                     f'model = "second-base"\nbase_url = "{fake.openai_base_url}"\n'
                     '\n[presets.wild]\ntemperature = 1.3\ntop_k = 100\n')
    said = {"fake-base": " The base model went on.", "second-base": " The second one did."}
    fake.set_default(OPENAI_COMPLETIONS, lambda request: openai_completion_stream(
        [said[request.json["model"]]]))
    editor.open(demo.uri(demo.tip))
    editor.nvim.input("<Esc>Go")
    type_slowly(editor, "→ continue models:fake,second n:1 tokens:8", 0.05)
    editor.nvim.input("<Esc>")
    editor.cmd("w")
    wait_for(lambda: any(m.startswith("✓ 2 continuations") for m in editor.messages()), 20,
             "✓ 2 continuations")
    wait_for(lambda: said["fake-base"].strip() in editor.text, 5, "the first sibling shown")
    done = next(m for m in editor.messages() if m.startswith("✓ 2 continuations"))
    assert "(fake-base)" in done and "(second-base)" in done, done  # which model wrote each

    def markers() -> list[str]:
        return [h["inlay_hint"]["label"] if isinstance(h["inlay_hint"]["label"], str)
                else "".join(p["value"] for p in h["inlay_hint"]["label"])
                for h in editor.lua("return vim.lsp.inlay_hint.get({ bufnr = 0 })") or []]

    wait_for(lambda: any(" fake-base ◀ 1/2 ▶" in m for m in markers()), 10,
             "the sibling marker naming its model")
    editor.set_cursor_on("The base model went on")
    value = editor.request("textDocument/hover")["contents"]["value"]
    assert "Generated: `fake-base`" in value and "of 2 from one request" in value, value
    editor.nvim.input("G$]n")
    wait_for(lambda: said["second-base"].strip() in editor.text, 10, "the second sibling")
    wait_for(lambda: any(" second-base ◀ 2/2 ▶" in m for m in markers()), 10,
             "the second sibling's marker naming its model")
    editor.set_cursor_on("The second one did")
    value = editor.request("textDocument/hover")["contents"]["value"]
    assert "Generated: `second-base`" in value, value

    # :Loom model without a name: a picker of the models and the sampler presets, the
    # ones in use marked; the test's vim.ui.select picks the row shown as _G.pick
    editor.lua("""
        _G.picked_from = nil
        vim.ui.select = function(items, opts, on_choice)
          _G.picked_from = { prompt = opts.prompt, shown = vim.tbl_map(opts.format_item, items) }
          for _, item in ipairs(items) do
            if vim.trim(opts.format_item(item)):find(_G.pick, 1, true) == 1 then
              on_choice(item)
            end
          end
        end
        return true""")
    editor.lua('_G.pick = "second "; return true')
    editor.cmd("Loom model")
    wait_for(lambda: any(m.startswith("✓ continue asks second in") for m in editor.messages()),
             10, "✓ continue asks second")
    picker = wait_for(lambda: editor.lua("return _G.picked_from"), 10, "the picker")
    assert picker["prompt"] == "Model or sampler preset for this tree (now fake)", picker
    assert "● fake  openai-compatible fake-base (default)" in picker["shown"], picker
    assert "  second  openai-compatible second-base" in picker["shown"], picker
    assert "  preset:wild  temperature 1.3 · top_k 100" in picker["shown"], picker
    before = len(fake.requests_to(OPENAI_COMPLETIONS))
    editor.cmd("Loom continue 1")
    wait_for(lambda: len(fake.requests_to(OPENAI_COMPLETIONS)) > before, 20, "the request")
    assert fake.requests_to(OPENAI_COMPLETIONS)[-1].json["model"] == "second-base"
    # the preset, picked in the same picker: what continue samples with in the tree
    editor.lua('_G.pick = "preset:wild"; return true')
    editor.cmd("Loom model")
    wait_for(lambda: any(m.startswith("✓ continue samples with preset wild in")
                         for m in editor.messages()), 10, "✓ … preset wild")
    before = len(fake.requests_to(OPENAI_COMPLETIONS))
    editor.cmd("Loom continue 1")
    wait_for(lambda: len(fake.requests_to(OPENAI_COMPLETIONS)) > before, 20, "the request")
    sent = fake.requests_to(OPENAI_COMPLETIONS)[-1].json
    assert sent["model"] == "second-base" and sent["top_k"] == 100, sent
    assert sent["temperature"] == 1.3
    editor.lua('_G.pick = "● second"; _G.picked_from = nil; return true')
    editor.cmd("Loom model")
    picker = wait_for(lambda: editor.lua("return _G.picked_from"), 10, "the picker")
    assert picker["prompt"] == ("Model or sampler preset for this tree "
                                "(now second with preset wild)"), picker
    assert "● preset:wild  temperature 1.3 · top_k 100" in picker["shown"], picker
    assert "  preset:none  the model's own defaults" in picker["shown"], picker
    editor.cmd("Loom model preset:none")
    wait_for(lambda: any("continue samples as the model's defaults" in m
                         for m in editor.messages()), 10, "no preset again")
    editor.cmd("Loom model default")
    wait_for(lambda: any("continue asks the default model" in m for m in editor.messages()),
             10, "the default again")


def test_explore_from_the_node_under_the_cursor_then_stop_it(fake: FakeProvider,
                                                              editor: Editor,
                                                              demo: Demo) -> None:
    """`:Loom explore OPTIONS` with the cursor on the story's first node: the collaborator
    explores from that node (its progress in `vim.lsp.status()`); `:Loom explore end`
    ends it with nothing half-written. Without options it asks for the rubric."""
    fake.set_default(OPENAI_COMPLETIONS, lambda _req: openai_completion_stream(
        [" One slow sentence that takes its time, word by word."], event_delay_s=0.3))
    fake.set_default(OPENAI_CHAT, lambda _req: openai_chat_stream("7/10 — it moves"))
    first = demo.local_id(STORY_START)
    nodes = demo.scalar("SELECT count(*) FROM node")
    editor.open(demo.uri(demo.tip))
    editor.set_cursor_on(STORY_START)
    editor.cmd('Loom explore depth:2 n:1 judge:"vivid, and it moves"')
    wait_for(lambda: any(m.startswith(f"✓ exploring from [{first}]")
                         for m in editor.messages()), 10, f"✓ exploring from [{first}]")
    wait_for(lambda: "exploring from" in str(editor.lua("return vim.lsp.status()")), 10,
             "the exploration's progress in vim.lsp.status()")
    wait_for(lambda: fake.requests_to(OPENAI_COMPLETIONS), 10, "the first continuation asked")
    editor.cmd("Loom explore end")
    wait_for(lambda: any(m.startswith(f"✓ stopped exploring from [{first}]")
                         for m in editor.messages()), 15, "✓ stopped exploring")
    assert demo.scalar("SELECT count(*) FROM change WHERE kind = 'explore.end'") == 1
    assert demo.scalar("SELECT count(*) FROM node") == nodes  # nothing half-written
    assert demo.scalar("SELECT count(*) FROM branch_lock") == 0
    # without options: the rubric asked, the defaults taken
    editor.lua("""
        vim.ui.input = function(opts, on_confirm)
          _G.asked_for = opts.prompt
          on_confirm('surprising "but" true')
        end
        return true""")
    editor.cmd("Loom explore")
    wait_for(lambda: demo.scalar("SELECT count(*) FROM change WHERE kind = 'explore.start'")
             == 2, 10, "the second exploration started")
    assert "What makes a good branch" in editor.lua("return _G.asked_for")
    rubric = demo.scalar("SELECT payload FROM change WHERE kind = 'explore.start' "
                         "ORDER BY seq DESC LIMIT 1")
    assert "surprising 'but' true" in rubric and '"depth": 3' in rubric, rubric
    editor.cmd("Loom cancel")  # as :Loom explore end
    wait_for(lambda: demo.scalar("SELECT count(*) FROM change WHERE kind = 'explore.end'")
             == 2, 15, "the second exploration ended")


def test_export_writes_the_other_looms_files_and_says_what_they_cannot_hold(
        editor: Editor, demo: Demo, tmp_path: Path) -> None:
    """`:Loom export FORMAT FILE` for another loom's file: MiniLoom's JSON and a Tapestry
    weave (binary, through base64) are written where the writer said, the notification
    lists what the format cannot hold, and each file imports back."""
    editor.open(demo.uri(demo.tip))
    wait_for(editor.attached, 10, "the client")
    mini, weave = tmp_path / "story.json", tmp_path / "story.tapestry"
    editor.cmd(f"Loom export miniloom {mini}")
    said = wait_for(lambda: next((m for m in editor.messages()
                                  if m.startswith(f"✓ exported to {mini}")), None), 20,
                    "the MiniLoom export")
    assert "MiniLoom cannot hold it" in said and "annotation" in said, said
    assert '"loomTree"' in mini.read_text(encoding="utf-8")
    editor.cmd(f"Loom export tapestry {weave}")
    said = wait_for(lambda: next((m for m in editor.messages()
                                  if m.startswith(f"✓ exported to {weave}")), None), 20,
                    "the Tapestry export")
    assert weave.stat().st_size > 100 and not weave.read_bytes().startswith(b"{")
    editor.cmd("Loom export tapestry")  # no file: a binary file is not shown in a buffer
    wait_for(lambda: any("is a binary file" in m for m in editor.messages()), 10,
             "the binary export refused without a file")
    for path in (mini, weave):
        out = loom_cli(demo.db, "import", str(path))
        assert out.startswith("✓ imported "), out
