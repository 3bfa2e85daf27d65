"""What a release must agree on, checked without building anything: one version (the
package's, the Neovim plugin's, the changelog's), extras that hold what their code
imports, the message that names a missing extra, and a Neovim plugin whose every
`<Plug>` mapping has an action and a help tag. Building and installing the wheel is
tests/e2e/test_install.py."""

from __future__ import annotations

import re
import sys
import tomllib
from pathlib import Path

import pytest

from loom import __version__
from loom.llm.base import ModelError
from loom.llm.config import ModelProfile
from loom.llm.registry import make_provider

REPO = Path(__file__).resolve().parents[2]
NVIM = REPO / "nvim"
PYPROJECT = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))


def _names(requirements: list[str]) -> set[str]:
    return {re.split(r"[\s<>=\[;]", r, maxsplit=1)[0].lower() for r in requirements}


def test_the_version_is_written_once_and_everything_agrees_with_it() -> None:
    project = PYPROJECT["project"]
    assert "version" not in project and project["dynamic"] == ["version"]
    assert PYPROJECT["tool"]["setuptools"]["dynamic"]["version"] == {"attr": "loom.__version__"}
    lua = (NVIM / "lua" / "loom" / "version.lua").read_text(encoding="utf-8")
    assert re.search(r'^return "([^"]+)"$', lua, re.M).group(1) == __version__  # type: ignore[union-attr]
    changelog = (REPO / "CHANGELOG.md").read_text(encoding="utf-8")
    latest = re.search(r"^## \[(\d[^\]]*)\]", changelog, re.M)
    assert latest and latest.group(1) == __version__, "CHANGELOG.md's latest entry"
    assert f"[{__version__}]: " in changelog  # its link


def test_the_language_server_is_in_the_core_and_the_local_extra_stands_alone() -> None:
    core = _names(PYPROJECT["project"]["dependencies"])
    assert {"pygls", "lsprotocol"} <= core
    extras = PYPROJECT["project"]["optional-dependencies"]
    assert extras["lsp"] == []  # kept so that loom-lsp[lsp,…] still installs
    # the local provider is llama-server's OpenAI-compatible API with tenacity's retries
    assert {"openai", "tenacity", "gguf", "tokenizers"} <= _names(extras["local"])
    local_provider = (REPO / "server" / "loom" / "llm" / "providers" / "local.py").read_text()
    retry = (REPO / "server" / "loom" / "llm" / "retry.py").read_text()
    assert "import openai" in local_provider and "from tenacity import" in retry


@pytest.mark.parametrize(("provider", "extra"), [("local", "local"), ("openai", "models"),
                                                 ("anthropic", "models")])
def test_a_missing_sdk_names_the_extra_to_install(monkeypatch: pytest.MonkeyPatch,
                                                  provider: str, extra: str) -> None:
    for module in ("openai", "anthropic", "tenacity"):
        monkeypatch.setitem(sys.modules, module, None)  # import raises ImportError
    for loaded in [m for m in sys.modules if m.startswith("loom.llm.providers.")]:
        monkeypatch.delitem(sys.modules, loaded)
    profile = ModelProfile(name="p", provider=provider, model="m")
    with pytest.raises(ModelError) as caught:
        make_provider(profile)
    assert f"needs the '{extra}' extra" in str(caught.value.message)
    assert f"pipx install --force 'loom-lsp[{extra}]'" in (caught.value.hint or "")


def test_every_plug_mapping_has_an_action_a_help_tag_and_no_neovim_key() -> None:
    keymaps = (NVIM / "lua" / "loom" / "keymaps.lua").read_text(encoding="utf-8")
    entries = re.findall(r'\{ name = "(\w+)", key = ("[^"]*"|false)', keymaps)
    assert len(entries) >= 25
    commands = (NVIM / "lua" / "loom" / "commands.lua").read_text(encoding="utf-8")
    actions = commands[commands.index("C.actions = {"):]
    help_text = (NVIM / "doc" / "loom.txt").read_text(encoding="utf-8")
    for name, key in entries:
        assert re.search(rf"^  {name} = ", actions, re.M), f"C.actions.{name}"
        plug = "<Plug>(loom-" + name.replace("_", "-") + ")"
        assert f"*{plug}*" in help_text, f"{plug} has no help tag"
        if key != "false":
            assert re.search(rf"^  {re.escape(key.strip(chr(34)))}\s+\*{re.escape(plug)}\*",
                             help_text, re.M), f"{plug}'s key in loom-mappings"
    defaults = {key.strip('"') for _name, key in entries}
    # Neovim's own: spelling motions, the tag jump, local declaration
    assert not {"]s", "[s", "<C-]>", "gd"} & defaults


def test_the_readme_shows_the_install_lines() -> None:
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    lines = readme.splitlines()
    assert lines[3:5] == ["bash scripts/run.sh     # set up and run the main job: the demo tree "
                          "in Neovim (SQLite file, bundled local model)",
                          "bash scripts/test.sh    # set up and run the linters and every test"]
    install = readme[readme.index("## Install"):readme.index("## In the editor")]
    for line in ("pipx install loom-lsp", "uv tool install loom-lsp", "loom --version",
                 "pipx install --force 'loom-lsp[local]'", "loom model setup",
                 '{ "loom-lsp/loom", main = "loom", opts = { db = "~/notes/loom.db" } }',
                 '{ "loom-lsp/loom" }', 'use("loom-lsp/loom")', "Plug 'loom-lsp/loom'",
                 ":checkhealth loom"):
        assert line in install, line
    assert readme.index("## Install") < readme.index("## In the editor")


def test_both_scripts_compile_looms_bytecode_before_running_it() -> None:
    """Where PYTHONDONTWRITEBYTECODE is set (as in this environment), an editable install
    has no bytecode for Loom's own modules, and every command compiled them again:
    scripts/run.sh compiles them once, as scripts/test.sh does, before it runs the demo."""
    line = ".venv/bin/python -m compileall -q -j 0 server/loom >/dev/null"
    for script in ("run.sh", "test.sh"):
        text = (REPO / "scripts" / script).read_text(encoding="utf-8")
        setup, _, rest = text.partition(line)
        assert rest, f"{script} does not compile Loom's bytecode"
        assert "pip install" in setup and ".venv/bin/" in rest, script
