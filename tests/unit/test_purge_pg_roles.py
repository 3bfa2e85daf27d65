"""The purge under a team's roles (docs/team.md, "Deleted content"): only the owner's
processes purge; a writer's ``loom purge`` is refused, and so is her language server's
purge; and a deletion a writer's role marks is dated by the server, one dated otherwise
refused, so no one but the owner can date a deletion back into the purge."""

# ruff: noqa: F811 - the team fixture comes from test_pg_roles (see the import)
from __future__ import annotations

import json
import re
import time
from typing import Any

import pytest

from loom.store.db import open_database
from loom.store.workspace import Workspace
from tests.unit.test_pg_roles import _child, _cli, _rows, team  # noqa: F401

MONTH = 31 * 86_400.0


def _commit(url: str, sql: str, *args: Any) -> None:
    import psycopg

    with psycopg.connect(url) as conn:
        conn.execute(sql, args)


def test_only_the_owner_purges_and_no_writer_dates_a_deletion_back(
        team: dict[str, str], capsys: Any) -> None:
    alice = ("--db", team["alice"])
    owner = ("--db", team["owner"], "--participant", "human")
    for line in ('→ respond root "alice wrote this"', '→ respond root "and this one stays"'):
        assert _cli(capsys, *alice, "do", "Shared", line)[0] == 0
    mine, stays = _child(team, "alice wrote"), _child(team, "and this one")
    assert _cli(capsys, *alice, "do", "Shared", f"→ delete {mine}")[0] == 0
    assert _cli(capsys, *alice, "new", "Alice's", "--text", "Hers.")[0] == 0
    # a writer's Loom does not purge
    code, out = _cli(capsys, *alice, "purge")
    assert code == 1 and re.match(r"✗ PERMISSION_DENIED: only the database's owner \(\w+\) "
                                  r"purges deleted content; this process connects as alice\n"
                                  r"  hint: run it as the owner", out), out
    ws = Workspace(open_database(team["alice"]))
    try:
        assert "connects as alice" in (ws.purge_refusal() or "")
    finally:
        ws.db.close()
    # nor dates a deletion back: a mark or an archived tree dated other than now is refused
    import psycopg

    forged = json.dumps({"deleted": {"at": 0, "by": "x", "pruned": False, "nodes": 1}})
    with pytest.raises(psycopg.errors.InsufficientPrivilege, match="off the database's clock"):
        _commit(team["alice"], "UPDATE node SET pruned = true, extra = %s WHERE local_id = %s",
                forged, stays)
    with pytest.raises(psycopg.errors.InsufficientPrivilege, match="off the database's clock"):
        _commit(team["alice"], "UPDATE tree SET archived = true, updated = 0 WHERE title = %s",
                "Alice's")
    assert _rows(team["owner"], "SELECT pruned FROM node WHERE local_id = %s", stays) == [
        (False,)]
    # deleted as Loom deletes, the times her role writes are the server's
    assert _cli(capsys, *alice, "do", "Shared", f"→ delete {stays}")[0] == 0
    assert _cli(capsys, *alice, "do", "Alice's", '→ delete tree:"Alice\'s"')[0] == 0
    now = time.time()
    (extra,), = _rows(team["owner"], "SELECT extra FROM node WHERE local_id = %s", stays)
    assert json.loads(extra)["deleted"]["at"] > now - 600, extra
    (updated,), = _rows(team["owner"], "SELECT updated FROM tree WHERE title = 'Alice''s'")
    assert updated > now - 600
    code, out = _cli(capsys, *owner, "purge")
    assert (code, out.strip()) == (0, "✓ nothing to purge: nothing was deleted more than 30 "
                                      "days ago"), out
    assert _rows(team["owner"], "SELECT count(*) FROM node WHERE local_id IN (%s, %s)",
                 mine, stays) == [(2,)]
    # a month on, the owner's purge takes all three
    ws = Workspace(open_database(team["owner"]), clock=lambda: time.time() + MONTH)
    try:
        assert ws.purge_refusal() is None
        purged = ws.purge_expired()
    finally:
        ws.db.close()
    assert (purged.subtrees, purged.trees) == (2, 1), purged.line()
    assert _rows(team["owner"], "SELECT count(*) FROM node WHERE local_id IN (%s, %s)",
                 mine, stays) == [(0,)]
    assert _rows(team["owner"], "SELECT title FROM tree") == [("Shared",)]


def test_an_older_teams_database_gets_the_deletion_time_guard(pg: Any, team: dict[str, str]
                                                             ) -> None:
    """A team whose roles an older Loom set up (roles marker 2): the owner's Loom, as it
    starts, re-applies the grants and guards, the deletion-time guard among them."""
    owner = team["owner"]
    _commit(owner, "DROP TRIGGER loom_node_deleted ON node; DROP TRIGGER loom_tree_deleted "
            "ON tree; UPDATE meta SET value = '2' WHERE key = 'team_roles'")
    open_database(owner).close()
    assert _rows(owner, "SELECT tgrelid::regclass::text, tgname FROM pg_trigger WHERE tgname "
                 "IN ('loom_node_deleted', 'loom_tree_deleted', 'loom_deleted_at') ORDER BY 1"
                 ) == [("node", "loom_node_deleted"), ("tree", "loom_tree_deleted")]
