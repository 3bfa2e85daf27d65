"""``Scoring`` over a fake host (``fake_host.py``): how many spans a document marks (one
for every 30 tokens of a node, at most 20 a document), text committed while scoring is on
is scored too, and a cancel stops a scoring with nothing written."""

from __future__ import annotations

import asyncio
import math
import threading
from pathlib import Path

import pytest

from loom.errors import LoomError
from loom.lsp.features.scoring import EVERY, MOST, Scoring
from loom.store.schema import NodeTokens
from loom.uris import node_uri
from tests.unit.fake_host import Features, features
from tests.unit.test_score import SCORER, scored_tokens
from tests.unit.test_score import Scoring as ScoringSubject


@pytest.fixture
def f(tmp_path: Path) -> tuple[Features, Scoring]:
    f = features(tmp_path / "loom.db")
    f.host.app.executor.subject = ScoringSubject()
    return f, f.wired.get(Scoring)


def open_path(f: Features, text: str) -> str:
    ws = f.host.app.ws
    tree = ws.create_tree("Harbour", root_content=text)
    _node, tip = ws.position(ws.human(), tree)
    uri = node_uri(tree, tip)
    f.host.open(uri)
    return uri


async def test_a_node_is_marked_once_for_every_30_of_its_tokens(f) -> None:  # type: ignore[no-untyped-def]
    f, scoring = f
    words = [" fjord" if i % 8 == 3 else " sea" for i in range(2 * EVERY + 5)]  # 65 tokens
    uri = open_path(f, "".join(words))
    res = await scoring.toggle(uri, True)
    assert res.ok, res.text
    doc = f.host.docs.open[uri]
    marks = scoring.marks(doc)
    assert len(marks) == 3  # ceil(65 / 30): not every one of its 8 unlikely words
    assert res.data["marked"] == 3 and {doc.text[m.start:m.end] for m in marks} == {"fjord"}
    published = f.published[-1].diagnostics
    assert [d.code for d in published] == ["loom.score"] * 3
    assert f.host.settings.probabilities is True  # the colours came on with it
    off = await scoring.toggle(uri, False)
    assert off.ok and scoring.marks(doc) == [] and f.published[-1].diagnostics == []
    assert f.host.settings.probabilities is False  # as they were


async def test_a_document_marks_at_most_20(f) -> None:  # type: ignore[no-untyped-def]
    f, scoring = f
    ws = f.host.app.ws
    tree = ws.create_tree("Many", root_content="Once.")
    node = ws.node(tree.root)
    for _ in range(MOST + 5):
        node = ws.add_node(tree, node, " a fjord", ws.human())
    ws.set_position(ws.human(), tree, node, node)
    uri = node_uri(tree, node)
    f.host.open(uri)
    res = await scoring.toggle(uri, True)
    assert res.ok, res.text
    assert len(scoring.marks(f.host.docs.open[uri])) == MOST


async def test_text_committed_while_scoring_is_on_is_scored(f) -> None:  # type: ignore[no-untyped-def]
    f, scoring = f
    uri = open_path(f, "The harbour was quiet.")
    assert (await scoring.toggle(uri, True)).ok
    f.host.append(uri, " Gulls over the fjord.")
    doc = f.host.docs.open[uri]
    committed = await f.editing.commit_and_show(doc)
    assert committed.ok and committed.data["created"], committed.text
    await f.host.settle()
    (new,) = committed.data["created"]
    assert NodeTokens.get_by_id(new).scorer == SCORER
    assert any(doc.text[m.start:m.end] == "fjord." for m in scoring.marks(doc))


async def test_a_cancel_stops_the_scoring_and_writes_nothing(f) -> None:  # type: ignore[no-untyped-def]
    f, scoring = f
    started = threading.Event()

    def slow(request):  # type: ignore[no-untyped-def]
        started.set()
        assert request.cancel is not None and request.cancel.wait(10)
        raise LoomError("MODEL_ERROR", "generation cancelled")

    f.host.app.executor.subject.score = slow  # type: ignore[attr-defined]
    uri = open_path(f, "The harbour was quiet.")
    task = asyncio.ensure_future(scoring.toggle(uri, True))
    await asyncio.to_thread(started.wait, 10)
    assert scoring.cancel() is True
    res = await task
    assert res.ok and res.text.startswith("✓ scoring stopped: nothing was written"), res.text
    assert NodeTokens.select().count() == 0
    assert scoring.cancel() is False  # nothing under way any more


def test_the_fake_scores_fjord_as_surprising() -> None:
    (tok,) = [t for t in scored_tokens(" a fjord") if "fjord" in t.text]
    assert math.exp(tok.logprob or 0) < 0.001  # (what the marks above rely on)


async def test_the_toggle_scores_what_it_commits_once(f) -> None:  # type: ignore[no-untyped-def]
    """The toggle commits the typed text and scores it in one run (before: its own commit
    started a second scoring in the background)."""
    f, scoring = f
    ran: list[object] = []
    execute = f.host.execute

    async def counted(command, actor, **kw):  # type: ignore[no-untyped-def]
        ran.append(command)
        return await execute(command, actor, **kw)

    f.host.execute = counted  # type: ignore[method-assign]
    uri = open_path(f, "The harbour was quiet.")
    f.host.append(uri, " Gulls over the fjord.")
    res = await scoring.toggle(uri, True)
    assert res.ok, res.text
    await f.host.settle()
    assert [type(c).__name__ for c in ran] == ["Score"]
    assert len(f.host.app.executor.subject.requests) == 1  # type: ignore[attr-defined]
    assert res.data["scored"] and res.data["marked"] == 1
