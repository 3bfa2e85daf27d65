"""The model-provider layer: profiles, providers (Anthropic, OpenAI[-compatible], local),
one retry policy, error classification and secret redaction. Knows nothing about trees."""

from loom.llm.base import (
    ChatMessage,
    Completion,
    GenerationResult,
    ModelError,
    Provider,
    Usage,
)
from loom.llm.config import LoomConfig, ModelProfile, load_config, resolve_profile
from loom.llm.registry import make_provider

__all__ = [
    "ChatMessage",
    "Completion",
    "GenerationResult",
    "LoomConfig",
    "ModelError",
    "ModelProfile",
    "Provider",
    "Usage",
    "load_config",
    "make_provider",
    "resolve_profile",
]
