"""The bundled local model end to end: continue through the executor, then a summary."""

from __future__ import annotations

from pathlib import Path

import pytest

from loom.app import open_app
from loom.llm.config import BUILTIN_PROFILES
from loom.llm.subject import configured_subject
from loom.llm.summaries import SummaryWorker
from loom.store.schema import Generation, Node, RawResponse
from tests.local_model import requires_local_model

pytestmark = requires_local_model


@pytest.fixture(autouse=True)
def local_only(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    for key in ("ANTHROPIC_API_KEY", "OPENAI_API_KEY", "LOOM_API_KEY", "LOOM_BASE_URL",
                "LOOM_SUBJECT_PROFILE", "LOOM_SUMMARY_PROFILE"):
        monkeypatch.delenv(key, raising=False)
    monkeypatch.setenv("LOOM_NO_KEYRING", "1")
    monkeypatch.setenv("LOOM_CONFIG", str(tmp_path / "absent.toml"))


def test_continue_and_summarize_with_the_local_model(tmp_path: Path) -> None:
    app = open_app(tmp_path / "loom.db", subject=configured_subject())
    ws = app.ws
    tree = ws.create_tree("Lighthouse", "buffer",
                          root_content="The lighthouse keeper climbed the stairs at dusk.")
    streamed: dict[int, str] = {}

    def on_delta(i: int, piece: str) -> None:
        streamed[i] = streamed.get(i, "") + piece

    result = app.executor.execute("→ continue n:2 tokens:20", app.actor(tree), on_delta)
    assert result.ok, result.text
    created = [Node.get_by_id(i) for i in result.data["created"]]
    assert len(created) == 2 and all(n.author_type == "model" for n in created)
    # A base model may end a continuation at once (an empty sibling, shown as "(empty)"), so one
    # of two short continuations from a random seed is allowed to be blank; both must not be.
    assert any(n.content.strip() for n in created), [n.content for n in created]
    assert all(n.content.strip() or "(empty)" in result.text for n in created), result.text
    assert [streamed.get(i, "") for i in range(2)] == [n.content for n in created]
    gens = {g.node: g for g in Generation.select()}
    for i, node in enumerate(created):
        g = gens[node.id]
        assert g.provider == "local" and g.completion_index == i
        assert g.params.get("max_tokens") == 20 and g.latency_ms and g.latency_ms > 0
        assert node.content_hash and node.parent == tree.root
    assert RawResponse.get_by_id(gens[created[0].id].raw).body
    # named explicitly: as the unconfigured fallback it writes no summaries
    worker = SummaryWorker(ws, BUILTIN_PROFILES["local"])
    written = worker.run_once(limit=3)
    summarized = list(Node.select().where(Node.summary_source == "model"))
    assert written == len(summarized) >= 1, [n.content for n in created]
    assert all(0 < len(n.summary.split()) <= 31 for n in summarized)
