"""The local model in tests: runs through its model service (never inside pytest); skipped
where ``loom model setup`` has not run, except in CI (``LOOM_REQUIRE_LOCAL_MODEL=1``), where
a missing model fails the tests that need it instead."""

from __future__ import annotations

import os

import pytest

from loom.llm.service.setup import bundled_gguf, find_server


def missing() -> str | None:
    if find_server() is None:
        return "the local model server is not set up (loom model setup)"
    if bundled_gguf() is None:
        return "the SmolLM2 weights are not set up (loom model setup)"
    return None


REQUIRED = os.environ.get("LOOM_REQUIRE_LOCAL_MODEL") == "1"

#: Marks for a module that needs the real local model.
requires_local_model = [
    pytest.mark.local_model,
    pytest.mark.skipif(not REQUIRED and missing() is not None, reason=missing() or ""),
]
