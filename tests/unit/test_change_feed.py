"""The change feed other processes follow: in order, nothing missed when parallel writers
commit out of order (PostgreSQL), and on PostgreSQL a wake-up as each change commits."""

from __future__ import annotations

import threading

from loom.app import App
from loom.store.feed import ChangeCursor


class Ticks:
    def __init__(self) -> None:
        self.t = 0.0

    def __call__(self) -> float:
        return self.t


def test_cursor_delivers_each_change_once_in_order(app: App) -> None:
    ws = app.ws
    cursor = ws.follow()
    tree = ws.create_tree("feed")
    root = ws.node(tree.root)
    a = ws.add_node(tree, root, "a", ws.human())
    kinds = [c.kind for c in cursor.poll()]
    assert kinds[0] == "tree.create" and kinds[-1] == "node.continuation"
    assert cursor.poll() == []
    ws.add_node(tree, a, "b", ws.human())
    assert [c.kind for c in cursor.poll()] == ["node.continuation"]
    assert cursor.seen == ws.last_change()


def test_cursor_of_one_tree_skips_the_others(app: App) -> None:
    ws = app.ws
    mine, other = ws.create_tree("mine"), ws.create_tree("other")
    cursor = ws.follow(tree=mine.id)
    ws.add_node(other, ws.node(other.root), "elsewhere", ws.human())
    ws.add_node(mine, ws.node(mine.root), "here", ws.human())
    assert [c.tree for c in cursor.poll()] == [mine.id]


def test_a_change_committed_late_is_still_delivered(app: App) -> None:
    """The reader saw seq N+1 before N committed: N comes on a later poll; a hole that never
    fills (a rolled-back transaction) is given up after a while."""
    ws = app.ws
    ticks = Ticks()
    cursor = ChangeCursor(ws, clock=ticks)
    tree = ws.create_tree("late")
    cursor.poll()
    ws.log_change(tree.id, "test.first", "x", None)
    ws.log_change(tree.id, "test.second", "y", None)
    first, second = (c.seq for c in ws.changes_since(cursor.seen))
    # The reader saw the second while the first was not yet committed.
    cursor._seen = second
    cursor.holes = {first: ticks.t}
    assert [c.kind for c in cursor.poll()] == ["test.first"]
    assert cursor.holes == {} and cursor.poll() == []
    cursor.holes = {second + 100: ticks.t}  # never filled
    cursor._seen = second + 101
    ticks.t += ChangeCursor.HOLE_TTL_S + 1
    assert cursor.poll() == [] and cursor.holes == {}


def test_parallel_transactions_committing_out_of_order(pg_url: str) -> None:
    """Two real PostgreSQL transactions: the one that took the lower seq commits last."""
    import psycopg

    from loom.store.db import open_database
    from loom.store.workspace import Workspace

    ws = Workspace(open_database(pg_url))
    cursor = ws.follow()
    slow = psycopg.connect(pg_url)  # a transaction of its own, left open
    slow.execute("INSERT INTO change (tree, kind, entity, created) "
                 "VALUES (NULL, 'test.slow', 'a', 0)")
    ws.log_change(None, "test.fast", "b", None)
    assert [c.kind for c in cursor.poll()] == ["test.fast"]
    assert len(cursor.holes) == 1
    slow.commit()
    slow.close()
    assert [c.kind for c in cursor.poll()] == ["test.slow"]
    assert cursor.holes == {}
    ws.db.close()


def test_listener_wakes_on_commit_not_before(pg_url: str) -> None:
    from loom.store.db import open_database
    from loom.store.workspace import Workspace

    ws = Workspace(open_database(pg_url))
    woken = threading.Event()
    listener = ws.listen(woken.set)
    assert listener is not None
    try:
        assert listener.ready.wait(10)
        with ws.db.atomic():
            ws.log_change(None, "test.inside", "a", None)
            assert not woken.wait(0.3)  # NOTIFY is delivered when the transaction commits
        assert woken.wait(10)
    finally:
        listener.stop()
        ws.db.close()


def test_sqlite_has_no_listener(tmp_path) -> None:  # type: ignore[no-untyped-def]
    from loom.store.db import open_database
    from loom.store.workspace import Workspace

    ws = Workspace(open_database(tmp_path / "loom.db"))
    assert ws.listen(lambda: None) is None
