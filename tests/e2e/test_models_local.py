"""Seeds, replay and several models at once with the real local model (through its model
service) and a served model on a local wire-format server."""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path

import pytest

from loom.llm import keys as llm_keys
from loom.llm.config import BUILTIN_PROFILES
from loom.llm.providers.local import LocalProvider
from loom.llm.service import client as service
from loom.llm.subject import ProviderSubject
from loom.model.sampling import Sampling
from loom.redact import forget_secrets
from loom.store.schema import Generation, Node
from tests.e2e.fake_provider import OPENAI_COMPLETIONS, FakeProvider, openai_completion_stream
from tests.local_model import requires_local_model

pytestmark = requires_local_model

KEY_ENV = "LOOM_MODELS_LOCAL_KEY"


@pytest.fixture
def local(app, monkeypatch):  # type: ignore[no-untyped-def]
    for name in ("LOOM_SUBJECT", "LOOM_SUBJECT_PROFILE", "LOOM_BASE_URL"):
        monkeypatch.delenv(name, raising=False)
    app.executor.subject = ProviderSubject(BUILTIN_PROFILES["local"])
    return app


def children(node_id: str) -> list[Node]:
    return list(Node.select().where((Node.parent == node_id) & (Node.kind != "annotation"))
                .order_by(Node.created, Node.id))


def params(node: Node) -> dict:
    return dict(Generation.get(Generation.node == node.id).params)


def test_a_seeded_continuation_is_made_again_exactly(local):
    ws = local.ws
    tree = ws.create_tree("Seeds", "buffer", root_content="The lighthouse keeper climbed")
    actor = local.actor(tree)
    first = local.executor.execute("→ continue n:3 tokens:20 temperature:1 seed:42", actor)
    assert first.ok, first.text
    made = children(tree.root)
    assert len(made) == 3 and len({n.content for n in made}) > 1  # seeds 42, 43, 44
    assert [params(n)["seed"] for n in made] == [42] * 3
    second = made[1]
    # another client decodes on the shared model process meanwhile (an editor, a second
    # test worker): the seeded replay, in its one-slot process, is not batched with it
    busy = LocalProvider(BUILTIN_PROFILES["local"])
    beside = threading.Thread(target=lambda: asyncio.run(busy.complete(
        "Once upon a time", Sampling(n=4, tokens=48, temperature=1.0))))
    beside.start()
    again = local.executor.execute(f"→ regenerate {second.label}", actor)
    beside.join()
    assert again.ok, again.text
    assert service.running(service.spec_for(BUILTIN_PROFILES["local"].model, 1)) is not None
    assert f"the same text as [{second.label}]" in again.text
    (replay,) = [n for n in children(tree.root) if "replay_of" in params(n)]
    assert replay.content == second.content and replay.id != second.id
    index = Generation.get(Generation.node == second.id).completion_index
    assert params(replay) | {"replay_of": second.id, "replay_matched": True,
                             "seed": 42 + index} == params(replay)
    # without a seed the request runs again with the same settings, and says it had none
    loose = local.executor.execute("→ continue from root tokens:12 temperature:1.5", actor)
    (made_id,) = loose.data["created"]
    other = local.executor.execute(f"→ regenerate {ws.node(made_id).label}", actor)
    assert other.ok, other.text
    latest = ws.node(other.data["created"][0])
    if latest.content != ws.node(made_id).content:
        assert "(it had no seed: → continue seed:N)" in other.text


def test_models_mixes_the_local_model_and_a_served_one(local, tmp_path: Path, monkeypatch):
    monkeypatch.setenv(KEY_ENV, "loom-models-local-key-91d0")
    monkeypatch.setenv("LOOM_NO_KEYRING", "1")
    forget_secrets()
    llm_keys.clear_cache()
    with FakeProvider() as fake:
        config = tmp_path / "config.toml"
        config.write_text(
            f'[profiles.served]\nprovider = "openai-compatible"\n'
            f'base_url = "{fake.openai_base_url}"\nmodel = "served-base"\n'
            f'api_key_env = "{KEY_ENV}"\n', encoding="utf-8")
        monkeypatch.setenv("LOOM_CONFIG", str(config))
        fake.set_default(OPENAI_COMPLETIONS, openai_completion_stream([" from the server."]))
        tree = local.ws.create_tree("Mixed", "buffer", root_content="The sea was")
        result = local.executor.execute("→ continue models:local,served n:2 tokens:10",
                                        local.actor(tree))
    assert result.ok, result.text
    made = children(tree.root)
    models = [Generation.get(Generation.node == n.id).model for n in made]
    assert sorted(models) == ["SmolLM2-135M-Instruct"] * 2 + ["served-base"] * 2
    assert result.text.count("(SmolLM2-135M-Instruct)") == 2
    assert result.text.count("(served-base)") == 2
