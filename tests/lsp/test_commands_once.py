"""Command lines run once, and only when the human typed them: node content is prose,
whatever arrows it holds; a save runs each typed line once and removes it."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from pathlib import Path

import pytest
from pytest_lsp import LanguageClient

from loom.commands import lexicon
from tests.lsp.conftest import Editor, sql

INDENTS = ("", "  ", "\t")


def _edit_root(db: Path, content: str) -> str:
    """Give the demo's root this content through the CLI (a version on the path)."""
    tree = sql(db, "SELECT id FROM tree")[0][0]
    out = subprocess.run(
        [sys.executable, "-m", "loom.cli", "--db", str(db), "do", tree,
         "→ edit root " + _quote(content)], capture_output=True, text=True, check=True)
    assert out.stdout.startswith("✓"), out
    return tree


def _quote(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


def _uri(db: Path) -> str:
    tree, tip = sql(db, "SELECT p.tree, n.local_id FROM position p JOIN participant h "
                        "ON h.id = p.participant JOIN node n ON n.id = p.tip "
                        "WHERE h.name = 'human'")[0]
    return f"loom://path/{tree}/{tip}"


def _counts(db: Path) -> tuple[int, int]:
    return (sql(db, "SELECT count(*) FROM node")[0][0],
            sql(db, "SELECT count(*) FROM trace_entry")[0][0])


async def _open(editor: Editor) -> str:
    uri = _uri(editor.db)  # type: ignore[arg-type]
    res = await editor.request("loom/read", {"uri": uri})
    editor.open(uri, res["text"])
    return uri


async def test_command_lines_inside_node_content_never_run(client: LanguageClient,
                                                           db: Path) -> None:
    editor: Editor = client.editor  # type: ignore[attr-defined]
    lines = [f"{indent}{arrow} annotate root \"x\"" for arrow in lexicon.ARROWS
             for indent in INDENTS]
    lines += ["→ pin root", "-> view root"] * 200  # hundreds of them
    _edit_root(db, "The house.\n" + "\n".join(lines) + "\n")
    before = _counts(db)
    uri = await _open(editor)
    for _ in range(3):
        res = await editor.request("loom/save", {"uri": uri, "text": editor.texts[uri]})
        assert res["ok"], res
        assert "nothing to commit" in res["message"]
    await asyncio.sleep(0.5)
    assert _counts(db) == before  # no node, and not even a trace entry: nothing ran
    assert editor.texts[uri].count("annotate root") == len(lexicon.ARROWS) * len(INDENTS)


@pytest.mark.parametrize("indent", INDENTS)
async def test_each_typed_command_runs_once_and_is_removed(client: LanguageClient, db: Path,
                                                           indent: str) -> None:
    editor: Editor = client.editor  # type: ignore[attr-defined]
    uri = await _open(editor)
    root = sql(db, "SELECT local_id FROM node WHERE kind = 'root'")[0][0]
    typed = "".join(f"\n{indent}{arrow} annotate {root} \"note {i}\""
                    for i, arrow in enumerate(lexicon.ARROWS))
    editor.append(uri, typed)
    res = await editor.request("loom/save", {"uri": uri, "text": editor.texts[uri]})
    assert res["ok"], res
    notes = sql(db, "SELECT content FROM node WHERE kind = 'annotation' AND content LIKE "
                    "'note %' ORDER BY content")
    assert notes == [(f"note {i}",) for i in range(len(lexicon.ARROWS))]
    await editor.wait_for(lambda: "annotate" not in editor.texts[uri])
    # a second save runs nothing again
    res = await editor.request("loom/save", {"uri": uri, "text": editor.texts[uri]})
    assert sql(db, "SELECT count(*) FROM node WHERE content LIKE 'note %'") == [
        (len(lexicon.ARROWS),)]


async def test_a_command_typed_into_a_node_runs_once(client: LanguageClient,
                                                     db: Path) -> None:
    editor: Editor = client.editor  # type: ignore[attr-defined]
    uri = await _open(editor)
    root = sql(db, "SELECT local_id FROM node WHERE kind = 'root'")[0][0]
    at = editor.texts[uri].index(" She hadn't")
    editor.replace(uri, at, at, f'\n→ annotate {root} "typed inside"\n')
    res = await editor.request("loom/save", {"uri": uri, "text": editor.texts[uri]})
    assert res["ok"], res
    assert sql(db, "SELECT count(*) FROM node WHERE content = 'typed inside'") == [(1,)]
    await editor.wait_for(lambda: "typed inside" not in editor.texts[uri])
