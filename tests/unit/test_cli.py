"""The `loom` command line: every subcommand, its output and its exit code."""

from __future__ import annotations

import io
import json
import re
import sys
from pathlib import Path

import pytest

from loom.cli import main
from tests.conftest import FIXTURES


@pytest.fixture(autouse=True)
def db(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    path = tmp_path / "cli.db"
    monkeypatch.setenv("LOOM_DB", str(path))
    monkeypatch.setenv("LOOM_SUBJECT", "none")
    return path


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out = capsys.readouterr()
    return code, out.out, out.err


def test_new_trees_do(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "new", "Sea Story", "--text", "The sea was calm.")
    assert code == 0 and out.startswith('✓ created tree "Sea Story" (buffer) ')
    code, out, _ = run(capsys, "trees")
    assert code == 0 and re.search(r"^\w{26}\s+1 node\s+buffer\s+\"Sea Story\"$", out, re.M)
    code, out, _ = run(capsys, "do", "Sea Story", '→ respond root "A gull cried."', "→ tree")
    assert code == 0
    assert re.match(r"✓ created \[\w{6}\] as continuation from \[\w{6}\]\n  switched to", out)
    assert "(2 nodes, 0 branches)" in out
    # a failing line: printed, exit 1, and the others still ran
    code, out, _ = run(capsys, "do", "sea story", "→ view zzzzzz", "→ memory trace")
    assert code == 1
    assert "✗ NOT_FOUND: node [zzzzzz] does not exist in this tree" in out
    assert "→ view zzzzzz  ✗ NOT_FOUND" in out


def test_do_continue_without_model(capsys: pytest.CaptureFixture[str]) -> None:
    run(capsys, "new", "T")
    code, out, _ = run(capsys, "do", "T", "→ continue n:2")
    # (the suite turns models off: LOOM_SUBJECT=none, and the error says so)
    assert code == 1 and out.startswith("✗ MODEL_ERROR: the subject model is turned off")


def test_bad_tree_and_bad_input(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    code, _, err = run(capsys, "do", "nope", "→ tree")
    assert code == 1 and err.startswith('✗ NOT_FOUND: tree "nope" does not exist')
    bad = tmp_path / "bad.json"
    bad.write_text('{"root": {"children": [', encoding="utf-8")
    code, _, err = run(capsys, "import", str(bad))
    assert code == 1 and err.startswith("✗ ")
    code, out, _ = run(capsys, "trees")
    assert "no trees yet" in out  # nothing half-written


def test_parse(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "parse", "→ show me node a7x2")
    data = json.loads(out)
    assert code == 0 and data["canonical"] == "→ view a7x2" and data["verb"] == "view"
    code, out, _ = run(capsys, "parse", "--format", "loom", "-> continue from b3k9 n:3")
    assert code == 0 and "canonical: → continue from b3k9 n:3" in out and "n: 3" in out
    code, out, _ = run(capsys, "parse", "→ frobnicate")
    assert code == 1 and out.startswith("✗ INVALID_SYNTAX: ")


def test_import_export_roundtrip(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    code, out, _ = run(capsys, "import", str(FIXTURES / "socketteer-loom-demo.json"))
    assert code == 0
    # 764 in the file: why the count says 658 is on the first line, which is all an
    # editor's notification shows
    assert out.startswith('✓ imported "socketteer-loom-demo" (658 nodes, 22 bookmarks; '
                          "not counted: 106 archived)\n  from socketteer/loom; tree ")
    tree_id = re.search(r"tree (\w{26})", out).group(1)  # type: ignore[union-attr]
    target = tmp_path / "out.openloom"
    code, out, _ = run(capsys, "export", tree_id, "--format", "openloom", "-o", str(target),
                       "--no-raw")
    assert code == 0 and target.exists()
    assert out.startswith('✓ exported "socketteer-loom-demo" (658 nodes) to ')
    assert "as Open Loom (" in out and "left out: raw responses" in out
    data = json.loads(target.read_text(encoding="utf-8"))
    assert data["format"] == "open-loom" and len(data["trees"][0]["nodes"]) == 764
    code, out, _ = run(capsys, "import", str(target))
    assert code == 0 and '"socketteer-loom-demo (2)" (658 nodes, 22 bookmarks; not counted' in out
    code, out, _ = run(capsys, "export", tree_id, "--format", "loom")
    assert code == 0 and out.startswith("format: open-loom")
    code, out, _ = run(capsys, "export", tree_id, "--format", "md")
    assert code == 0 and out.startswith("# ")


def test_demo_uri_and_shell(capsys: pytest.CaptureFixture[str],
                            monkeypatch: pytest.MonkeyPatch) -> None:
    code, out, _ = run(capsys, "demo", "--no-editor")
    assert code == 0 and '✓ demo tree "The House at the End of the Lane" ready (11 nodes)' in out
    assert "├→" in out
    # loom trees counts as → tree does, and says what it does not count
    code, out, _ = run(capsys, "trees")
    assert re.search(r"^\w{26}\s+11 nodes \(not counted: 3 annotations\)\s+buffer\s+"
                     r'"The House at the End of the Lane"$', out, re.M), out
    code, out, _ = run(capsys, "do", "The House at the End of the Lane", "→ tree")
    assert out.startswith('Tree: "The House at the End of the Lane" (11 nodes, 3 branches)')
    code, out, _ = run(capsys, "uri", "The House at the End of the Lane")
    assert code == 0 and re.fullmatch(r"loom://tree/\w{26}/[^/\s]+\n", out)
    monkeypatch.setattr("sys.stdin", io.StringIO("help view\n→ list continuations\n"
                                                 "→ think\nthe gate matters\n←\n"
                                                 "memory trace\nquit\n"))
    code, out, _ = run(capsys, "shell", "The House at the End of the Lane")
    assert code == 0
    assert out.startswith("view — Inspect a node's content and metadata")
    assert "✓ thought kept in memory" in out
    assert out.rstrip().endswith("→ think")


def test_the_tree_for_people_shows_the_notes_on_each_node(capsys: pytest.CaptureFixture[str]
                                                        ) -> None:
    """`loom tree` showed no annotations, so the collaborator's notes were
    invisible in the overview."""
    code, _out, _ = run(capsys, "demo", "--no-editor")
    assert code == 0
    code, out, _ = run(capsys, "tree", "The House")
    assert code == 0
    assert "(2 notes) annotated" in out.splitlines()[2]
    noted = [line for line in out.splitlines() if line.endswith("(1 note)")]
    assert len(noted) == 3 and any("She hadn't visited" in line for line in noted)


def test_loom_mcp_without_the_mcp_extra_says_how_to_get_it(
        capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    for name in [m for m in sys.modules if m == "mcp" or m.startswith(("mcp.",
                                                                        "loom.mcp_server"))]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "mcp", None)  # (an import of it fails)
    code, out, err = run(capsys, "mcp")
    assert code != 0 and out == ""
    assert err.startswith("✗ INVALID_SYNTAX: loom mcp needs the mcp extra"), err
    assert "hint: pipx install --force 'loom-lsp[mcp]'" in err
