"""The Neovim plugin loaded the ways users install it, from a clone of this repository, each
in a real headless Neovim with a clean config that opens a `*.loom` file and a `loom:` path
and reads `:help`:

* the real lazy.nvim (``../shared/vendor/lazy.nvim``), installing the plugin with its own
  git clone from a local repository through ``git.url_format``, with each lazy.nvim spec
  that README.md, nvim/README.md and nvim/doc/loom.txt show, verbatim: ``{ "loom-lsp/loom" }``
  alone (options in ``vim.g.loom``, no setup()) and the one with ``opts`` (setup()). Every
  git command lazy runs is logged, and only the local repository is ever named;
* the repository's top folder as packer (pack/*/start), vim-plug (a runtimepath entry set
  up before plugins load) and vim.pack (``:packadd!`` of pack/core/opt, as it does during
  start-up) load it;
* ``nvim/`` alone: ``:packadd`` of a package in pack/*/opt, pack/*/start, a runtimepath
  entry.

Without setup() (except lazy.nvim's ``opts``), ``:Loom``, the ``<Plug>`` mappings, the
filetype and the server must all be there, no server may run before use, every tag of
loom.txt must lead to loom.txt (lazy.nvim makes tags of README.md's headings too), and
every ``:Loom`` subcommand and ``<Plug>`` mapping of the plugin's own tables has a tag.
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
LAZY = REPO.parent / "shared" / "vendor" / "lazy.nvim"
HELP = REPO / "nvim" / "doc" / "loom.txt"
STORY = "The house stood empty at the end of the lane."
#: what of the working tree a clone must carry for the plugin under test
PLUGIN_FILES = ("nvim", "plugin", "README.md")
REAL_GIT = shutil.which("git") or "git"


@pytest.fixture(scope="module")
def demo_db(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    db = tmp_path_factory.mktemp("loom-loading") / "demo.db"
    loom_cli(db, "demo", "--no-editor")
    tree = loom_cli(db, "trees").split()[0]
    uri = loom_cli(db, "uri", tree, "root").strip()
    return db, uri


def _git(cwd: Path, *args: str) -> None:
    subprocess.run([REAL_GIT, "-c", "user.name=loom-test", "-c", "user.email=test@loom",
                    *args], cwd=cwd, check=True, timeout=60, capture_output=True)


def clone(dest: Path) -> Path:
    """The repository as a plugin manager clones it from its URL (a local clone), with
    this working tree's plugin files over it (committed), so uncommitted plugin edits are
    what is tested."""
    if (REPO / ".git").exists():
        subprocess.run([REAL_GIT, "clone", "-q", str(REPO), str(dest)], check=True,
                       timeout=60)
    else:  # an unpacked sdist or a copy: the same files without history
        dest.mkdir(parents=True)
        _git(dest, "init", "-q")
    for name in PLUGIN_FILES:
        source, target = REPO / name, dest / name
        shutil.rmtree(target, ignore_errors=True) if target.is_dir() else target.unlink(
            missing_ok=True)
        if source.is_dir():
            shutil.copytree(source, target, ignore=shutil.ignore_patterns("tags"))
        elif source.exists():
            shutil.copy2(source, target)
    _git(dest, "add", "-A")
    _git(dest, "commit", "-q", "--allow-empty", "-m", "the working tree's plugin")
    return dest


def help_tags() -> list[str]:
    return sorted(set(re.findall(r"\*([^*\s|]+)\*", HELP.read_text(encoding="utf-8"))))


def lazy_specs() -> list[str]:
    """Every lazy.nvim spec the docs show (each `{ "loom-lsp/loom" … }` in a Lua block or
    inline code), as written."""
    found: set[str] = set()
    for doc in (REPO / "README.md", REPO / "nvim" / "README.md", HELP):
        text = doc.read_text(encoding="utf-8")
        blocks = re.findall(r"```lua\n(.*?)```", text, re.S)
        blocks += [re.sub(r"^ {4}", "", b, flags=re.M)
                   for b in re.findall(r">lua\n(.*?)\n<", text, re.S)]
        blocks += re.findall(r"`(\{ \"loom-lsp/loom\"[^`]*\})`", text)
        for block in blocks:
            spec = block.strip()
            if spec.startswith('{ "loom-lsp/loom"'):
                found.add(spec)
    return sorted(found)


def documented_g_loom() -> str:
    """loom.txt's `vim.g.loom = { … }`, the options without setup()."""
    line = re.search(r"^    (vim\.g\.loom = \{ db = .*\})$", HELP.read_text(encoding="utf-8"),
                     re.M)
    assert line, "loom.txt shows vim.g.loom"
    return line.group(1)


def run(tmp_path: Path, init: str, uri: str, db: Path | None,
        extra_env: dict[str, str] | None = None) -> dict[str, Any]:
    """Start Neovim with `init` as its init.lua (a home and XDG dirs of its own in
    tmp_path), run the probe, return what it found. `db`: $LOOM_DB (None: unset, the
    options must name the database)."""
    home = tmp_path / "home"
    for sub in ("config", "data", "state", "cache"):
        (home / sub).mkdir(parents=True, exist_ok=True)
    init_file = tmp_path / "init.lua"
    init_file.write_text(init, encoding="utf-8")
    story = tmp_path / "story.loom"
    story.write_text("A plain loom file.\n", encoding="utf-8")
    out = tmp_path / "probe.json"
    env = {k: v for k, v in os.environ.items() if k != "LOOM_DB"}
    env.update({
        # the default server command: `loom` from PATH (this venv's)
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
        "HOME": str(home),
        "XDG_CONFIG_HOME": str(home / "config"), "XDG_DATA_HOME": str(home / "data"),
        "XDG_STATE_HOME": str(home / "state"), "XDG_CACHE_HOME": str(home / "cache"),
        "LOOM_PROBE_FILE": str(story), "LOOM_PROBE_URI": uri,
        "LOOM_PROBE_TAGS": json.dumps(help_tags()), "LOOM_PROBE_OUT": str(out),
        **({"LOOM_DB": str(db)} if db else {}), **(extra_env or {}),
    })
    proc = subprocess.run([str(NVIM), "--headless", "-u", str(init_file),
                           "-c", f"luafile {HERE / 'loading_probe.lua'}"],
                          env=env, capture_output=True, text=True, timeout=120,
                          stdin=subprocess.DEVNULL, cwd=tmp_path)
    assert out.exists(), f"the probe wrote nothing: {proc.stdout}\n{proc.stderr}"
    return json.loads(out.read_text(encoding="utf-8"))


def check(found: dict[str, Any], *, set_up_by_user: bool) -> None:
    assert found["errors"] == [], found["errors"]
    assert found["command_before_use"], ":Loom exists before anything is opened"
    assert found["plug_before_use"], "the <Plug> mappings exist before anything is opened"
    assert found["setup_before_use"] is set_up_by_user
    assert found["clients_before_use"] == 0, "no server runs before a loom buffer is used"
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
    assert not found["help_elsewhere"], found["help_elsewhere"]
    assert "explore" in found["subcommands"] and "open" in found["subcommands"]
    assert not found["untagged"], f"no help tag in loom.txt for {found['untagged']}"


# ── lazy.nvim ─────────────────────────────────────────────────────────────────────────


SPECS = lazy_specs()


def test_the_docs_show_the_two_lazy_specs() -> None:
    """One spec without setup() and one with, the same in README.md, nvim/README.md and
    loom.txt (a spec edited in one place would be a third, and run below too)."""
    assert SPECS == ['{ "loom-lsp/loom" }',
                     '{ "loom-lsp/loom", main = "loom", opts = { db = "~/notes/loom.db" } }']


@pytest.mark.skipif(not LAZY.is_dir() and os.environ.get("CI") != "true",
                    reason="../shared/vendor/lazy.nvim is not here")
@pytest.mark.parametrize("spec", SPECS)
def test_lazy_nvim_with_the_documented_spec(tmp_path: Path, demo_db: tuple[Path, str],
                                            spec: str) -> None:
    db, uri = demo_db
    remote = tmp_path / "remote"
    clone(remote / "loom-lsp" / "loom")
    notes = tmp_path / "home" / "notes"
    notes.mkdir(parents=True)
    shutil.copy2(db, notes / "loom.db")  # the docs' "~/notes/loom.db"
    # every git command lazy.nvim runs, logged; a protocol but local paths refused
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    log = tmp_path / "git.log"
    (bin_dir / "git").write_text(f'#!/bin/sh\nprintf "%s\\n" "$*" >> {log}\n'
                                 f'exec {REAL_GIT} "$@"\n', encoding="utf-8")
    (bin_dir / "git").chmod(0o755)
    set_up = "opts" in spec
    init = "\n".join([
        f"vim.opt.rtp:prepend({json.dumps(str(LAZY))})",
        "" if set_up else documented_g_loom(),
        f"require('lazy').setup({{ spec = {{ {spec} }},",
        f"  git = {{ url_format = {json.dumps(str(remote) + '/%s')} }} }})", ""])
    found = run(tmp_path, init, uri, None, {
        "PATH": f"{bin_dir}{os.pathsep}{Path(sys.executable).parent}{os.pathsep}"
                f"{os.environ.get('PATH', '')}",
        "GIT_ALLOW_PROTOCOL": "file"})
    installed = tmp_path / "home" / "data" / "nvim" / "lazy" / "loom"
    assert (installed / "nvim" / "doc" / "loom.txt").is_file(), "lazy.nvim cloned the plugin"
    check(found, set_up_by_user=set_up)
    calls = log.read_text(encoding="utf-8").splitlines()
    assert any(c.startswith("clone") and str(remote / "loom-lsp" / "loom") in c
               for c in calls), calls
    assert not [c for c in calls if "://" in c or "github" in c], calls
    # lazy.nvim's help tags of README.md's headings (it makes them for a plugin without a
    # top-level doc/): none is also a tag of loom.txt
    readme_tags = tmp_path / "home" / "state" / "nvim" / "lazy" / "readme" / "doc" / "tags"
    made = {line.split("\t")[0] for line in readme_tags.read_text(encoding="utf-8")
            .splitlines()[1:]} if readme_tags.exists() else set()
    assert not made & set(help_tags()), made & set(help_tags())


# ── the repository's top folder: packer, vim-plug, vim.pack ─────────────────────────


@pytest.mark.parametrize("manager", ["packer", "vim-plug", "vim.pack"])
def test_the_top_folder_as_other_managers_load_it(tmp_path: Path, demo_db: tuple[Path, str],
                                                  manager: str) -> None:
    """`use("loom-lsp/loom")` clones into pack/packer/start; `Plug 'loom-lsp/loom'` puts
    the clone on 'runtimepath' before plugins load; `vim.pack.add` clones into
    pack/core/opt and, during start-up, does `:packadd!`. vim.g.loom, no setup()."""
    db, uri = demo_db
    data = tmp_path / "home" / "data" / "nvim"
    where = {"packer": data / "site" / "pack" / "packer" / "start" / "loom",
             "vim-plug": data / "plugged" / "loom",
             "vim.pack": data / "site" / "pack" / "core" / "opt" / "loom"}[manager]
    clone(where)
    init = {"packer": "", "vim-plug": f"vim.opt.rtp:append({json.dumps(str(where))})\n",
            "vim.pack": "vim.cmd('packadd! loom')\n"}[manager]
    init += f"vim.g.loom = {{ db = {json.dumps(str(db))} }}\n"
    check(run(tmp_path, init, uri, db), set_up_by_user=False)


# ── nvim/ by itself ─────────────────────────────────────────────────────────────────


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
    check(run(tmp_path, init, uri, db), set_up_by_user=False)


def test_a_runtimepath_entry_without_setup(tmp_path: Path, demo_db: tuple[Path, str]) -> None:
    db, uri = demo_db
    source = clone(tmp_path / "src" / "loom")
    init = (f"vim.opt.rtp:append({json.dumps(str(source / 'nvim'))})\n"
            f"vim.g.loom = {{ db = {json.dumps(str(db))} }}\n")
    check(run(tmp_path, init, uri, db), set_up_by_user=False)


# ── which `loom` the plugin runs ────────────────────────────────────────────────────


SERVER_PROBE = """
local out = {}
local ok, err = pcall(function()
  for _, case in ipairs(vim.json.decode(vim.env.LOOM_CASES)) do
    vim.opt.rtp = { case.plugin, vim.env.VIMRUNTIME }
    package.loaded["loom"] = nil
    local m = require("loom")
    local opts = vim.tbl_extend("force", m.defaults, case.opts or {})
    local cmd = m.server_cmd(opts)
    out[#out + 1] = { cmd = cmd, missing = m.missing(cmd, opts) or vim.NIL }
  end
end)
if not ok then
  out = { error = tostring(err) }
end
local f = assert(io.open(vim.env.LOOM_OUT, "w"))
f:write(vim.json.encode(out))
f:close()
vim.cmd("qa!")
"""


def _fake_loom(path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("#!/bin/sh\nexit 0\n", encoding="utf-8")
    path.chmod(0o755)
    return path


def test_the_server_the_plugin_runs(tmp_path: Path) -> None:
    """:help loom-server: `server_path`, else `loom` on $PATH, else the one installed with
    the plugin (a checkout's .venv/bin/loom beside nvim/, a wheel's <prefix>/bin/loom);
    with none, a ✗ that says how to point the plugin at one (it was `python3 -m loom.cli`,
    which failed as "did not start" where that Python has no Loom)."""
    checkout = tmp_path / "checkout"
    shutil.copytree(REPO / "nvim", checkout / "nvim", ignore=shutil.ignore_patterns("tags"))
    venv_loom = _fake_loom(checkout / ".venv" / "bin" / "loom")
    prefix = tmp_path / "pipx" / "venvs" / "loom-lsp"
    wheel = prefix / "lib" / "python3.11" / "site-packages" / "loom" / "editors" / "nvim"
    shutil.copytree(REPO / "nvim", wheel, ignore=shutil.ignore_patterns("tags"))
    wheel_loom = _fake_loom(prefix / "bin" / "loom")
    bare = tmp_path / "lazy" / "loom" / "nvim"  # a plugin manager's clone: no server beside
    shutil.copytree(REPO / "nvim", bare, ignore=shutil.ignore_patterns("tags"))
    chosen = _fake_loom(tmp_path / "elsewhere" / "loom")
    on_path = _fake_loom(tmp_path / "path" / "loom")
    cases = [
        {"plugin": str(checkout / "nvim")},
        {"plugin": str(wheel), "opts": {"db": str(tmp_path / "x.db")}},
        {"plugin": str(bare)},
        {"plugin": str(checkout / "nvim"), "opts": {"server_path": str(chosen)}},
        {"plugin": str(bare), "opts": {"server_path": str(tmp_path / "nowhere" / "loom")}},
        {"plugin": str(bare), "path": True},
        {"plugin": str(checkout / "nvim"), "path": True},
    ]
    found = []
    for with_path in (False, True):
        subset = [c for c in cases if bool(c.get("path")) == with_path]
        out = tmp_path / f"server-{with_path}.json"
        (tmp_path / "probe.lua").write_text(SERVER_PROBE, encoding="utf-8")
        path = f"{on_path.parent}{os.pathsep}/usr/bin{os.pathsep}/bin" if with_path \
            else f"/usr/bin{os.pathsep}/bin"
        subprocess.run([str(NVIM), "--headless", "--clean", "-c",
                        f"set rtp^={REPO / 'nvim'}", "-c", f"luafile {tmp_path / 'probe.lua'}"],
                       env={**os.environ, "PATH": path, "LOOM_OUT": str(out),
                            "LOOM_CASES": json.dumps(subset)},
                       capture_output=True, text=True, timeout=60, check=True)
        got = json.loads(out.read_text(encoding="utf-8"))
        assert isinstance(got, list), got
        found += got
    checkout_, wheel_, bare_, chosen_, wrong_, bare_path, checkout_path = found
    assert checkout_ == {"cmd": [str(venv_loom), "serve"], "missing": None}
    assert wheel_["cmd"] == [str(wheel_loom), "--db", str(tmp_path / "x.db"), "serve"]
    assert bare_["cmd"] == ["loom", "serve"]
    assert bare_["missing"] == (
        "✗ the loom language server was not found: no `loom` on $PATH nor beside the plugin\n"
        "  hint: pipx install loom-lsp, or set server_path = \"/path/to/bin/loom\" "
        "(:help loom-server)")
    assert chosen_ == {"cmd": [str(chosen), "serve"], "missing": None}
    assert wrong_["missing"].startswith(
        f"✗ server_path is not an executable: {tmp_path / 'nowhere' / 'loom'}\n  hint: ")
    assert bare_path["cmd"] == [str(on_path), "serve"]
    assert checkout_path["cmd"] == [str(on_path), "serve"]  # $PATH before the checkout's
