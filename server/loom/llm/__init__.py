"""The model-provider layer: profiles, providers (Anthropic, OpenAI[-compatible], local),
one retry policy, error classification and secret redaction. Knows nothing about trees.

The names below are imported on first use (PEP 562): a process that only reads a key or a
tokenizer from here (the CLI, the language server at start) must not pay for pydantic
models, the registry and the providers it never calls."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
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

_WHERE = {
    "ChatMessage": "base", "Completion": "base", "GenerationResult": "base",
    "ModelError": "base", "Provider": "base", "Usage": "base",
    "LoomConfig": "config", "ModelProfile": "config", "load_config": "config",
    "resolve_profile": "config", "make_provider": "registry",
}

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


def __getattr__(name: str) -> Any:
    module = _WHERE.get(name)
    if module is None:
        raise AttributeError(f"module 'loom.llm' has no attribute {name!r}")
    value = getattr(importlib.import_module(f"loom.llm.{module}"), name)
    globals()[name] = value
    return value
