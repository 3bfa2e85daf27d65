"""scripts/check-vsix.py, the gate scripts/build-vsix.sh puts after ``vsce package``: each
check on made-up packages, and the repository's own manifest, icon and file list (so a
change that would fail the packaged check fails here first, without building)."""

from __future__ import annotations

import importlib.util
import json
import zipfile
from pathlib import Path
from types import ModuleType

import pytest

REPO = Path(__file__).resolve().parents[2]
EXT = REPO / "vscode-extension"


def _load() -> ModuleType:
    spec = importlib.util.spec_from_file_location("check_vsix", REPO / "scripts" / "check-vsix.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


cv = _load()
MANIFEST = json.loads((EXT / "package.json").read_text(encoding="utf-8"))
EXPECTED = cv.expected_files((EXT / "vsix-files.txt").read_text(encoding="utf-8"))
ICON = (EXT / "media" / "icon.png").read_bytes()


def _vsix(tmp_path: Path, manifest: dict[str, object], extra: tuple[str, ...] = (),
          drop: tuple[str, ...] = ()) -> Path:
    path = tmp_path / "loom.vsix"
    with zipfile.ZipFile(path, "w") as z:
        for name in [*EXPECTED, *extra]:
            if name in drop:
                continue
            if name == "extension/package.json":
                z.writestr(name, json.dumps(manifest))
            elif name == "extension/media/icon.png":
                z.writestr(name, ICON)
            else:
                z.writestr(name, "x")
    return path


def test_vsce_warnings_are_found_with_or_without_colours() -> None:
    log = (" INFO  Files included in the VSIX:\n"
           "\x1b[43m\x1b[30m WARNING \x1b[39m\x1b[49m LICENSE not found\n"
           " DONE  Packaged: loom.vsix (13 files, 148.9 KB)\n"
           " ERROR  Make sure to edit the README.md file\n")
    assert cv.vsce_warnings(log) == ["WARNING  LICENSE not found",
                                     "ERROR  Make sure to edit the README.md file"]
    assert cv.vsce_warnings(" DONE  Packaged: loom.vsix\nThe file out/extension.js is large") == []


def test_a_package_as_expected_passes(tmp_path: Path) -> None:
    assert cv.check(_vsix(tmp_path, MANIFEST), " DONE  Packaged\n", EXPECTED) == []


def test_extra_and_missing_files_are_named(tmp_path: Path) -> None:
    vsix = _vsix(tmp_path, MANIFEST, extra=("extension/node_modules/semver/index.js",),
                 drop=("extension/changelog.md",))
    assert cv.check(vsix, None, EXPECTED) == [
        "unexpected in the .vsix: extension/node_modules/semver/index.js",
        "missing from the .vsix: extension/changelog.md",
    ]


def test_a_warning_fails_the_package(tmp_path: Path) -> None:
    log = " WARNING  A 'repository' field is missing"
    problems = cv.check(_vsix(tmp_path, MANIFEST), log, EXPECTED)
    assert problems == ["vsce: WARNING  A 'repository' field is missing"]


@pytest.mark.parametrize(("change", "problem"), [
    ({"publisher": "loom"}, "publisher is a placeholder: 'loom'"),
    ({"publisher": "Loom Authors"}, "is not a publisher id"),
    ({"repository": None}, "repository: no https URL"),
    ({"license": "UNLICENSED"}, "license is 'UNLICENSED', not MIT"),
    ({"icon": "media/loom.svg"}, "icon media/loom.svg is not a PNG in the package"),
    ({"main": "./out/src/extension.js"}, "main './out/src/extension.js' is not in the package"),
    ({"dependencies": {"vscode-languageclient": "^10"}}, "dependencies in the manifest"),
])
def test_manifest_problems(tmp_path: Path, change: dict[str, object], problem: str) -> None:
    problems = cv.check(_vsix(tmp_path, {**MANIFEST, **change}), None, EXPECTED)
    assert len(problems) == 1 and problem in problems[0], problems


def test_the_icon_is_a_128_px_png() -> None:
    assert cv.png_size(ICON) == (128, 128)
    assert cv.png_size(b"<svg/>") is None


def test_the_repository_manifest_and_lists_agree() -> None:
    """What is packaged: package.json's main and icon, and every file .vscodeignore lets in."""
    names = set(EXPECTED)
    assert cv.manifest_problems(MANIFEST, names, {"extension/media/icon.png": ICON}) == []
    allowed = [line[1:].strip() for line in (EXT / ".vscodeignore").read_text().splitlines()
               if line.startswith("!")]
    # vsce renames these three in the package
    renamed = {"README.md": "readme.md", "CHANGELOG.md": "changelog.md", "LICENSE": "LICENSE.txt"}
    for pattern in allowed:
        packaged = renamed.get(pattern, pattern)
        if "*" in pattern:
            assert any(Path(n).match(f"extension/{packaged}") for n in names), pattern
        else:
            assert f"extension/{packaged}" in names, pattern
    assert (EXT / "LICENSE").resolve() == (REPO / "LICENSE").resolve()
    caps = MANIFEST["capabilities"]["untrustedWorkspaces"]
    assert caps["supported"] == "limited"
    # the settings that name an executable or a database
    executables = {k for k in MANIFEST["contributes"]["configuration"]["properties"]
                   if k.startswith("loom.server.") or k == "loom.database"}
    assert set(caps["restrictedConfigurations"]) == executables
