"""Issue 47 item 2, as a writer in Neovim sees it: with the bundled SmolLM2-135M as the
collaborator (no API key, no profile), `:checkhealth loom` warns that it is far too small
for agent work and says how to configure a capable model, and `:Loom ask` and `:Loom
explore` say so where the work starts (before: nonsense, and every check green). The real
server and the real bundled model; same harness as ``test_nvim_plugin.py``."""

from __future__ import annotations

import pytest

from tests import local_model
from tests.e2e import test_nvim_plugin as harness
from tests.e2e.test_nvim_plugin import Demo, Editor, wait_for

template = harness.template
demo = harness.demo

pytestmark = [pytest.mark.nvim, *local_model.requires_local_model]

CAVEAT = ("! the collaborator's model is the bundled SmolLM2-135M-Instruct, far too small "
          "for agent work")
HINT = "  hint: set ANTHROPIC_API_KEY or OPENAI_API_KEY"


editor = harness.editor


@pytest.fixture(autouse=True)
def bundled_collaborator(tmp_path, monkeypatch: pytest.MonkeyPatch) -> None:  # type: ignore[no-untyped-def]
    """No key, no profile: the built-in choice, the bundled model (set before the editor
    starts its server, which inherits the environment)."""
    for var in (*local_model.HOSTED, "LOOM_COLLABORATOR_PROFILE"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("LOOM_CONFIG", str(tmp_path / "no-config.toml"))
    monkeypatch.setenv("LOOM_NO_KEYRING", "1")
    monkeypatch.setenv("LOOM_SUMMARIES", "off")


def said(editor: Editor, needle: str) -> str | None:
    return next((m for m in editor.messages() if needle in m), None)


def test_checkhealth_warns_that_the_bundled_collaborator_is_too_small(editor: Editor,
                                                                      demo: Demo) -> None:
    editor.open(demo.uri(demo.tip))
    editor.cmd("checkhealth loom")
    report = editor.text
    assert ("WARNING collaborator: local (local: SmolLM2-135M-Instruct, this machine): far "
            "too small for agent work") in report, report
    assert "set ANTHROPIC_API_KEY or OPENAI_API_KEY" in report, report
    assert 'collaborator = "claude" under [defaults]' in report, report


def test_ask_and_explore_say_the_model_is_too_small_and_how_to_configure_one(
        editor: Editor, demo: Demo) -> None:
    editor.open(demo.uri(demo.tip))
    editor.cmd("Loom ask annotate where the tone shifts")
    answer = wait_for(lambda: said(editor, CAVEAT), 180, "the collaborator's answer")
    assert answer.startswith(CAVEAT) and HINT in answer, answer  # first: the turn is long
    assert "[profiles.claude]" in answer, answer
    editor.cmd("Loom explore depth:1 n:1")
    started = wait_for(lambda: said(editor, "✓ exploring from ["), 60, "the exploration")
    assert CAVEAT in started and HINT in started, started
    editor.cmd("Loom explore end")
    wait_for(lambda: said(editor, "stopped exploring") or said(editor, "explored from [")
             or said(editor, "no exploration is running"), 60, "the exploration's end")
