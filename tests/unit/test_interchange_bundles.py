"""Open Loom bundles: a ZIP with tree.openloom and its media. Read with every member
checked, written when a tree holds media files; hostile bundles are refused whole."""

from __future__ import annotations

import copy
import io
import json
import stat
import zipfile
from pathlib import Path
from typing import Any

import pytest

from loom.cli import main
from loom.errors import LoomError
from loom.interchange import ImportLimits, export_tree, import_bytes, import_file
from loom.interchange.openloom import export_openloom
from loom.store.schema import Media, Node, Tree
from tests.unit.interchange_support import MINIMAL, fresh, png, wav, without_export_stamp


def bundled_doc() -> dict[str, Any]:
    doc = copy.deepcopy(MINIMAL)
    doc["trees"][0]["nodes"]["b"]["content"].append(
        {"type": "image", "ref": "media/fox.png", "mimeType": "image/png",
         "altText": "a fox"})
    doc["trees"][0]["nodes"]["c"]["content"].append(
        {"type": "audio", "ref": "media/loom.wav", "mimeType": "audio/wav"})
    return doc


def zipped(members: dict[str, bytes], *, symlink: str | None = None) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as z:
        for name, data in members.items():
            info = zipfile.ZipInfo(name)
            if name == symlink:
                info.external_attr = (stat.S_IFLNK | 0o777) << 16
            z.writestr(info, data, compress_type=zipfile.ZIP_DEFLATED)
    return buf.getvalue()


def bundle(doc: dict[str, Any] | None = None, **extra: bytes) -> bytes:
    return zipped({"tree.openloom": json.dumps(doc or bundled_doc()).encode(),
                   "media/fox.png": png(3, 2), "media/loom.wav": wav(), **extra})


def test_a_bundle_imports_with_its_media_and_exports_as_it_was(tmp_path: Path) -> None:
    ws = fresh(tmp_path / "loom.db")
    path = tmp_path / "hello.zip"
    path.write_bytes(bundle())
    report = import_file(ws, path)
    made = report.trees[0]
    assert (made.images, made.audio) == (1, 1)
    assert report.summary(made) == 'imported "Hello" (3 nodes, 1 image and 1 audio file kept)'
    nodes = {n.extra["interchange"].get("id"): n for n in Node.select().where(
        Node.tree == made.tree.id)}
    assert nodes["b"].content == " there was a fox.[image: a fox]"
    assert Media.get_by_id(nodes["b"].extra["interchange"]["media"]["1"]["sha"]).data == \
        png(3, 2)
    out = export_tree(ws, made.tree)  # media came in a bundle: they leave in one
    assert isinstance(out, bytes)
    with zipfile.ZipFile(io.BytesIO(out)) as z:
        assert sorted(z.namelist()) == ["media/fox.png", "media/loom.wav", "tree.openloom"]
        assert z.read("media/fox.png") == png(3, 2)
        assert without_export_stamp(json.loads(z.read("tree.openloom"))) == bundled_doc()
    inline = export_openloom(ws, made.tree)  # one JSON: the media as data: URIs
    ref = inline["trees"][0]["nodes"]["b"]["content"][1]["ref"]
    assert ref.startswith("data:image/png;base64,")
    ws.db.close()
    ws = fresh(tmp_path / "again.db")  # and that JSON imports to the same tree
    again = import_bytes(ws, json.dumps(inline).encode(), "inline.openloom").trees[0]
    assert (again.images, again.audio) == (1, 1)


def test_media_from_data_uris_can_leave_as_a_bundle(tmp_path: Path) -> None:
    ws = fresh(tmp_path / "loom.db")
    doc = copy.deepcopy(MINIMAL)
    doc["trees"][0]["nodes"]["a"]["content"].append(
        {"type": "image", "ref": "data:image/png;base64," + __import__("base64").b64encode(
            png()).decode(), "mimeType": "image/png"})
    tree = import_bytes(ws, json.dumps(doc).encode(), "d.json").trees[0].tree
    assert isinstance(export_tree(ws, tree), str)  # as it came: one JSON
    out = export_tree(ws, tree, "bundle")
    assert isinstance(out, bytes)
    with zipfile.ZipFile(io.BytesIO(out)) as z:
        names = z.namelist()
        assert names[0] == "tree.openloom" and names[1].startswith("media/")
        ref = json.loads(z.read("tree.openloom"))["trees"][0]["nodes"]["a"]["content"][1]["ref"]
        assert ref == names[1] and z.read(ref) == png()


def test_a_missing_member_is_a_placeholder(tmp_path: Path) -> None:
    ws = fresh(tmp_path / "loom.db")
    data = zipped({"tree.openloom": json.dumps(bundled_doc()).encode(),
                   "media/loom.wav": wav()})
    report = import_bytes(ws, data, "b.zip")
    assert report.repairs == ['trees[0].nodes["b"].content[1].ref "media/fox.png" is not in '
                              "the bundle: kept as a placeholder"]
    assert (report.trees[0].images, report.trees[0].audio) == (0, 1)


HOSTILE = {
    "a path that climbs out": ({"../evil.sh": b"rm -rf ~"}, "INVALID_SYNTAX",
                               'member "../evil.sh" has an unsafe path'),
    "an absolute path": ({"/etc/passwd": b"root"}, "INVALID_SYNTAX",
                         'member "/etc/passwd" has an unsafe path'),
    "a drive path": ({"C:/windows/x.dll": b"MZ"}, "INVALID_SYNTAX", "has an unsafe path"),
    "a nested climb": ({"media/../../x": b"x"}, "INVALID_SYNTAX", "has an unsafe path"),
}


@pytest.mark.parametrize("case", list(HOSTILE))
def test_hostile_member_paths_are_refused(case: str, tmp_path: Path) -> None:
    members, code, words = HOSTILE[case]
    ws = fresh(tmp_path / "loom.db")
    with pytest.raises(LoomError) as err:
        import_bytes(ws, zipped({"tree.openloom": json.dumps(MINIMAL).encode(), **members}),
                     "evil.zip")
    assert err.value.code == code and words in err.value.message
    assert "the bundle was refused, nothing was imported" in err.value.message
    assert Tree.select().count() == 0 and Media.select().count() == 0


def test_symlinks_bombs_and_floods_are_refused(tmp_path: Path) -> None:
    ws = fresh(tmp_path / "loom.db")

    def refused(data: bytes, code: str, words: str,
                limits: ImportLimits | None = None) -> None:
        with pytest.raises(LoomError) as err:
            import_bytes(ws, data, "evil.zip", limits=limits)
        assert err.value.code == code and words in err.value.message, err.value.message
        assert Tree.select().count() == 0 and Media.select().count() == 0

    doc = json.dumps(MINIMAL).encode()
    refused(zipped({"tree.openloom": doc, "media/x.png": b"/etc/passwd"},
                   symlink="media/x.png"), "INVALID_SYNTAX", "is a symbolic link")
    bomb = zipped({"tree.openloom": doc, "media/zero.png": b"\0" * (8 * 1024 * 1024)})
    refused(bomb, "INVALID_SYNTAX", "-fold (a zip bomb)")
    refused(bomb, "LIMIT_EXCEEDED", "over the limit of 1 MB",
            ImportLimits(max_media_bytes=1024 * 1024, max_ratio=10_000))
    flood = zipped({"tree.openloom": doc, **{f"m/{i}": b"" for i in range(30)}})
    refused(flood, "LIMIT_EXCEEDED", "holds 31 files", ImportLimits(max_members=20))
    refused(zipped({"doc.json": doc}), "INVALID_SYNTAX", "has no tree.openloom at its root")
    refused(zipped({"tree.openloom": b"{}"}), "INVALID_SYNTAX",
            "tree.openloom is not an Open Loom document")
    refused(b"PK\x03\x04 not really a zip", "INVALID_SYNTAX", "not a readable ZIP bundle")
    fake = bundle(**{"media/fox.png": b"<html><body>hi</body></html>"})
    refused(fake, "INVALID_SYNTAX", 'declared "image/png" but the bytes are not image/png')


def test_a_lying_header_is_stopped_while_inflating(tmp_path: Path) -> None:
    ws = fresh(tmp_path / "loom.db")
    data = bytearray(bundle(**{"media/fox.png": png() + b"\0" * 4000}))
    # Shrink the declared size of media/fox.png in its central directory entry: the
    # header now says far less than the member inflates to.
    name = b"media/fox.png"
    central = next(at for at in range(len(data)) if data[at:at + 4] == b"PK\x01\x02"
                   and data[at + 46:at + 46 + len(name)] == name)
    data[central + 24:central + 28] = len(png()).to_bytes(4, "little")
    with pytest.raises(LoomError) as err:
        import_bytes(ws, bytes(data), "liar.zip")
    assert "a zip bomb" in err.value.message or "cannot be read" in err.value.message
    assert Tree.select().count() == 0


def test_cli_writes_a_bundle_only_to_a_file(tmp_path: Path, monkeypatch: Any,
                                            capsys: Any) -> None:
    monkeypatch.setenv("LOOM_DB", str(tmp_path / "cli.db"))
    path = tmp_path / "in.zip"
    path.write_bytes(bundle())
    assert main(["import", str(path)]) == 0
    assert "(3 nodes, 1 image and 1 audio file kept)" in capsys.readouterr().out
    assert main(["export", "Hello"]) == 1
    err = capsys.readouterr().err
    assert err.startswith('✗ INVALID_SYNTAX: "Hello" holds media files, so it exports as an '
                          "Open Loom bundle (a ZIP)")
    out = tmp_path / "out.zip"
    assert main(["export", "Hello", "-o", str(out)]) == 0
    assert "as an Open Loom bundle" in capsys.readouterr().out
    assert zipfile.is_zipfile(out)
