"""Processes writing one database lose nothing; a killed writer leaves it consistent — on
SQLite and on PostgreSQL (where writers really run in parallel)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

from loom.store.backend import is_url
from loom.store.db import open_database
from loom.store.schema import Change, Edge, EdgeSource, Node
from loom.store.workspace import Workspace

WRITER = textwrap.dedent("""
    import sys
    from loom.store.db import open_database
    from loom.store.workspace import Workspace
    ws = Workspace(open_database(sys.argv[1]))
    tree = ws.find_tree("shared")
    me = ws.ensure_participant(sys.argv[2], "human", "human", ["loom_aware", "loom_write"])
    parent = ws.node(tree.root)
    for i in range(int(sys.argv[3])):
        node = ws.add_node(tree, parent, f"{sys.argv[2]} {i}", me)
        if i % 3 == 0:
            parent = node
    print("done", flush=True)
""")

KILLED = textwrap.dedent("""
    import sys
    from loom.store.db import open_database
    from loom.store.workspace import NewNode, Workspace
    ws = Workspace(open_database(sys.argv[1]))
    tree = ws.find_tree("shared")
    root = ws.node(tree.root)
    specs = [NewNode(key=str(i), parent=str(i - 1) if i else None, content="x" * 200,
                     author="human") for i in range(200_000)]
    print("writing", flush=True)
    ws.bulk_add(tree, root, specs, chunk=500)
    print("finished", flush=True)
""")


def _consistent(db_path: str | Path) -> tuple[int, int]:
    db = open_database(db_path)
    if not is_url(db_path):  # PostgreSQL checks references as it writes
        assert db.execute_sql("PRAGMA integrity_check").fetchone()[0] == "ok"
        assert db.execute_sql("PRAGMA foreign_key_check").fetchall() == []
    nodes = Node.select().count()
    # every non-root node has its edge and its source: nothing half-written
    assert Edge.select().count() == nodes - 1
    assert EdgeSource.select().count() == nodes - 1
    return nodes, Change.select().count()


def test_two_writers_lose_nothing(own_db_target: str | Path) -> None:
    db_path = own_db_target
    ws = Workspace(open_database(db_path))
    ws.create_tree("shared")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    procs = [subprocess.Popen([sys.executable, "-c", WRITER, str(db_path), name, "150"],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, text=True)
             for name in ("alice", "bob")]
    for p in procs:
        out, err = p.communicate(timeout=120)
        assert p.returncode == 0, err
        assert out.strip() == "done"
    nodes, _ = _consistent(db_path)
    assert nodes == 1 + 300
    local_ids = [n.local_id for n in Node.select(Node.local_id)]
    assert len(set(local_ids)) == len(local_ids)
    for name in ("alice", "bob"):
        contents = {n.content for n in Node.select().where(Node.content.startswith(name))}
        assert contents == {f"{name} {i}" for i in range(150)}
    assert Change.select().where(Change.kind == "node.continuation").count() == 300


def test_killed_writer_leaves_consistent_database(own_db_target: str | Path) -> None:
    db_path = own_db_target
    ws = Workspace(open_database(db_path))
    ws.create_tree("shared")
    before, changes_before = Node.select().count(), Change.select().count()
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    p = subprocess.Popen([sys.executable, "-c", KILLED, str(db_path)], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, env=env, text=True)
    assert p.stdout is not None
    assert p.stdout.readline().strip() == "writing"
    time.sleep(1.5)  # well inside the insert of 200k nodes
    p.send_signal(signal.SIGKILL)
    p.wait(timeout=30)
    nodes, changes = _consistent(db_path)
    assert (nodes, changes) == (before, changes_before)
    # and the database still takes writes
    ws2 = Workspace(open_database(db_path))
    tree = ws2.find_tree("shared")
    ws2.add_node(tree, ws2.node(tree.root), "after the crash", ws2.human())
    assert Node.select().count() == before + 1


FEED = textwrap.dedent("""
    import sys, time
    from loom.store.db import open_database
    from loom.store.workspace import Workspace
    ws = Workspace(open_database(sys.argv[1]))
    cursor = ws.follow(0)
    seen = []
    print("following", flush=True)
    while True:
        got = [c.entity for c in cursor.poll() if c.kind == "node.continuation"]
        seen += got
        if len(seen) >= int(sys.argv[2]):
            break
        time.sleep(0.02)
    print(" ".join(seen), flush=True)
""")


def test_eight_writers_in_one_tree_lose_and_duplicate_nothing(pg: object) -> None:
    """8 processes × 500 nodes into one tree, half of them under the same few parents, on
    PostgreSQL: every node arrives exactly once, localIds stay unique, sibling order is
    dense, and a reader following the change log meanwhile sees each node exactly once."""
    from tests.conftest import new_pg_database

    url = new_pg_database(pg)  # type: ignore[arg-type]
    ws = Workspace(open_database(url))
    ws.create_tree("shared")
    writers, each = 8, 500
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    follower = subprocess.Popen([sys.executable, "-c", FEED, url, str(writers * each)],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env,
                                text=True)
    assert follower.stdout is not None and follower.stdout.readline().strip() == "following"
    procs = [subprocess.Popen([sys.executable, "-c", WRITER, url, f"w{k}", str(each)],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env,
                              text=True) for k in range(writers)]
    for p in procs:
        out, err = p.communicate(timeout=600)
        assert p.returncode == 0, err
    out, err = follower.communicate(timeout=120)
    assert follower.returncode == 0, err
    nodes, _ = _consistent(url)
    assert nodes == 1 + writers * each
    rows = ws.sql("SELECT id, local_id, content FROM node WHERE kind = 'continuation'").fetchall()
    assert len({r[1] for r in rows}) == len(rows)  # localIds unique in the tree
    assert sorted(r[2] for r in rows) == sorted(f"w{k} {i}" for k in range(writers)
                                                for i in range(each))
    # each parent's children are numbered 0..n-1 without gaps or repeats
    for parent, orders in ws.sql(
            "SELECT s.node, string_agg(e.sibling_order::text, ',' ORDER BY e.sibling_order) "
            "FROM edge e JOIN edge_source s ON s.target = e.target GROUP BY s.node"):
        numbers = [int(x) for x in orders.split(",")]
        assert numbers == list(range(len(numbers))), parent
    followed = out.split()
    assert len(followed) == len(set(followed)) == writers * each
    assert set(followed) == {r[0] for r in rows}
    ws.db.close()

