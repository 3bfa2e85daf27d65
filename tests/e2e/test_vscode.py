"""The VS Code extension in a real VS Code: code-server + headless Chromium (playwright-core).

Runs ``vscode-extension/e2e/run.mjs`` (see there for what it checks) against this checkout's
``loom``. Needs what ``scripts/vscode-e2e-setup.sh`` installs (Chromium, code-server, Node 24,
playwright-core in ``$LOOM_E2E_CACHE``, default ``~/.cache/loom-vscode-e2e``) and the packaged
extension, which ``scripts/build-vsix.sh`` builds (this test builds it when it is missing or
older than the extension's sources). Skipped with the reason when a tool is missing, unless
``LOOM_REQUIRE_VSCODE_E2E=1`` (CI), where a missing tool is a failure.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.e2e.fake_provider import OPENAI_COMPLETIONS, FakeProvider, openai_completion_stream

REPO = Path(__file__).resolve().parents[2]
EXT = REPO / "vscode-extension"
VSIX = EXT / "loom.vsix"
CACHE = Path(os.environ.get("LOOM_E2E_CACHE", Path.home() / ".cache" / "loom-vscode-e2e"))
CHROMIUM = Path(os.environ.get("CHROMIUM", "/usr/bin/chromium"))
REQUIRED = os.environ.get("LOOM_REQUIRE_VSCODE_E2E") == "1"
#: Screenshots the README shows (docs/img/): LOOM_UPDATE_SCREENSHOTS=1 refreshes them.
README_SHOTS = ("tree-picture", "sibling-picker", "prose-light-theme")


def _missing(reason: str) -> None:
    if REQUIRED:
        pytest.fail(f"LOOM_REQUIRE_VSCODE_E2E=1 but {reason} (bash scripts/vscode-e2e-setup.sh)")
    pytest.skip(f"{reason}: run bash scripts/vscode-e2e-setup.sh (and scripts/build-vsix.sh)")


def _node() -> str | None:
    node24 = CACHE / "node24" / "node_modules" / ".bin" / "node"
    if node24.exists():
        return str(node24)
    return shutil.which("node")


def _loom() -> str | None:
    for candidate in (REPO / ".venv" / "bin" / "loom", Path(sys.executable).parent / "loom"):
        if candidate.exists():
            return str(candidate)
    return shutil.which("loom")


def _sources_newer_than_vsix() -> bool:
    if not VSIX.exists():
        return True
    built = VSIX.stat().st_mtime
    sources = [EXT / "package.json", *(EXT / "src").rglob("*.ts"),
               *(REPO / "grammars").glob("*.json")]
    return any(p.stat().st_mtime > built for p in sources if p.exists())


def test_extension_in_code_server(tmp_path: Path, request: pytest.FixtureRequest) -> None:
    node = _node()
    if node is None:
        _missing("no node")
    if not CHROMIUM.exists():
        _missing(f"no Chromium at {CHROMIUM}")
    if not (CACHE / "tools" / "node_modules" / ".bin" / "code-server").exists():
        _missing(f"no code-server in {CACHE}/tools")
    if not (CACHE / "tools" / "node_modules" / "playwright-core").exists():
        _missing(f"no playwright-core in {CACHE}/tools")
    loom = _loom()
    if loom is None:
        pytest.fail("no loom executable (pip install -e '.[lsp]')")
    if _sources_newer_than_vsix():
        build = subprocess.run(["bash", str(REPO / "scripts" / "build-vsix.sh")], cwd=REPO,
                               capture_output=True, text=True, timeout=900)
        assert build.returncode == 0, (
            f"build-vsix.sh failed:\n{build.stdout[-4000:]}\n{build.stderr[-4000:]}")
    # The subject model: a local server speaking the OpenAI wire format (the first
    # continue answers at once, the second streams slowly enough to be cancelled, the
    # third runs on while its tab is closed).
    fake = FakeProvider().start()
    request.addfinalizer(fake.stop)
    config = tmp_path / "loom-config.toml"
    config.write_text('[profiles.fake]\nprovider = "openai-compatible"\nmodel = "fake-base"\n'
                      f'base_url = "{fake.openai_base_url}"\n[defaults]\nsubject = "fake"\n',
                      encoding="utf-8")
    fake.script(OPENAI_COMPLETIONS,
                openai_completion_stream([" The door was open.", " Nobody answered.",
                                          " A dog barked somewhere."], event_delay_s=0.05),
                openai_completion_stream(["".join(f" word{i}" for i in range(200))],
                                         event_delay_s=0.15),
                openai_completion_stream(["".join(f" word{i}" for i in range(300))],
                                         event_delay_s=0.02))
    env = {**os.environ, "PATH": f"{Path(node).parent}{os.pathsep}{os.environ.get('PATH', '')}",
           "LOOM_E2E_CACHE": str(CACHE), "LOOM_CONFIG": str(config),
           "LOOM_API_KEY": "sk-test-not-a-secret", "LOOM_NO_KEYRING": "1"}
    out_dir = Path(os.environ.get("LOOM_E2E_OUT", tmp_path / "screenshots"))
    proc = subprocess.run(
        [node, str(EXT / "e2e" / "run.mjs"), "--vsix", str(VSIX), "--loom", loom,
         "--cache", str(CACHE), "--out", str(out_dir),
         *(["--keep"] if os.environ.get("LOOM_E2E_KEEP") == "1" else [])],
        cwd=EXT, env=env, capture_output=True, text=True, timeout=600)
    report = f"{proc.stdout}\n{proc.stderr}"
    if proc.returncode == 2:
        last = report.strip().splitlines()[-1] if report.strip() else "?"
        _missing(f"e2e setup problem: {last}")
    # the checks' lines first (stdout), then the tail of the logs
    assert proc.returncode == 0, (f"{proc.stdout[-5000:]}\n…\n{proc.stderr[:3000]}\n…\n"
                                  f"{proc.stderr[-4000:]}")
    print(proc.stdout)
    print(f"screenshots: {out_dir}")
    if os.environ.get("LOOM_UPDATE_SCREENSHOTS") == "1":
        # the README's pictures: regenerated by this test, committed small
        for name in README_SHOTS:
            shutil.copy(out_dir / f"{name}.png", REPO / "docs" / "img" / f"{name}.png")
