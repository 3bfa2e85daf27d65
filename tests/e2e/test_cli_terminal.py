"""The `loom` command line as a terminal user meets it: a closed
pipe is not an error, `--help` reads as plain text, titles work as tree names."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest


def loom(db: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "loom.cli", "--db", str(db), *args],
                          capture_output=True, text=True, timeout=120)


@pytest.fixture(scope="module")
def db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("cli") / "loom.db"
    assert loom(path, "demo", "--no-editor").returncode == 0
    return path


def test_a_closed_pipe_is_not_an_error(db: Path) -> None:
    """`loom do … | head -1` printed `✗ BrokenPipeError`."""
    many = ["→ tree"] * 200
    proc = subprocess.Popen([sys.executable, "-m", "loom.cli", "--db", str(db), "do",
                             "the house", *many], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    assert proc.stdout is not None and proc.stderr is not None
    first = proc.stdout.readline()
    proc.stdout.close()  # what `head -1` does
    err = proc.stderr.read()
    code = proc.wait(timeout=60)
    assert first.startswith("Tree: ")
    assert "BrokenPipe" not in err and "✗" not in err, err
    assert code == 141


def test_help_is_plain_text(db: Path) -> None:
    out = loom(db, "--help")
    assert out.returncode == 0
    assert "``" not in out.stdout, out.stdout
    assert "TREE is a tree's id" in out.stdout


def test_a_tree_by_the_start_of_its_title(db: Path) -> None:
    out = loom(db, "do", "the house at", "→ view root")
    assert out.returncode == 0, out.stdout + out.stderr
    assert out.stdout.startswith("[")
    out = loom(db, "do", "no such tree", "→ view root")
    assert out.returncode == 1 and out.stderr.startswith('✗ NOT_FOUND: tree "no such tree"')
