"""`loom demo`, the README's main job, as a person meets it: in a real terminal (tmux), the
demo tree opens in Neovim with its story on screen and the plugin's greeting (before:
the URI's %20 reached :edit unescaped and Neovim opened empty, E499)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

REQUIRED = os.environ.get("CI") == "true"
pytestmark = pytest.mark.skipif(shutil.which("tmux") is None and not REQUIRED,
                                reason="tmux is not installed (scripts/tmux-setup.sh)")


def screen(sock: str) -> str:
    return subprocess.run(["tmux", "-L", sock, "capture-pane", "-p", "-t", "demo"],
                          capture_output=True, text=True, check=False).stdout


def test_loom_demo_opens_the_story_in_neovim(tmp_path: Path) -> None:
    sock = f"loom-test-{os.getpid()}"
    env = {**os.environ, "LOOM_SUBJECT": "none", "LOOM_SUMMARIES": "off",
           "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"}
    for var in ("XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_STATE_HOME"):
        (tmp_path / var).mkdir()
        env[var] = str(tmp_path / var)
    command = f"{sys.executable} -m loom.cli --db {tmp_path / 'loom.db'} demo"
    subprocess.run(["tmux", "-L", sock, "new-session", "-d", "-s", "demo", "-x", "140", "-y",
                    "40", command], env=env, check=True)
    try:
        deadline = time.monotonic() + 60
        shown = ""
        while time.monotonic() < deadline:
            shown = screen(sock)
            if "The house stood empty at the end of the lane." in shown and "Loom demo:" in shown:
                break
            time.sleep(0.2)
        assert "The house stood empty at the end of the lane." in shown, shown
        assert "Loom demo: K hover" in shown, shown
        assert "E499" not in shown and "Error detected" not in shown, shown
        # the status line names the tree as a person does: no ULID, no %20
        assert "The House at the End of the Lane" in shown, shown
        assert "%20" not in shown and "loom://path/" not in shown, shown
        subprocess.run(["tmux", "-L", sock, "send-keys", "-t", "demo", ":qa!", "Enter"],
                       check=False)
    finally:
        subprocess.run(["tmux", "-L", sock, "kill-server"], check=False, capture_output=True)
