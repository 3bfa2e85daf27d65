"""From a profile to a provider. SDKs are imported only when their provider is made; every
provider is returned behind the redaction door (loom.llm.redacting)."""

from __future__ import annotations

from loom.llm.base import ModelError, Provider
from loom.llm.config import ModelProfile, resolve_profile
from loom.llm.redacting import redacting
from loom.llm.service.setup import install_hint

__all__ = ["make_provider", "resolve_profile"]


def make_provider(profile: ModelProfile) -> Provider:
    """A provider for ``profile`` whose requests and replies are redacted of secrets; a
    missing optional dependency is ``unavailable``."""
    return redacting(_make(profile))


def _make(profile: ModelProfile) -> Provider:
    try:
        if profile.provider == "anthropic":
            from loom.llm.providers.anthropic import AnthropicProvider

            return AnthropicProvider(profile)
        if profile.provider in ("openai", "openai-compatible"):
            from loom.llm.providers.openai import OpenAIProvider

            return OpenAIProvider(profile)
        if profile.provider == "local":
            from loom.llm.providers.local import LocalProvider

            return LocalProvider(profile)
    except ImportError as exc:
        extra = "local" if profile.provider == "local" else "models"
        raise ModelError(
            "unavailable",
            f"the {profile.provider} provider needs the '{extra}' extra, which is not "
            f"installed (no module {exc.name})",
            install_hint(extra),
        ) from exc
    raise ModelError("config", f"unknown provider {profile.provider!r}", None)
