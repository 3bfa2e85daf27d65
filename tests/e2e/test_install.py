"""Install Loom the way the README says, from the package PyPI would get: the sdist and
wheel built by scripts/build-dist.sh (which runs `twine check --strict`), the wheel
installed with `pipx install` and with `uv tool install` into directories of their own
(fresh virtualenvs, dependencies from the registry through the local caches). Then what a
user does first: `loom --version`, `loom serve` (an LSP initialize round trip),
`loom demo --no-editor`, a model request without the `local` extra (the message names
it), and the Neovim plugin the wheel carries, whose health check starts that `loom serve`.
About 20 seconds, most of it pipx.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tarfile
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass
from email.parser import Parser
from pathlib import Path

import pytest

from loom import __version__

REPO = Path(__file__).resolve().parents[2]
PY = sys.executable


def _require(module: str) -> None:
    """build, twine, pipx and uv come with the dev extra; in CI a missing one fails."""
    found = subprocess.run([PY, "-m", module, "--version"], capture_output=True).returncode == 0
    if not found:
        if os.environ.get("LOOM_REQUIRE_PACKAGING"):
            pytest.fail(f"{module} is not installed in {PY} (pip install -e '.[dev]')")
        pytest.skip(f"{module} is not installed (pip install -e '.[dev]')")


@dataclass
class Dist:
    wheel: Path
    sdist: Path


@pytest.fixture(scope="module")
def dist(tmp_path_factory: pytest.TempPathFactory) -> Dist:
    for module in ("build", "twine"):
        _require(module)
    out = tmp_path_factory.mktemp("dist") / "dist"
    proc = subprocess.run(["bash", str(REPO / "scripts" / "build-dist.sh"), str(out)],
                          capture_output=True, text=True, timeout=300,
                          env={**os.environ, "PYTHON": PY})
    assert proc.returncode == 0, f"build-dist.sh failed:\n{proc.stdout}\n{proc.stderr}"
    assert proc.stdout.count("PASSED") == 2, proc.stdout  # twine check, sdist and wheel
    wheels, sdists = list(out.glob("*.whl")), list(out.glob("*.tar.gz"))
    assert len(wheels) == 1 and len(sdists) == 1, list(out.iterdir())
    return Dist(wheels[0], sdists[0])


def test_the_wheel_has_pypi_metadata_the_plugin_and_the_license(dist: Dist) -> None:
    assert dist.wheel.name == f"loom_lsp-{__version__}-py3-none-any.whl"
    with zipfile.ZipFile(dist.wheel) as whl:
        names = set(whl.namelist())
        info = f"loom_lsp-{__version__}.dist-info"
        meta = Parser().parsestr(whl.read(f"{info}/METADATA").decode())
    assert meta["Version"] == __version__
    assert meta["License-Expression"] == "MIT"
    assert f"{info}/licenses/LICENSE" in names
    classifiers = meta.get_all("Classifier")
    assert "Programming Language :: Python :: 3.11" in classifiers
    assert any(c.startswith("Development Status") for c in classifiers)
    urls = dict(u.split(", ", 1) for u in meta.get_all("Project-URL"))
    assert {"Homepage", "Repository", "Issues", "Changelog"} <= set(urls), urls
    assert meta["Author"] or meta["Author-email"]
    requires = meta.get_all("Requires-Dist")
    # the language server is in the core: `pipx install loom-lsp` serves
    assert any(r.startswith("pygls") and "extra" not in r for r in requires), requires
    assert any(r.startswith("lsprotocol") and "extra" not in r for r in requires), requires
    local = [r.split(";")[0] for r in requires if 'extra == "local"' in r]
    assert {n.split(">")[0] for n in local} >= {"openai", "tenacity", "gguf", "tokenizers"}
    assert meta["Description-Content-Type"] == "text/markdown"
    assert "## Install" in meta.get_payload()
    plugin = "loom/editors/nvim/"
    for part in ("plugin/loom.lua", "lsp/loom.lua", "doc/loom.txt", "lua/loom/init.lua",
                 "lua/loom/health.lua", "lua/loom/version.lua", "README.md"):
        assert plugin + part in names, part
    assert plugin + "doc/tags" not in names  # generated where the plugin is installed
    with tarfile.open(dist.sdist) as sdist:
        members = {m.name.split("/", 1)[1] for m in sdist.getmembers() if "/" in m.name}
    assert {"nvim/plugin/loom.lua", "setup.py", "CHANGELOG.md", "LICENSE",
            "pyproject.toml"} <= members


def lsp_initialize(cmd: list[str], env: dict[str, str]) -> dict[str, object]:
    """Start `cmd` (a `loom … serve`), initialize, shut it down; the initialize result."""
    proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, env=env)
    assert proc.stdin and proc.stdout

    def send(msg: dict[str, object]) -> None:
        body = json.dumps(msg).encode()
        proc.stdin.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)  # type: ignore[union-attr]
        proc.stdin.flush()  # type: ignore[union-attr]

    def reply(id_: int) -> dict[str, object]:
        while True:
            length = 0
            while (line := proc.stdout.readline().strip()):  # type: ignore[union-attr]
                name, _, value = line.partition(b":")
                if name.lower() == b"content-length":
                    length = int(value)
            assert length, f"no message: {proc.stderr.read().decode()[-2000:]}"  # type: ignore[union-attr]
            msg = json.loads(proc.stdout.read(length))  # type: ignore[union-attr]
            if msg.get("id") == id_:
                return msg

    try:
        send({"jsonrpc": "2.0", "id": 1, "method": "initialize",
              "params": {"processId": None, "rootUri": None, "capabilities": {}}})
        result = reply(1)["result"]
        send({"jsonrpc": "2.0", "method": "initialized", "params": {}})
        send({"jsonrpc": "2.0", "id": 2, "method": "shutdown"})
        assert reply(2).get("result", "missing") is None
        send({"jsonrpc": "2.0", "method": "exit"})
        assert proc.wait(timeout=30) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert isinstance(result, dict)
    return result


@dataclass
class Installed:
    loom: Path  # the `loom` executable the installer put in its bin dir
    python: Path  # the Python of its virtualenv
    env: dict[str, str]


def _clean_env(tmp: Path) -> dict[str, str]:
    """No API keys (the local profile answers), a database of its own, this venv off PATH."""
    env = {k: v for k, v in os.environ.items()
           if not k.endswith("_API_KEY") and k not in ("VIRTUAL_ENV", "PYTHONPATH", "LOOM_DB")}
    venv_bin = str(Path(PY).parent)
    env["PATH"] = os.pathsep.join(p for p in env.get("PATH", "").split(os.pathsep)
                                  if p != venv_bin)
    env["LOOM_DB"] = str(tmp / "loom.db")
    return env


@pytest.fixture(scope="module")
def pipx_install(dist: Dist, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Installed]:
    _require("pipx")
    tmp = tmp_path_factory.mktemp("pipx")
    env = _clean_env(tmp)
    env.update(PIPX_HOME=str(tmp / "home"), PIPX_BIN_DIR=str(tmp / "bin"),
               PIPX_MAN_DIR=str(tmp / "man"), PIPX_DEFAULT_PYTHON=PY)
    proc = subprocess.run([PY, "-m", "pipx", "install", str(dist.wheel)], env=env,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    loom = tmp / "bin" / "loom"
    assert loom.exists(), proc.stdout
    yield Installed(loom, tmp / "home" / "venvs" / "loom-lsp" / "bin" / "python", env)
    shutil.rmtree(tmp, ignore_errors=True)


def test_pipx_install_gives_a_loom_that_serves_and_demos(pipx_install: Installed) -> None:
    loom, env = str(pipx_install.loom), pipx_install.env
    version = subprocess.run([loom, "--version"], capture_output=True, text=True, env=env,
                             timeout=30)
    assert version.returncode == 0 and version.stdout.startswith(f"loom {__version__} ("), \
        version
    assert "/venvs/loom-lsp/" in version.stdout  # pipx's virtualenv, not this checkout

    result = lsp_initialize([loom, "serve"], env)
    assert result["serverInfo"] == {"name": "loom", "version": __version__}
    assert "completionProvider" in result["capabilities"]

    demo = subprocess.run([loom, "demo", "--no-editor"], capture_output=True, text=True,
                          env=env, timeout=60)
    assert demo.returncode == 0, demo.stderr
    assert '✓ demo tree "The House at the End of the Lane" ready (11 nodes)' in demo.stdout
    assert "(you are here)" in demo.stdout

    # `loom demo` with a terminal opens Neovim with the plugin the wheel carries
    where = subprocess.run([str(pipx_install.python), "-c",
                            "from loom.demo import plugin_dir; print(plugin_dir())"],
                           capture_output=True, text=True, env=env, timeout=30)
    assert where.stdout.strip().endswith("site-packages/loom/editors/nvim"), where


def test_without_the_local_extra_a_model_request_names_it(pipx_install: Installed) -> None:
    loom, env = str(pipx_install.loom), pipx_install.env
    subprocess.run([loom, "demo", "--no-editor"], capture_output=True, env=env, timeout=60)
    proc = subprocess.run([loom, "do", "The House", "→ continue n:1 tokens:4"],
                          capture_output=True, text=True, env=env, timeout=60)
    assert proc.returncode == 1
    shown = proc.stdout + proc.stderr  # `loom do` prints each command's result, ✗ or ✓
    assert "✗ MODEL_ERROR: the local provider needs the 'local' extra" in shown, shown
    assert "\n  hint: pipx install --force 'loom-lsp[local]'" in shown, shown


def test_without_the_local_extra_doctor_and_setup_name_it_first(
        pipx_install: Installed, tmp_path: Path) -> None:
    """Issue 44 item 7: without the extra, `loom model setup` fetched 170 MB and built for
    minutes before the user learned the extra was missing, and `loom doctor` advised it."""
    loom, env = str(pipx_install.loom), {**pipx_install.env,
                                         "LOOM_CACHE_DIR": str(tmp_path / "cache")}
    doctor = subprocess.run([loom, "doctor", "--quick"], capture_output=True, text=True,
                            env=env, timeout=60)
    assert doctor.returncode == 1
    local = doctor.stdout.split("Local model\n", 1)[1]
    first, hint = local.split("\n")[:2]
    assert first.startswith("  ✗ the 'local' extra is not installed (no module gguf, "
                            "tokenizers"), doctor.stdout
    assert hint.startswith("    hint: pipx install --force 'loom-lsp[local]'"), doctor.stdout
    setup = subprocess.run([loom, "model", "setup"], capture_output=True, text=True, env=env,
                           timeout=60)
    assert setup.returncode == 1
    assert setup.stderr.startswith("✗ SETUP: the 'local' extra is not installed"), setup.stderr
    assert "hint: pipx install --force 'loom-lsp[local]'" in setup.stderr
    assert "fetching" not in setup.stdout + setup.stderr
    assert not (tmp_path / "cache" / "models").exists()  # nothing fetched


def test_the_packaged_plugin_checks_the_installed_server(pipx_install: Installed,
                                                         tmp_path: Path) -> None:
    """The plugin from the wheel, in a headless Neovim: its health check starts the pipx
    `loom serve`, gets an answer and finds the same version as its own."""
    from tests.e2e.test_nvim_plugin import NVIM

    site = subprocess.run([str(pipx_install.python), "-c",
                           "from loom.demo import plugin_dir; print(plugin_dir())"],
                          capture_output=True, text=True, timeout=30).stdout.strip()
    out = tmp_path / "health.json"
    lua = f"""
      vim.opt.rtp:append({json.dumps(site)})
      local seen = {{}}
      local h = {{}}
      for _, kind in ipairs({{ "start", "ok", "info", "warn", "error" }}) do
        h[kind] = function(msg) seen[#seen + 1] = {{ kind, msg }} end
      end
      local cmd = {{ {json.dumps(str(pipx_install.loom))}, "serve" }}
      require("loom.health").server(h, cmd, require("loom").version)
      local f = io.open({json.dumps(str(out))}, "w")
      f:write(vim.json.encode(seen))
      f:close()
    """
    script = tmp_path / "health.lua"
    script.write_text(lua, encoding="utf-8")
    proc = subprocess.run([str(NVIM), "--headless", "--clean", "-c", f"luafile {script}",
                           "-c", "qa!"], capture_output=True, text=True, timeout=60,
                          env=pipx_install.env, stdin=subprocess.DEVNULL)
    assert out.exists(), proc.stderr
    seen = json.loads(out.read_text())
    kinds = [kind for kind, _msg in seen]
    assert "error" not in kinds and "warn" not in kinds, seen
    assert any(k == "ok" and "answers initialize" in m and f"loom {__version__}" in m
               for k, m in seen), seen
    assert ["ok", f"the plugin and the server are both version {__version__}"] in seen


def test_uv_tool_install_gives_a_loom_that_serves(dist: Dist, tmp_path: Path) -> None:
    _require("uv")
    env = _clean_env(tmp_path)
    env.update(UV_TOOL_DIR=str(tmp_path / "tools"), UV_TOOL_BIN_DIR=str(tmp_path / "bin"),
               UV_PYTHON=PY, UV_PYTHON_DOWNLOADS="never")
    proc = subprocess.run([PY, "-m", "uv", "tool", "install", "-q", str(dist.wheel)],
                          env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    loom = str(tmp_path / "bin" / "loom")
    version = subprocess.run([loom, "--version"], capture_output=True, text=True, env=env,
                             timeout=30)
    assert version.stdout.startswith(f"loom {__version__} (") and "/tools/loom-lsp/" in \
        version.stdout, version
    result = lsp_initialize([loom, "serve"], env)
    assert result["serverInfo"] == {"name": "loom", "version": __version__}
