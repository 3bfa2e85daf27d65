"""Issue 47 item 2: with the bundled SmolLM2-135M as the collaborator, `loom doctor` listed
it as a plain line while its turns and judge scores were nonsense. The caveat is said where
the collaborator's model is named (doctor, and so `:checkhealth loom`) and where agent work
starts (`→ explore`, the editor's ask: tests/e2e/test_nvim_model_caveat.py)."""

from __future__ import annotations

import pytest

from loom.llm import doctor
from loom.llm.config import BUILTIN_PROFILES, ModelProfile, agent_model_caveat


def test_the_bundled_model_has_the_caveat_and_no_other_does() -> None:
    caveat = agent_model_caveat(BUILTIN_PROFILES["local"])
    assert caveat is not None
    message, hint = caveat
    assert message.startswith("the collaborator's model is the bundled SmolLM2-135M-Instruct, "
                              "far too small for agent work")
    # how to configure a capable one: a key, or the config profile lines
    assert hint.startswith("set ANTHROPIC_API_KEY or OPENAI_API_KEY")
    assert ('[profiles.claude] table with provider = "anthropic" and model = '
            '"claude-haiku-4-5", and collaborator = "claude" under [defaults]') in hint
    own = ModelProfile(name="mine", provider="local", model="/models/llama-3.1-8b.Q4.gguf")
    assert agent_model_caveat(own) is None
    assert agent_model_caveat(BUILTIN_PROFILES["claude-haiku"]) is None


def test_doctor_warns_of_the_bundled_collaborator(monkeypatch: pytest.MonkeyPatch,
                                                  tmp_path) -> None:  # type: ignore[no-untyped-def]
    for var in ("ANTHROPIC_API_KEY", "OPENAI_API_KEY", "LOOM_API_KEY",
                "LOOM_COLLABORATOR_PROFILE"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("LOOM_CONFIG", str(tmp_path / "none.toml"))
    checks = {c.text.split(":")[0]: c for c in doctor.purposes()}
    assert checks["subject"].status == "info"  # a tiny subject model is fine for writing
    collaborator = checks["collaborator"]
    assert collaborator.status == "warn"
    assert collaborator.text == ("collaborator: local (local: SmolLM2-135M-Instruct, this "
                                 "machine): far too small for agent work (the collaborator's "
                                 "turns, the exploration's judge)")
    assert collaborator.hint and "[profiles.claude]" in collaborator.hint
    assert doctor.Report(checks=doctor.purposes()).ok  # a warning, not a failure

    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test-not-a-secret")
    hosted = {c.text.split(":")[0]: c for c in doctor.purposes()}["collaborator"]
    assert hosted.status == "info" and "claude-haiku" in hosted.text
