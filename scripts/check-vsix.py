"""Check the packaged VS Code extension before anyone installs or publishes it.

``vsce package`` prints warnings and goes on, and a .vsix can quietly grow back to
hundreds of files (node_modules, sources, maps) when .vscodeignore or the bundle breaks.
scripts/build-vsix.sh runs this after packaging, so CI fails on either:

    python3 scripts/check-vsix.py vscode-extension/loom.vsix --vsce-log LOG

Checked: no WARNING or ERROR in vsce's output; the .vsix holds exactly the files listed in
vscode-extension/vsix-files.txt; it stays small; its manifest carries what the Marketplace
and Open VSX need (a real publisher, repository, license, a 128×128 PNG icon that is in the
package, the bundle as ``main``). Standard library only: it runs before any venv exists.
"""

from __future__ import annotations

import argparse
import json
import re
import struct
import sys
import zipfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
EXPECTED_LIST = REPO / "vscode-extension" / "vsix-files.txt"
#: The bundle is ~150 KB packed; 250 KB leaves room to grow and still catches node_modules.
MAX_BYTES = 250_000
#: vsce's placeholder-looking publishers and a missing one
PLACEHOLDER_PUBLISHERS = {"", "loom", "publisher", "your-publisher", "undefined"}
ICON_SIZE = (128, 128)
_WARNING = re.compile(r"\b(WARNING|ERROR)\b")


def vsce_warnings(log: str) -> list[str]:
    """vsce's WARNING and ERROR lines (its prefixes, with or without colour codes)."""
    plain = re.sub(r"\x1b\[[0-9;]*m", "", log)
    return [line.strip() for line in plain.splitlines() if _WARNING.search(line)]


def expected_files(text: str) -> list[str]:
    """The allowlist: one path inside the .vsix per line; blank lines and # comments skipped."""
    return sorted(line.strip() for line in text.splitlines()
                  if line.strip() and not line.lstrip().startswith("#"))


def list_problems(names: list[str], expected: list[str]) -> list[str]:
    found, want = set(names), set(expected)
    out = [f"unexpected in the .vsix: {n}" for n in sorted(found - want)]
    out += [f"missing from the .vsix: {n}" for n in sorted(want - found)]
    return out


def png_size(data: bytes) -> tuple[int, int] | None:
    """Width and height from a PNG's IHDR, or None if ``data`` is no PNG."""
    if len(data) < 24 or data[:8] != b"\x89PNG\r\n\x1a\n" or data[12:16] != b"IHDR":
        return None
    width, height = struct.unpack(">II", data[16:24])
    return width, height


def manifest_problems(manifest: dict[str, object], names: set[str],
                      read: dict[str, bytes]) -> list[str]:
    """What the Marketplace or Open VSX would refuse or show badly."""
    out: list[str] = []
    publisher = str(manifest.get("publisher") or "")
    if publisher in PLACEHOLDER_PUBLISHERS:
        out.append(f"publisher is a placeholder: {publisher!r}")
    elif not re.fullmatch(r"[a-z0-9][a-z0-9-]*", publisher):
        out.append(f"publisher {publisher!r} is not a publisher id (lowercase, digits, -)")
    repo = manifest.get("repository")
    url = repo.get("url") if isinstance(repo, dict) else repo
    if not isinstance(url, str) or not url.startswith("https://"):
        out.append("repository: no https URL (Open VSX links the source from it)")
    if manifest.get("license") != "MIT":
        out.append(f"license is {manifest.get('license')!r}, not MIT")
    if "extension/LICENSE.txt" not in names:
        out.append("no LICENSE in the package")
    icon = manifest.get("icon")
    if not isinstance(icon, str):
        out.append("no icon")
    else:
        size = png_size(read.get(f"extension/{icon}", b""))
        if size is None:
            out.append(f"icon {icon} is not a PNG in the package")
        elif size != ICON_SIZE:
            out.append(f"icon {icon} is {size[0]}×{size[1]}, not 128×128")
    main = str(manifest.get("main") or "")
    if f"extension/{main.removeprefix('./')}" not in names:
        out.append(f"main {main!r} is not in the package")
    if manifest.get("dependencies"):
        out.append("dependencies in the manifest: the bundle needs none at run time, and "
                   "vsce would package them from node_modules")
    return out


def check(vsix: Path, vsce_log: str | None, expected: list[str]) -> list[str]:
    problems = vsce_warnings(vsce_log) if vsce_log is not None else []
    problems = [f"vsce: {w}" for w in problems]
    with zipfile.ZipFile(vsix) as z:
        names = z.namelist()
        wanted = {"extension/package.json"}
        manifest = json.loads(z.read("extension/package.json"))
        icon = manifest.get("icon")
        if isinstance(icon, str) and f"extension/{icon}" in names:
            wanted.add(f"extension/{icon}")
        read = {n: z.read(n) for n in wanted}
    problems += list_problems(names, expected)
    size = vsix.stat().st_size
    if size > MAX_BYTES:
        problems.append(f"the .vsix is {size // 1024} KB, more than {MAX_BYTES // 1000} KB")
    problems += manifest_problems(manifest, set(names), read)
    return problems


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("vsix", type=Path)
    p.add_argument("--vsce-log", type=Path, help="what `vsce package` printed")
    p.add_argument("--expected", type=Path, default=EXPECTED_LIST)
    a = p.parse_args(argv)
    log = a.vsce_log.read_text(encoding="utf-8") if a.vsce_log else None
    problems = check(a.vsix, log, expected_files(a.expected.read_text(encoding="utf-8")))
    if problems:
        print(f"✗ VSIX_CHECK: {a.vsix} is not ready to publish", file=sys.stderr)
        for line in problems:
            print(f"  - {line}", file=sys.stderr)
        print(f"  hint: fix the package, or, when a file is meant to change, update "
              f"{a.expected.relative_to(REPO) if a.expected.is_relative_to(REPO) else a.expected}"
              f" and vscode-extension/.vscodeignore together", file=sys.stderr)
        return 1
    with zipfile.ZipFile(a.vsix) as z:
        count = len(z.namelist())
    warnings = ", no vsce warnings" if log is not None else ""
    print(f"✓ {a.vsix.name}: {count} files, {a.vsix.stat().st_size // 1024} KB{warnings}, "
          "manifest ready for the Marketplace and Open VSX")
    return 0


if __name__ == "__main__":
    sys.exit(main())
