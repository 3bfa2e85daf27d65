"""The promise "soft-deleted content is purged after 30 days" (``store/purge.py``,
``marks.UNDO_WINDOW_S``), on SQLite and PostgreSQL: rows aged past the window go with
everything that is theirs alone — raw responses, generations, summaries and their jobs,
token data, full-text rows, edges, links, annotations, pins, preference events, media —
and nothing else does (a node a live version continues or names stays); ``→ undelete``
works up to the boundary (29 days 23 hours), and a purge never races an undelete or a
writer."""

from __future__ import annotations

import json
import threading
from typing import Any

import pytest

from loom.commands.context import Actor
from loom.errors import LoomError
from loom.model import marks
from loom.store import memory_repo, reader
from loom.store.purge import Purge
from tests.conftest import Clock
from tests.unit.test_split import PIECES, Subject

DAY = 86_400.0
#: tables the purge only adds to (the change log) or never touches
UNTOUCHED = ("change", "meta")


def run(app: Any, tree: Any, line: str, who: Any = None) -> Any:
    result = app.executor.execute(line, Actor(who or app.ws.human(), tree))
    assert result.ok, result.text
    return result


def tables(ws: Any) -> list[str]:
    from loom.store.roles import _tables

    return [t for t in _tables() if t not in UNTOUCHED]


def snapshot(ws: Any) -> dict[str, set[tuple[str, ...]]]:
    """Every row of every table, as text."""
    out = {}
    for table in tables(ws):
        out[table] = {tuple("" if v is None else str(bytes(v) if isinstance(v, memoryview)
                                                    else v) for v in row)
                      for row in ws.sql(f'SELECT * FROM "{table}"').fetchall()}
    return out


def gone_and_kept(before: dict[str, set[tuple[str, ...]]], after: dict[str, set[tuple[str, ...]]],
                  purged: set[str]) -> dict[str, set[tuple[str, ...]]]:
    """The rows that went, per table, after checking that each of them names something
    purged and that every row naming nothing purged is still there, unchanged."""
    went: dict[str, set[tuple[str, ...]]] = {}
    for table, rows in before.items():
        for row in rows:
            names_purged = any(p in value for value in row for p in purged)
            if row not in after[table]:
                assert names_purged, f"{table} lost a row naming nothing purged: {row}"
                went.setdefault(table, set()).add(row)
    return went


@pytest.fixture
def story(app):  # type: ignore[no-untyped-def]
    """A tree with everything that hangs off nodes: two model continuations of one request
    (one raw response, token data), a human branch under the first with an annotation, a
    link each way, a pin, another participant standing there and typing, a
    preference event, an image; and two version families."""
    ws = app.ws
    human = ws.human()
    tree = ws.create_tree("Purge", root_content="Once upon a time.")
    app.executor.subject = Subject([PIECES, [" A", " dog", " barked", "."]])
    made = run(app, tree, "→ continue n:2").data["created"]
    g1, g2 = ws.node(made[0]), ws.node(made[1])
    a = ws.add_node(tree, g1, " A walnut tree grew there.", human)
    note = ws.add_node(tree, a, "a note about the walnut", human, kind="annotation")
    b = ws.add_node(tree, a, " The zebrafish swam in the pond.", human)
    ws.add_link(tree, b, human, target_kind="node", target_node=g2)
    ws.add_link(tree, g2, human, target_kind="node", target_node=b)
    memory_repo.add_pin(ws, human, tree, "node", b.id)
    bob = ws.ensure_participant("bob", "human", "human", ["loom_aware", "loom_write"])
    ws.set_position(bob, tree, b, b)
    ws.save_buffer_state(f"loom://path/{tree.id}/{b.local_id}", bob, ws.open_session(bob),
                         tree=tree.id, tip=b.id, pending=[], working="")
    ws.record_preference(human, tree, "bookmark", node=b.id)
    for node, sha in ((b, "a" * 64), (g2, "b" * 64)):  # an image each (an import's media)
        ws.sql("INSERT INTO media (sha256, mime, size, data, created) VALUES (?, ?, 1, ?, 0)",
               (sha, "image/png", b"x"))
        extra = {"interchange": {"media": {"0": {"sha": sha}}}}
        ws.sql("UPDATE node SET extra = ? WHERE id = ?", (json.dumps(extra), node.id))
    # version families: an original whose version lives on, and a version of a live one
    v0 = ws.add_node(tree, g2, " The first draft.", human)
    k = ws.add_node(tree, v0, " Below the draft.", human)
    w0 = ws.add_node(tree, g2, " Another draft.", human)
    ell = ws.add_node(tree, w0, " Below the other.", human)
    v1 = ws.add_version(tree, v0, " The second draft.", human)
    w1 = ws.add_version(tree, w0, " Another draft, revised.", human)
    assert reader.search(ws, "zebrafish")  # (indexed now)
    return dict(ws=ws, tree=tree, g1=g1, g2=g2, a=a, note=note, b=b, bob=bob, v0=v0, k=k,
                v1=v1, w0=w0, w1=w1, ell=ell)


def test_a_deleted_subtree_goes_after_30_days_with_all_that_is_its_own(
        app: Any, story: dict[str, Any], clock: Clock) -> None:
    ws, tree = story["ws"], story["tree"]
    g1, g2, a, note, b = (story[k] for k in ("g1", "g2", "a", "note", "b"))
    raw = ws.generations([g1.id])[0].raw
    assert raw and raw == ws.generations([g2.id])[0].raw  # one request made both
    for node in (g1, story["v0"], story["w1"]):
        run(app, tree, f"→ delete {node.label}")
    ws.acquire_turn(b, story["bob"])  # (a lock left on a node below the cut)
    clock.advance(marks.UNDO_WINDOW_S + 1)
    before = snapshot(ws)
    going = {g1.id, a.id, note.id, b.id, story["w1"].id}
    purged = ws.purge_expired()
    after = snapshot(ws)
    went = gone_and_kept(before, after, going | {"a" * 64})
    assert (purged.subtrees, purged.trees, purged.nodes) == (2, 0, 5), purged.line()
    assert {r[0] for r in went["node"]} == going
    assert {r[0] for r in after["node"]} >= {tree.root, g2.id, story["v0"].id, story["k"].id,
                                              story["v1"].id, story["w0"].id, story["ell"].id}
    # what hung off them
    assert {r for t, rows in went.items() for r in rows if t == "generation"} and \
        not ws.generations([g1.id]) and ws.generations([g2.id])
    assert any(r[0] == raw for r in after["raw_response"])  # g2's generation still holds it
    assert {t for t in went} >= {"edge", "edge_source", "link", "pin", "branch_lock",
                                 "preference_event", "node_tokens", "media", "buffer_state",
                                 "summary_job"}
    assert all(r[0] != "b" * 64 for r in went["media"])
    assert len(went["link"]) == 2 and not ws.links(g2)
    # bob stood on b: he is at the deleted root's parent now
    assert ws.position(story["bob"], tree)[0].id == tree.root
    # the full-text index holds nothing of them (FTS5 rows, or PostgreSQL's node index)
    assert reader.search(ws, "zebrafish", include_hidden=True) == []
    assert reader.search(ws, "walnut", include_hidden=True) == []
    if not ws.dialect.postgres:
        ws.sql("INSERT INTO node_fts(node_fts) VALUES ('integrity-check')")
        indexed = ws.sql("SELECT count(*) FROM node_fts_docsize").fetchone()[0]
        assert indexed == ws.sql("SELECT count(*) FROM node").fetchone()[0]
    # kept: the original a live version names (v0), and what versions still continue
    assert ws.find_node(story["v0"].id) is not None
    assert [n.id for n in ws.children(story["v1"])] == [story["k"].id]
    assert [n.id for n in ws.children(story["w0"])] == [story["ell"].id]
    assert ws.path(ws.node(story["ell"].id))[-2].id == story["w0"].id
    # a second purge finds nothing more to do
    assert not ws.purge_expired()
    # the change log says what went
    kinds = [c.kind for c in ws.changes_since(0)]
    assert kinds.count("node.purge") == 2


def test_undelete_works_up_to_the_boundary_and_not_after(app: Any, clock: Clock) -> None:
    """"→ undelete … within 30 days": at 29 days 23 hours nothing is purged and the
    undelete works; a deletion exactly 30 days old is still kept; a second later it goes,
    and an undelete of it says so."""
    ws = app.ws
    tree = ws.create_tree("Boundary", root_content="Root.")
    node = ws.add_node(tree, ws.node(tree.root), " The lane.", ws.human())
    run(app, tree, f"→ delete {node.local_id}")
    clock.advance(29 * DAY + 23 * 3600)
    assert not ws.purge_expired()
    assert run(app, tree, f"→ undelete {node.local_id}").text.startswith("✓ restored")
    run(app, tree, f"→ delete {node.local_id}")
    clock.advance(marks.UNDO_WINDOW_S)
    assert not ws.purge_expired()
    clock.advance(1)
    assert ws.purge_expired().nodes == 1
    refused = app.executor.execute(f"→ undelete {node.local_id}", Actor(ws.human(), tree))
    assert not refused.ok and refused.code == "NOT_FOUND", refused.text
    # a stale copy of the node (a process that read it before) is told it was purged
    with pytest.raises(LoomError, match="purged"):
        reader.restore_subtree(ws, node, ws.human())


def test_a_deleted_tree_goes_after_30_days_with_everything_in_it(app: Any,
                                                                 clock: Clock) -> None:
    ws = app.ws
    human = ws.human()
    gone = ws.create_tree("Old", root_content="The old tree.")
    kept = ws.create_tree("Kept", root_content="The kept tree.")
    old_node = ws.add_node(gone, ws.node(gone.root), " Something old.", human)
    kept_node = ws.add_node(kept, ws.node(kept.root), " Something kept.", human)
    ws.add_link(kept, kept_node, human, target_kind="tree", target_tree=gone)
    ws.add_link(kept, kept_node, human, target_kind="node", target_node=old_node)
    ws.add_link(gone, old_node, human, target_kind="node", target_node=kept_node)
    run(app, gone, '→ stash "plan" "the old plan"')
    run(app, gone, f"→ pin {old_node.local_id}")
    memory_repo.add_pin(ws, human, kept, "node", old_node.id)
    ws.choose_model(human, gone, "fake")
    ws.record_preference(human, gone, "bookmark", node=old_node.id)
    ws.set_position(human, gone, old_node)
    ws.enqueue_summary("tree", gone.id, gone.id)
    run(app, gone, '→ delete tree:"Old"')
    clock.advance(marks.UNDO_WINDOW_S + 1)
    before = snapshot(ws)
    purged = ws.purge_expired()
    after = snapshot(ws)
    assert (purged.trees, purged.subtrees, purged.nodes) == (1, 0, 2), purged.line()
    went = gone_and_kept(before, after, {gone.id, gone.root, old_node.id})
    assert {"tree", "node", "edge", "edge_source", "link", "position", "pin", "stash",
            "trace_entry", "model_choice", "preference_event", "summary_job"} <= set(went)
    assert ws.tree_or_none(gone.id) is None and ws.tree_or_none(kept.id) is not None
    assert ws.links(kept_node) == []
    assert ws.participant("human").current_tree is None
    refused = app.executor.execute('→ undelete tree:"Old"', Actor(human, kept))
    assert not refused.ok and refused.code == "NOT_FOUND"


def test_a_purge_never_races_an_undelete(app: Any, clock: Clock,
                                         monkeypatch: pytest.MonkeyPatch) -> None:
    """The purge reads what is due, then waits for the tree's writers; an undelete that
    commits meanwhile keeps its nodes (the purge reads the marks again under the lock)."""
    ws = app.ws
    tree = ws.create_tree("Race", root_content="Root.")
    node = ws.add_node(tree, ws.node(tree.root), " Saved at the last moment.", ws.human())
    run(app, tree, f"→ delete {node.local_id}")
    clock.advance(marks.UNDO_WINDOW_S + 60)
    looked = threading.Event()
    due = Purge._due_subtrees

    def spied(self: Purge, cutoff: float) -> list[tuple[str, str]]:
        found = due(self, cutoff)
        looked.set()
        return found

    monkeypatch.setattr(Purge, "_due_subtrees", spied)
    result: list[Any] = []
    with ws.db.atomic():  # the undelete's transaction, not yet committed
        reader.restore_subtree(ws, ws.node(node.id), ws.human())
        worker = threading.Thread(target=lambda: result.append(ws.purge_expired()))
        worker.start()
        assert looked.wait(30)  # it saw the deletion, and now waits for the lock
    worker.join(60)
    assert result and not result[0], result
    assert ws.find_node(node.id) is not None and not ws.node(node.id).pruned


def test_a_writer_after_the_purge_writes_nothing_below_what_went(app: Any,
                                                                 clock: Clock) -> None:
    ws = app.ws
    tree = ws.create_tree("Writer", root_content="Root.")
    node = ws.add_node(tree, ws.node(tree.root), " Deleted long ago.", ws.human())
    run(app, tree, f"→ delete {node.local_id}")
    clock.advance(marks.UNDO_WINDOW_S + 1)
    assert ws.purge_expired().nodes == 1
    count = ws.node_count(tree)
    with pytest.raises(LoomError, match="purged"):  # its copy of the node is stale
        ws.add_node(tree, node, " A reply to nothing.", ws.human())
    assert ws.node_count(tree) == count


def test_nothing_due_is_a_read_and_says_so(app: Any) -> None:
    ws = app.ws
    tree = ws.create_tree("Fresh", root_content="Root.")
    node = ws.add_node(tree, ws.node(tree.root), " Just deleted.", ws.human())
    run(app, tree, f"→ delete {node.local_id}")
    last = ws.last_change()
    purged = ws.purge_expired()
    assert not purged and purged.line() == "nothing to purge"
    assert ws.last_change() == last and ws.find_node(node.id) is not None


def test_the_language_server_purges_on_start_up_then_daily(app: Any, clock: Clock,
                                                           caplog: pytest.LogCaptureFixture
                                                           ) -> None:
    """``lsp/purging.py``: a purge shortly after the session starts and one every 24 hours,
    each logged with what it removed, counted."""
    import asyncio
    import logging

    from loom.lsp.purging import FIRST_AFTER_S, purge_daily
    from loom.store.purge import EVERY_S

    ws = app.ws
    tree = ws.create_tree("Daily", root_content="Root.")
    first = ws.add_node(tree, ws.node(tree.root), " Gone at start-up.", ws.human())
    second = ws.add_node(tree, ws.node(tree.root), " Gone a day later.", ws.human())
    run(app, tree, f"→ delete {first.local_id}")
    clock.advance(marks.UNDO_WINDOW_S + 1)
    slept: list[float] = []

    async def sleep(seconds: float) -> None:
        slept.append(seconds)
        if len(slept) == 2:  # the day passes: the second deletion is old by the next run
            assert ws.find_node(first.id) is None and ws.find_node(second.id) is not None
            run(app, tree, f"→ delete {second.local_id}")
            clock.advance(marks.UNDO_WINDOW_S + 1)
        if len(slept) == 3:
            raise asyncio.CancelledError

    caplog.set_level(logging.INFO, logger="loom.lsp.purging")
    with pytest.raises(asyncio.CancelledError):
        asyncio.run(purge_daily(ws, sleep=sleep))
    assert slept == [FIRST_AFTER_S, EVERY_S, EVERY_S]
    assert ws.find_node(second.id) is None
    lines = [r.getMessage() for r in caplog.records if r.name == "loom.lsp.purging"]
    assert lines == ["purge: purged 1 node (1 deleted subtree); rows: edge 1, edge_source 1, "
                     "summary_job 1"] * 2, lines


def test_a_process_that_may_not_purge_says_why_once_and_stops(
        app: Any, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    import asyncio
    import logging

    from loom.lsp.purging import purge_daily

    ws = app.ws
    why = "only the database's owner (loomadmin) purges deleted content; this process " \
          "connects as alice"
    monkeypatch.setattr(type(ws), "purge_refusal", lambda self: why)
    slept: list[float] = []

    async def sleep(seconds: float) -> None:
        slept.append(seconds)

    caplog.set_level(logging.INFO, logger="loom.lsp.purging")
    asyncio.run(purge_daily(ws, sleep=sleep))
    assert len(slept) == 1
    assert [r.getMessage() for r in caplog.records if r.name == "loom.lsp.purging"] == \
        [f"purge: {why}"]


def test_loom_purge_purges_now(tmp_path: Any, capsys: pytest.CaptureFixture[str]) -> None:
    """README: "`loom purge` does it now"."""
    import time

    from loom.cli import main
    from loom.store.db import open_database
    from loom.store.workspace import Workspace

    path = tmp_path / "loom.db"
    ws = Workspace(open_database(path), clock=lambda: time.time() - 31 * DAY)
    tree = ws.create_tree("Old", root_content="Root.")
    node = ws.add_node(tree, ws.node(tree.root), " Long gone.", ws.human())
    reader.delete_subtree(ws, node, ws.human())
    ws.db.close()
    assert main(["--db", str(path), "purge"]) == 0
    assert capsys.readouterr().out == ("✓ purged 1 node (1 deleted subtree); rows: edge 1, "
                                       "edge_source 1, summary_job 1\n")
    assert main(["--db", str(path), "purge"]) == 0
    assert capsys.readouterr().out == ("✓ nothing to purge: nothing was deleted more than 30 "
                                       "days ago\n")


def test_a_purge_the_database_could_not_answer_is_tried_again_soon(
        app: Any, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    """The database out of reach at start-up: one line (no traceback), and another try
    within ten minutes rather than a day later."""
    import asyncio
    import logging

    from loom.lsp.purging import FIRST_AFTER_S, RETRY_S, purge_daily
    from loom.store.orm import pw
    from loom.store.purge import EVERY_S

    ws = app.ws
    calls: list[int] = []
    real = type(ws).purge_expired

    def flaky(self: Any, *args: Any) -> Any:
        calls.append(1)
        if len(calls) == 1:
            raise pw.OperationalError("could not connect to server: Connection refused")
        return real(self, *args)

    monkeypatch.setattr(type(ws), "purge_expired", flaky)
    slept: list[float] = []

    async def sleep(seconds: float) -> None:
        slept.append(seconds)
        if len(slept) == 3:
            raise asyncio.CancelledError

    caplog.set_level(logging.INFO, logger="loom.lsp.purging")
    with pytest.raises(asyncio.CancelledError):
        asyncio.run(purge_daily(ws, sleep=sleep))
    assert slept == [FIRST_AFTER_S, RETRY_S, EVERY_S] and len(calls) == 2
    records = [r for r in caplog.records if r.name == "loom.lsp.purging"]
    assert [r.getMessage() for r in records] == [
        "purge: the database is out of reach; tried again later"]
    assert not any(r.exc_info for r in records)
