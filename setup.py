"""The one build step pyproject.toml cannot say: the Neovim plugin (``nvim/`` at the top of
the repository, where plugin managers and ``vim.opt.rtp:append`` find it) is copied into the
wheel as ``loom/editors/nvim``, so an installed ``loom demo`` opens Neovim with it and a
user of ``pipx install loom-lsp`` has the plugin that matches the server. Everything else is
in pyproject.toml."""

from __future__ import annotations

from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

PLUGIN = Path(__file__).resolve().parent / "nvim"
#: Files of a working copy that are not the plugin: generated help tags, editor leftovers.
SKIP_NAMES = {"tags", ".gitignore"}
SKIP_SUFFIXES = (".swp", "~")


def plugin_files(root: Path) -> list[Path]:
    """The plugin's files, relative to ``root``, in a stable order."""
    return sorted(
        path.relative_to(root)
        for path in root.rglob("*")
        if path.is_file() and path.name not in SKIP_NAMES
        and not path.name.endswith(SKIP_SUFFIXES)
    )


class BuildWithPlugin(build_py):
    """build_py, then nvim/ into ``<build>/loom/editors/nvim`` (not for an editable install:
    there ``loom demo`` finds ``nvim/`` beside ``server/``)."""

    def run(self) -> None:
        super().run()
        if getattr(self, "editable_mode", False):
            return
        if not (PLUGIN / "lua" / "loom" / "init.lua").is_file():
            raise SystemExit(f"✗ BUILD: the Neovim plugin is missing from {PLUGIN}\n"
                             "  hint: build from a checkout or from the sdist (MANIFEST.in "
                             "grafts nvim/)")
        target = Path(self.build_lib) / "loom" / "editors" / "nvim"
        for rel in plugin_files(PLUGIN):
            (target / rel).parent.mkdir(parents=True, exist_ok=True)
            self.copy_file(str(PLUGIN / rel), str(target / rel))


setup(cmdclass={"build_py": BuildWithPlugin})
