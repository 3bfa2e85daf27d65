"""``→ explore`` for real: the bundled local model (SmolLM2) continues the demo tree and,
as the collaborator's model, judges each branch. Whatever the tiny model says, the
exploration ends on its own, every branch it made is scored (and the score is on the node)
or said to be unscored, and only scored branches are pruned."""

from __future__ import annotations

from pathlib import Path

import pytest

from loom.app import open_app
from loom.commands.context import Actor
from loom.demo import create_demo
from loom.llm.config import resolve_profile
from loom.llm.subject import configured_subject
from loom.model import marks
from loom.store.schema import Node
from tests.local_model import only_the_local_model, requires_local_model

pytestmark = requires_local_model


@pytest.fixture(autouse=True)
def local_only(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    only_the_local_model(monkeypatch, tmp_path)


def test_the_local_model_explores_the_demo_tree(tmp_path: Path) -> None:
    app = open_app(tmp_path / "loom.db", subject=configured_subject())
    assert resolve_profile("collaborator").provider == "local"
    ws = app.ws
    tree = create_demo(ws)
    human = ws.human()
    before = {n.id for n in Node.select().where(Node.tree == tree.id)}
    started = app.executor.execute("→ explore depth:2 n:2 budget:6000", Actor(human, tree))
    assert started.ok, started.text
    done = app.explorations().wait(tree, 300)
    assert done is not None and app.explorations().running(tree) is None
    assert done.ended is not None and not done.ended.startswith(("error", "refused")), done
    made = [n for n in Node.select().where(Node.tree == tree.id) if n.id not in before]
    assert len(made) == done.made >= 2
    judged = [n for n in made if marks.judgement_of(n.extra) is not None]
    assert len(judged) == done.scored
    unscored = [f for f in done.failures if "gave no score" in f or "did not score" in f]
    assert done.scored + len(unscored) <= done.made
    if done.ended != "budget spent":  # every branch was judged, one way or the other
        assert done.scored + len(unscored) == done.made, done.failures
    pruned = [n for n in made if n.pruned]
    assert len(pruned) == done.pruned
    assert all(marks.judgement_of(n.extra)["score"] < 5 for n in pruned)
