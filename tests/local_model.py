"""The local model in tests: runs through its model service (never inside pytest); skipped
where ``loom model setup`` has not run, except in CI (``LOOM_REQUIRE_LOCAL_MODEL=1``), where
a missing model fails the tests that need it instead."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
import pytest_lsp
from pytest_lsp import ClientServerConfig, LanguageClient

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


#: What a language server that should answer with the local model must not inherit.
HOSTED = ("ANTHROPIC_API_KEY", "OPENAI_API_KEY", "LOOM_API_KEY", "LOOM_BASE_URL",
          "LOOM_SUBJECT", "LOOM_SUBJECT_PROFILE")


def local_env(**extra: str) -> dict[str, str]:
    """This process's environment for a language server on the local model only."""
    env = {k: v for k, v in os.environ.items() if k not in HOSTED}
    env.update({"LOOM_NO_KEYRING": "1", "LOOM_SUMMARIES": "off", **extra})
    return env


def local_model_session(env: dict[str, str]) -> tuple[Any, Any, Any]:
    """A test module's ``db`` (the demo), ``client`` (a Neovim session against a server
    with ``env``) and ``editor`` fixtures; assign all three at module level."""
    from tests.lsp.conftest import SERVER, make_demo, start_session

    @pytest.fixture
    def db(tmp_path: Path) -> Path:
        path = tmp_path / "loom.db"
        make_demo(path)
        return path

    @pytest_lsp.fixture(config=ClientServerConfig(server_command=SERVER, server_env=env),
                        params=["neovim"])
    async def client(request: Any, lsp_client: LanguageClient, db: Path):  # type: ignore[no-untyped-def]
        async for _ in start_session(request, lsp_client, db):
            yield

    @pytest.fixture
    def editor(client: LanguageClient) -> Any:
        return client.editor  # type: ignore[attr-defined]

    return db, client, editor


def only_the_local_model(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """No hosted key, base URL, profile override, keyring or config file: every purpose
    resolves to the bundled local model."""
    for key in ("ANTHROPIC_API_KEY", "OPENAI_API_KEY", "LOOM_API_KEY", "LOOM_BASE_URL",
                "LOOM_SUBJECT_PROFILE", "LOOM_SUMMARY_PROFILE", "LOOM_COLLABORATOR_PROFILE"):
        monkeypatch.delenv(key, raising=False)
    monkeypatch.setenv("LOOM_NO_KEYRING", "1")
    monkeypatch.setenv("LOOM_CONFIG", str(tmp_path / "absent.toml"))
