"""Files that cannot be imported: a clear ✗ naming what is wrong, and nothing written."""

from __future__ import annotations

import copy
import json
import os
from pathlib import Path
from typing import Any

import pytest

from loom.cli import main
from loom.errors import LoomError
from loom.interchange import ImportLimits, detect_format, import_file
from loom.interchange.openloom import export_openloom
from loom.store.schema import (
    Change,
    Document,
    Edge,
    EdgeSource,
    Generation,
    Link,
    Media,
    Node,
    Participant,
    Position,
    Tree,
)
from loom.store.workspace import Workspace
from tests.unit.interchange_support import DEMO, MINIMAL, data_uri, fresh, png

TABLES = (Tree, Node, Edge, EdgeSource, Link, Document, Participant, Generation, Position,
          Change, Media)


def counts() -> dict[str, int]:
    return {m.__name__: m.select().count() for m in TABLES}


@pytest.fixture
def setup(tmp_path: Path) -> tuple[Workspace, dict[str, Any]]:
    """A database with one tree in it, and that tree's export."""
    ws = fresh(tmp_path / "loom.db")
    human = ws.human()
    tree = ws.create_tree("Sea", "buffer", root_content="The sea")
    root = ws.node(tree.root)
    a = ws.add_node(tree, root, " was calm.", human)
    ws.add_node(tree, a, " Then a wave.", ws.subject())
    ws.add_node(tree, root, " roared.", human)
    ws.add_node(tree, a, "Nice.", human, kind="annotation")
    return ws, export_openloom(ws, tree)


def fails(ws: Workspace, path: Path, content: str | bytes | None,
          code: str = "INVALID_SYNTAX", limits: ImportLimits | None = None) -> LoomError:
    if content is not None:
        path.write_bytes(content.encode("utf-8") if isinstance(content, str) else content)
    before = counts()
    with pytest.raises(LoomError) as err:
        import_file(ws, path, limits=limits)
    assert err.value.code == code, err.value.message
    assert counts() == before  # nothing written
    return err.value


def test_not_json(setup: tuple[Workspace, dict[str, Any]], tmp_path: Path) -> None:
    ws, _ = setup
    err = fails(ws, tmp_path / "x.json", "{nodes: [1, 2]}")
    assert "x.json is not valid JSON" in err.message and "line 1 column 2" in err.message


def test_truncated(setup: tuple[Workspace, dict[str, Any]], tmp_path: Path) -> None:
    ws, data = setup
    text = json.dumps(data, indent=1)
    for cut in (len(text) // 2, len(text) - 2, 40):
        err = fails(ws, tmp_path / "sea.openloom", text[:cut])
        assert "truncated" in err.message, err.message


def test_truncated_socketteer_fixture(setup: tuple[Workspace, dict[str, Any]],
                                      tmp_path: Path) -> None:
    ws, _ = setup
    if not DEMO.exists():
        pytest.skip("fixture missing")
    err = fails(ws, tmp_path / "demo.json", DEMO.read_bytes()[:300_000])
    assert "truncated" in err.message


def test_empty_binary_and_missing(setup: tuple[Workspace, dict[str, Any]],
                                  tmp_path: Path) -> None:
    ws, _ = setup
    assert "empty" in fails(ws, tmp_path / "e.json", "  \n").message
    assert "not UTF-8" in fails(ws, tmp_path / "b.json", b"\xff\xfe\x00garbage").message
    err = fails(ws, tmp_path / "nowhere.json", None, "NOT_FOUND")
    assert "nowhere.json" in err.message


# The first 48 bytes of Tapestry Loom's docs/example-weaves/welcome.tapestry: the magic,
# a 64-bit version, then rkyv data; the rest of a weave is binary too.
TAPESTRY = (b"VersionedTapestryWeave__" + bytes(8) + b" you\x04" + bytes(7) + b"\x05\x00\x00"
            b"\x00\x02" + bytes(7))


def test_a_damaged_tapestry_weave_says_what_it_is(setup: tuple[Workspace, dict[str, Any]],
                                                  tmp_path: Path,
                                                  capsys: pytest.CaptureFixture[str],
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """A weave is read (tests/unit/test_interchange_tapestry.py); the first bytes of one are
    not "not UTF-8 text … export the file as JSON again" but a damaged weave."""
    ws, _ = setup
    for content in (TAPESTRY + b"\xff\x9c\x00" * 100, TAPESTRY):  # (the second is UTF-8)
        err = fails(ws, tmp_path / "welcome.tapestry", content)
        assert err.message.startswith("welcome.tapestry is a Tapestry Loom weave that Loom "
                                      "cannot read: ")
        assert "truncated" in err.message
        assert err.hint is not None and "nothing was imported" in err.hint
    monkeypatch.setenv("LOOM_DB", str(tmp_path / "cli.db"))
    assert main(["import", str(tmp_path / "welcome.tapestry")]) == 1
    out = capsys.readouterr().err
    assert out.startswith("✗ INVALID_SYNTAX: welcome.tapestry is a Tapestry Loom weave")


def test_only_regular_files_are_read(setup: tuple[Workspace, dict[str, Any]],
                                     tmp_path: Path) -> None:
    ws, _ = setup
    err = fails(ws, tmp_path, None)
    assert "is a directory" in err.message
    fifo = tmp_path / "pipe.json"
    os.mkfifo(fifo)  # opening it for reading would block until a writer came
    err = fails(ws, fifo, None)
    assert "named pipe" in err.message and "not a file Loom can import" in err.message
    if Path("/dev/zero").exists():
        err = fails(ws, Path("/dev/zero"), None)  # would never end
        assert "character device" in err.message


def test_bytes_read_are_capped(setup: tuple[Workspace, dict[str, Any]], tmp_path: Path,
                               monkeypatch: pytest.MonkeyPatch) -> None:
    ws, data = setup
    path = tmp_path / "big.openloom"
    path.write_text(json.dumps(data), encoding="utf-8")
    small = ImportLimits(max_file_bytes=100)
    err = fails(ws, path, None, "LIMIT_EXCEEDED", limits=small)
    assert "larger than the import limit of 100 bytes" in err.message
    assert "LOOM_IMPORT_MAX_MB" in (err.hint or "")
    monkeypatch.setenv("LOOM_IMPORT_MAX_MB", "0.0001")
    fails(ws, path, None, "LIMIT_EXCEEDED")
    monkeypatch.setenv("LOOM_IMPORT_MAX_MB", "lots")
    assert "not a number" in fails(ws, path, None).message
    assert ImportLimits().max_file_bytes > 100 * 1024 * 1024  # far above any real loom


def test_wrong_shapes(setup: tuple[Workspace, dict[str, Any]], tmp_path: Path) -> None:
    ws, _ = setup
    assert "JSON array, not a loom" in fails(ws, tmp_path / "l.json", "[1, 2]").message
    err = fails(ws, tmp_path / "u.json", '{"title": "x", "things": []}')
    assert "unrecognised" in err.message and "things, title" in err.message
    assert err.hint and "open-loom" in err.hint
    with pytest.raises(LoomError, match="not a format Loom reads"):
        detect_format({"format": "tinderbox"})


def test_another_major_version_is_refused_by_name(setup: tuple[Workspace, dict[str, Any]],
                                                  tmp_path: Path) -> None:
    ws, data = setup
    three = {**copy.deepcopy(data), "version": "3.0"}
    err = fails(ws, tmp_path / "v.openloom", json.dumps(three))
    assert err.message == ("version: this is Open Loom 3.0, a major version this Loom does "
                           "not read (it reads Open Loom 2.x)")
    missing = {k: v for k, v in data.items() if k != "version"}
    assert fails(ws, tmp_path / "v1.openloom", json.dumps(missing)).message.startswith(
        "version:")


def test_nothing_to_import(setup: tuple[Workspace, dict[str, Any]], tmp_path: Path) -> None:
    ws, _ = setup
    err = fails(ws, tmp_path / "n.openloom", json.dumps({**MINIMAL, "trees": []}))
    assert err.message.startswith("trees: the document has no trees")
    no_nodes = copy.deepcopy(MINIMAL)
    no_nodes["trees"][0]["nodes"] = {}
    err = fails(ws, tmp_path / "m.openloom", json.dumps(no_nodes))
    assert "no tree in the document has a node" in err.message


def test_media_that_is_not_what_it_says_is_refused(setup: tuple[Workspace, dict[str, Any]],
                                                   tmp_path: Path) -> None:
    ws, _ = setup
    doc = copy.deepcopy(MINIMAL)
    block = {"type": "image", "ref": data_uri("image/jpeg", png()), "mimeType": "image/jpeg"}
    doc["trees"][0]["nodes"]["a"]["content"].append(block)
    err = fails(ws, tmp_path / "m.openloom", json.dumps(doc))
    assert err.message == ('trees[0].nodes["a"].content[1]: declared "image/jpeg" but the '
                           "bytes are image/png")
    block.update(ref=data_uri("image/png", b"<html><script>alert(1)</script>"),
                 mimeType="image/png")
    assert "not image/png" in fails(ws, tmp_path / "m.openloom", json.dumps(doc)).message
    block.update(ref=data_uri("image/png", png()), mimeType="image/gif")
    err = fails(ws, tmp_path / "m.openloom", json.dumps(doc))
    assert 'the data: URI says "image/png" but mimeType says "image/gif"' in err.message
    block.update(ref=data_uri("text/html", b"<html></html>"), mimeType="text/html")
    assert '"text/html" is not an image type' in fails(ws, tmp_path / "m.openloom",
                                                       json.dumps(doc)).message


def test_cli_prints_a_clear_error(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                  monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LOOM_DB", str(tmp_path / "cli.db"))
    fifo = tmp_path / "p.json"
    os.mkfifo(fifo)
    assert main(["import", str(fifo)]) == 1
    err = capsys.readouterr().err
    assert err.startswith(f"✗ INVALID_SYNTAX: {fifo} is a named pipe (FIFO)")
    assert "  hint: " in err and "Error" not in err
    big = tmp_path / "big.json"
    big.write_text(json.dumps(MINIMAL), encoding="utf-8")
    assert main(["import", str(big), "--max-mb", "0.0001"]) == 1
    assert capsys.readouterr().err.startswith("✗ LIMIT_EXCEEDED: ")


def test_a_file_too_big_for_this_machines_memory_is_refused_before_it_is_read(
        setup: tuple[Workspace, dict[str, Any]], tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    """An import took ~15x a file's size (a 500 MB file under the 512 MB
    cap peaked at 7.35 GB); a file this machine cannot import is refused up front, saying
    how much it needs and what would fit, and nothing is written."""
    from loom.interchange import files

    ws, document = setup
    text = json.dumps(document)
    monkeypatch.setattr(files, "available_memory", lambda: files.PROCESS_MEMORY + 4 * len(text))
    err = fails(ws, tmp_path / "big.openloom", text, code="LIMIT_EXCEEDED")
    assert err.message.startswith("importing big.openloom (")
    assert "of memory and this machine has" in err.message and "import here" in err.message
    assert "nothing was written" in (err.hint or "")
    monkeypatch.setattr(files, "available_memory", lambda: None)  # unknown: no guess
    import_file(ws, tmp_path / "big.openloom")
    # the estimate: a 500 MB file needs about 5 GB
    with pytest.raises(LoomError) as big:
        files.refuse_beyond_memory(500 * files.MB, "x.json", available=4 * 1024 * files.MB)
    assert "needs about 5,200 MB of memory" in big.value.message
    assert "files up to about 389.6 MB import here" in big.value.message
