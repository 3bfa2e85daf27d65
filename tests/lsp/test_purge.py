"""The language server keeps README's promise "a soft delete: → undelete within 30 days,
then purged for good": started on a workspace where one subtree was deleted 30 days and a
minute ago and another 29 days 23 hours ago, it purges the first shortly after start-up
(nothing of it left in the file) and keeps the second, which the editor's undelete
(``loom.act``) brings back; the first's undelete is refused. As VS Code and Neovim."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest

from tests.lsp.conftest import Editor, open_demo, sql
from tests.lsp.test_writer import run

DAY = 86_400.0


@pytest.fixture
def db(tmp_path: Path) -> Path:
    from loom.demo import create_demo
    from loom.store import reader
    from loom.store.db import open_database
    from loom.store.workspace import Workspace

    path = tmp_path / "loom.db"
    ws = Workspace(open_database(path))
    tree = create_demo(ws)
    human = ws.human()
    on_path = {n.id for n in ws.path(ws.position(human, tree)[1])}
    aside = [c for n in ws.path(ws.position(human, tree)[1]) for c in ws.children(n)
             if c.id not in on_path]
    now = time.time()
    for node, age in zip(aside[:2], (30 * DAY + 60, 29 * DAY + 23 * 3600), strict=True):
        ws.clock = lambda age=age: now - age
        reader.delete_subtree(ws, node, human)
    ws.db.close()
    return path


def _deleted(db: Path) -> list[tuple[str, str, float]]:
    """(id, localId, when) of the deleted subtree roots, oldest first."""
    rows = sql(db, "SELECT id, local_id, extra FROM node WHERE extra LIKE '%\"deleted\"%'")
    return sorted(((i, lid, json.loads(x)["deleted"]["at"]) for i, lid, x in rows),
                  key=lambda r: r[2])


async def test_the_server_purges_what_was_deleted_30_days_ago_and_keeps_the_rest(
        editor: Editor) -> None:
    db = editor.db
    assert db is not None
    (old, old_label, _), (recent, recent_label, _) = _deleted(db)
    below = sql(db, "SELECT count(*) FROM edge_source WHERE node = ?", old)[0][0]
    await editor.wait_for(lambda: not sql(db, "SELECT 1 FROM node WHERE id = ?", old),
                          timeout=60)
    assert sql(db, "SELECT count(*) FROM edge_source WHERE node = ? OR target = ?",
               old, old) == [(0,)], below
    assert sql(db, "SELECT 1 FROM node WHERE id = ?", recent)
    uri = await open_demo(editor)
    res: Any = await run(editor, "loom.act", {"uri": uri, "node": recent_label,
                                              "action": "undelete"})
    assert res["ok"] and res["message"].startswith("✓ restored ["), res
    res = await run(editor, "loom.act", {"uri": uri, "node": old_label, "action": "undelete"})
    assert not res["ok"] and res["message"].startswith("✗ NOT_FOUND"), res
