"""A database path in a folder that does not exist, as a Neovim user meets it: the server
refuses it (it makes no folders: a mistyped path would be a new, empty workspace), and
``:checkhealth loom`` says the same, as an error with the fix, in a real headless Neovim.
In a real terminal 80 columns wide (tmux) the refusal is read to its end: one message,
wrapped in the corner float, which waits for the writer (an error), and the message line
says where the rest is."""

# ruff: noqa: F811 - the Neovim fixtures come from test_nvim_plugin (see the import)
from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.e2e.test_nvim_plugin import (  # noqa: F401 - fixtures
    NVIM,
    PLUGIN,
    Demo,
    Editor,
    demo,
    editor,
    template,
    wait_for,
)

pytestmark = pytest.mark.nvim


def _server_says(db: Path) -> str:
    """What the server says of ``db``: the CLI's open, which the language server shares."""
    done = subprocess.run([sys.executable, "-m", "loom.cli", "--db", str(db), "trees"],
                          capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 1, done
    return done.stderr


def test_checkhealth_says_what_the_server_does_of_a_missing_folder(
        editor: Editor, tmp_path: Path) -> None:
    folder = tmp_path / "no" / "such"
    db = folder / "loom.db"
    said = _server_says(db)
    assert said.startswith(f"✗ NOT_FOUND: there is no folder {folder} for the database\n"), said
    fix = f"create the folder first (mkdir -p {folder}), or give a path in one that exists"
    assert f"  hint: {fix}" in said, said
    editor.lua("local cmd, db = ...; require('loom').setup({ cmd = cmd, db = db })",
               [sys.executable, "-m", "loom.cli", "--db", str(db), "serve"], str(db))
    editor.cmd("checkhealth loom")
    report = editor.text
    assert f"ERROR there is no folder {folder} for the database {db}: the server refuses " \
           "it" in report, report
    assert fix in report, report
    assert "the server creates it" not in report, report
    assert not folder.exists()
    # a new file in a folder that exists is what the server does make
    editor.lua("require('loom').setup({ db = ... })", str(tmp_path / "new.db"))
    editor.cmd("checkhealth loom")
    assert f"database {tmp_path / 'new.db'} does not exist yet (the server creates it)" in \
        editor.text


class Screen:
    """Neovim with the plugin in a tmux terminal of 80 columns, read as a person reads it."""

    def __init__(self, tmp: Path, init: Path) -> None:
        self.sock = f"loom-folder-{os.getpid()}"
        env = {**os.environ, "LOOM_NO_KEYRING": "1", "LOOM_SUMMARIES": "off"}
        for var in ("XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_STATE_HOME"):
            (tmp / var).mkdir(exist_ok=True)
            env[var] = str(tmp / var)
        subprocess.run(["tmux", "-L", self.sock, "new-session", "-d", "-s", "w", "-x", "80",
                        "-y", "24", f"{NVIM} -n -i NONE -u {init}"], env=env, check=True)

    def text(self) -> str:
        return subprocess.run(["tmux", "-L", self.sock, "capture-pane", "-p", "-t", "w"],
                              capture_output=True, text=True, check=False).stdout

    def keys(self, *keys: str) -> None:
        for key in keys:
            subprocess.run(["tmux", "-L", self.sock, "send-keys", "-t", "w", key], check=True)
            time.sleep(0.1)

    def close(self) -> None:
        subprocess.run(["tmux", "-L", self.sock, "kill-server"], capture_output=True,
                       check=False)


def _squash(text: str) -> str:
    """The screen's words without the float's frame and the line breaks of its wrapping."""
    return re.sub(r"[\s│╭╮╰╯─~]+", "", text)


@pytest.fixture
def screen(tmp_path: Path) -> Iterator[tuple[Screen, Path]]:
    if shutil.which("tmux") is None:
        pytest.skip("tmux is not installed (scripts/tmux-setup.sh)")
    folder = tmp_path / "no" / "such"
    init = tmp_path / "init.lua"
    init.write_text(
        f'vim.opt.runtimepath:prepend("{PLUGIN}")\nvim.opt.swapfile = false\n'
        'vim.opt.shortmess:append("I")\n'  # (no intro screen beside the float to read past)
        'vim.cmd("runtime plugin/loom.lua")\n'
        f'require("loom").setup({{ cmd = {{ "{sys.executable}", "-m", "loom.cli", "--db", '
        f'"{folder / "loom.db"}", "serve" }}, db = "{folder / "loom.db"}" }})\n',
        encoding="utf-8")
    term = Screen(tmp_path, init)
    try:
        yield term, folder
    finally:
        term.close()


def test_the_servers_refusal_reads_to_its_end_at_80_columns(
        screen: tuple[Screen, Path]) -> None:
    term, folder = screen
    wait_for(lambda: "[No Name]" in term.text(), 10, "Neovim on screen")
    term.keys(":Loom open", "Enter")
    whole = (f"✗ NOT_FOUND: there is no folder {folder} for the database hint: create the "
             f"folder first (mkdir -p {folder}), or give a path in one that exists")

    def refusal() -> str | None:
        now = term.text()
        return now if _squash(whole) in _squash(now) else None

    try:
        shown = wait_for(refusal, 30, "the whole refusal on screen")
    except AssertionError as err:
        raise AssertionError(f"{err}; the screen:\n{term.text()}") from None
    assert "Press ENTER" not in shown
    assert _squash(shown).count(_squash("there is no folder")) == 2, shown  # the float, the line
    assert shown.rstrip().splitlines()[-1].endswith("(:Loom messages)"), shown
    time.sleep(9)  # longer than any message's float stays by itself
    assert _squash(whole) in _squash(term.text()), term.text()  # an error waits for the writer
