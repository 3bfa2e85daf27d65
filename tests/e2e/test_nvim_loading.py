"""The Neovim plugin loaded the ways users install it, from a clone of this repository
(the plugin is its nvim/ folder): lazy.nvim with the spec nvim/doc/loom.txt documents,
`:packadd` of a package in pack/*/opt, a package in pack/*/start, and a runtimepath
entry. Each run is a real headless Neovim with a clean config that opens a `*.loom` file
and a `loom:` path and reads `:help loom`; with no setup() call except lazy.nvim's
`config`, `:Loom`, the `<Plug>` mappings, the filetype and the server must all be there.

lazy.nvim is on none of the registries this project installs from, so
tests/e2e/nvim/lazy_emulator.lua does what its loader does with a spec (its comment
quotes lazy.nvim's loader.lua step by step).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from loom import __version__
from tests.e2e.test_nvim_plugin import NVIM, loom_cli

pytestmark = pytest.mark.nvim

REPO = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent / "nvim"
STORY = "The house stood empty at the end of the lane."


@pytest.fixture(scope="module")
def demo_db(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    db = tmp_path_factory.mktemp("loom-loading") / "demo.db"
    loom_cli(db, "demo", "--no-editor")
    tree = loom_cli(db, "trees").split()[0]
    uri = loom_cli(db, "uri", tree, "root").strip()
    return db, uri


def clone(dest: Path) -> Path:
    """The repository as a plugin manager clones it from its URL (a local clone), with
    this working tree's nvim/ over it so uncommitted plugin edits are what is tested."""
    if (REPO / ".git").exists():
        subprocess.run(["git", "clone", "-q", str(REPO), str(dest)], check=True, timeout=60)
    else:  # an unpacked sdist or a copy: the same files without history
        dest.mkdir(parents=True)
    shutil.copytree(REPO / "nvim", dest / "nvim", dirs_exist_ok=True,
                    ignore=shutil.ignore_patterns("tags"))
    (dest / "nvim" / "doc" / "tags").unlink(missing_ok=True)
    return dest


def documented_lazy_spec() -> str:
    """The lazy.nvim spec of `:help loom-install`, as a user copies it."""
    doc = (REPO / "nvim" / "doc" / "loom.txt").read_text(encoding="utf-8")
    block = re.search(r"^lazy\.nvim .*?>lua\n(.*?)\n<", doc, re.S | re.M)
    assert block, "doc/loom.txt has a lazy.nvim spec"
    spec = block.group(1)
    assert 'vim.opt.rtp:append(plugin.dir .. "/nvim")' in spec
    return "return " + spec.strip().rstrip(",")


def run(tmp_path: Path, init: str, db: Path, uri: str,
        extra_env: dict[str, str] | None = None) -> dict[str, Any]:
    """Start Neovim with `init` as its init.lua (a config of its own: XDG dirs in
    tmp_path), run the probe, return what it found."""
    home = tmp_path / "home"
    for sub in ("config", "data", "state", "cache"):
        (home / sub).mkdir(parents=True, exist_ok=True)
    init_file = tmp_path / "init.lua"
    init_file.write_text(init, encoding="utf-8")
    story = tmp_path / "story.loom"
    story.write_text("A plain loom file.\n", encoding="utf-8")
    out = tmp_path / "probe.json"
    env = {
        **os.environ,
        # the default server command: `loom` from PATH (this venv's)
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
        "XDG_CONFIG_HOME": str(home / "config"), "XDG_DATA_HOME": str(home / "data"),
        "XDG_STATE_HOME": str(home / "state"), "XDG_CACHE_HOME": str(home / "cache"),
        "LOOM_DB": str(db), "LOOM_PROBE_FILE": str(story), "LOOM_PROBE_URI": uri,
        "LOOM_PROBE_OUT": str(out), **(extra_env or {}),
    }
    proc = subprocess.run([str(NVIM), "--headless", "-u", str(init_file),
                           "-c", f"luafile {HERE / 'loading_probe.lua'}"],
                          env=env, capture_output=True, text=True, timeout=90,
                          stdin=subprocess.DEVNULL)
    assert out.exists(), f"the probe wrote nothing: {proc.stdout}\n{proc.stderr}"
    return json.loads(out.read_text(encoding="utf-8"))


def check(found: dict[str, Any], *, set_up_by_user: bool) -> None:
    assert found["errors"] == [], found["errors"]
    assert found["command_before_use"], ":Loom exists before anything is opened"
    assert found["plug_before_use"], "the <Plug> mappings exist before anything is opened"
    assert found["setup_before_use"] is set_up_by_user
    assert found["file_filetype"] == "loom"
    assert found["file_attached"], "the server attached to the .loom file"
    assert found["uri_attached"], "the server attached to the loom: buffer"
    assert STORY in found["uri_text"]
    assert found["uri_modified"] is False
    maps = found["maps"]
    assert maps.get("]n") == "<Plug>(loom-next-sibling)", maps
    assert maps.get("[n") == "<Plug>(loom-prev-sibling)", maps
    assert not {"]s", "[s", "gd", "<C-]>"} & set(maps), maps
    assert found["tagfunc"] == "v:lua.vim.lsp.tagfunc", "CTRL-] goes to the node"
    assert found["version"] == __version__
    assert found["help_file"] == "loom.txt"
    assert "<Plug>(loom-next-sibling)" in found["help_plug_line"]
    assert "loom-install" in found["help_install_line"]


def test_lazy_nvim_with_the_documented_spec(tmp_path: Path, demo_db: tuple[Path, str]) -> None:
    db, uri = demo_db
    plugin = clone(tmp_path / "home" / "data" / "nvim" / "lazy" / "loom")
    spec = tmp_path / "spec.lua"
    spec.write_text(documented_lazy_spec(), encoding="utf-8")
    found = run(tmp_path, (HERE / "lazy_emulator.lua").read_text(encoding="utf-8"), db, uri,
                {"LOOM_LAZY_SPEC": str(spec), "LOOM_LAZY_DIR": str(plugin),
                 "LOOM_LAZY_OPTS": json.dumps({"db": str(db)})})
    check(found, set_up_by_user=True)


@pytest.mark.parametrize("how", ["packadd", "start"])
def test_a_native_package_without_setup(tmp_path: Path, demo_db: tuple[Path, str],
                                        how: str) -> None:
    """`ln -s ~/src/loom/nvim …/site/pack/loom/{opt,start}/loom` as loom.txt says, and
    vim.g.loom for the options: no setup() call."""
    db, uri = demo_db
    source = clone(tmp_path / "src" / "loom")
    pack = tmp_path / "home" / "data" / "nvim" / "site" / "pack" / "loom"
    kind = "opt" if how == "packadd" else "start"
    (pack / kind).mkdir(parents=True)
    (pack / kind / "loom").symlink_to(source / "nvim", target_is_directory=True)
    init = (f"vim.g.loom = {{ db = {json.dumps(str(db))} }}\n"
            + ("vim.cmd.packadd('loom')\n" if how == "packadd" else ""))
    check(run(tmp_path, init, db, uri), set_up_by_user=False)


def test_a_runtimepath_entry_without_setup(tmp_path: Path, demo_db: tuple[Path, str]) -> None:
    db, uri = demo_db
    source = clone(tmp_path / "src" / "loom")
    init = (f"vim.opt.rtp:append({json.dumps(str(source / 'nvim'))})\n"
            f"vim.g.loom = {{ db = {json.dumps(str(db))} }}\n")
    check(run(tmp_path, init, db, uri), set_up_by_user=False)
