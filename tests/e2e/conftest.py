"""Fixtures for the end-to-end tests: a model service around a stand-in llama-server."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from loom.llm.service import client as service
from tests.conftest import REPO
from tests.e2e.fake_llama_server import wrapper_script
from tests.e2e.fake_provider import FakeProvider


@pytest.fixture
def fake() -> Iterator[FakeProvider]:
    """A started fake of the providers' HTTP APIs (fake_provider.py), stopped after the
    test. Modules that also configure Loom to use it define a ``fake`` of their own."""
    with FakeProvider() as server:
        yield server


@dataclass
class FakeLlama:
    """A model service whose server is tests/e2e/fake_llama_server.py."""

    runtime: Path
    model: Path  # a .gguf path for a local profile (the stand-in never reads it)
    log: Path  # one JSON line per request the stand-in got

    def requests(self) -> list[dict[str, object]]:
        import json

        if not self.log.exists():
            return []
        return [json.loads(line) for line in self.log.read_text().splitlines()]


@pytest.fixture
def fake_llama(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeLlama]:
    runtime = tmp_path / "runtime"
    server = tmp_path / "llama-server"
    server.write_text(wrapper_script(str(server), sys.executable, str(REPO)))
    server.chmod(0o755)
    model = tmp_path / "stand-in.gguf"
    model.write_bytes(b"GGUF")
    log = tmp_path / "requests.jsonl"
    monkeypatch.setenv("LOOM_RUNTIME_DIR", str(runtime))
    monkeypatch.setenv("LOOM_LLAMA_SERVER", str(server))
    monkeypatch.setenv("FAKE_LLAMA_LOG", str(log))
    fake = FakeLlama(runtime, model, log)
    try:
        yield fake
    finally:
        service.stop_all(runtime) if runtime.exists() else None
        os.environ.pop("FAKE_LLAMA_EXIT", None)
