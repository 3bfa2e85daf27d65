"""``→ fill`` with the real bundled model (SmolLM2-135M-Instruct, no FIM tokens: told what
comes before and after the gap, through its chat template): three versions of the node,
each the original's text outside the span, and what follows the node shared."""

from __future__ import annotations

import pytest

from loom.llm.config import BUILTIN_PROFILES
from loom.llm.subject import ProviderSubject
from loom.store.schema import Generation, Node
from tests.local_model import requires_local_model

pytestmark = requires_local_model

BEFORE, SPAN = "The old keeper ", "climbed the narrow stairs"
AFTER = " every night to light the lamp."


@pytest.fixture
def local(app, monkeypatch):  # type: ignore[no-untyped-def]
    for name in ("LOOM_SUBJECT", "LOOM_SUBJECT_PROFILE", "LOOM_BASE_URL"):
        monkeypatch.delenv(name, raising=False)
    app.executor.subject = ProviderSubject(BUILTIN_PROFILES["local"])
    return app


def test_the_bundled_model_fills_a_span_three_ways(local):
    ws = local.ws
    tree = ws.create_tree("Fill", "buffer", root_content="The storm had passed. ")
    me = local.me()
    node = ws.add_node(tree, ws.node(tree.root), BEFORE + SPAN + AFTER, me)
    below = ws.add_node(tree, node, " Nobody knew his name.", me)
    ws.set_position(me, tree, below, below)
    result = local.executor.execute(f"→ fill {node.label} at:{len(BEFORE)}-"
                                    f"{len(BEFORE) + len(SPAN)} n:3 temperature:0.9",
                                    local.actor(tree))
    assert result.ok, result.text
    made = list(Node.select().where(Node.version_of == node.id).order_by(Node.version_number))
    assert len(made) == 3
    for version in made:
        assert version.content.startswith(BEFORE.rstrip()) and version.content.endswith(AFTER)
        params = Generation.get(Generation.node == version.id).params
        assert params["strategy"] == "instruct" and params["profile"] == "local"
        assert params["fill"]["replaced"] == SPAN and params["temperature"] == 0.9
    # what follows the node is the same node under each version
    for version in made:
        path = ws.path(below, prefer=(below.id, version.id))
        assert [n.id for n in path] == [tree.root, version.id, below.id]
