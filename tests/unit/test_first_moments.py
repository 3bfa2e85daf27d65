"""The first moments of a session (issue 44, item 4): what a path's first open, a command
and a new session wait for. An editor restores its open tabs the moment it has said
``initialized``; the first open answers with what it needs only (the workspace and the
views), and whatever else starts later misses nothing. The times are bench/bench_startup.py's;
these tests check what is loaded and what is seen, never how long anything took."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from loom.demo import create_demo
from loom.uris import node_uri
from tests.unit.fake_host import features

# Loaded by the rest of the warming (pydantic: the arguments' models and the settings;
# the features; the subject model and the key store), none of them by a first open.
HEAVY = ("pydantic", "keyring", "loom.llm.subject", "loom.commands.executor",
         "loom.lsp.features.editing", "loom.lsp.args", "loom.lsp.settings")

FIRST_OPEN = """
import json, sys
from lsprotocol import types as lsp
from pygls.workspace import Workspace
import loom.lsp.server as S

db, uri, heavy = sys.argv[1], sys.argv[2], sys.argv[3].split(",")
ls = S.server
ls.protocol._workspace = Workspace(None, position_encoding="utf-16")  # as initialize makes it
ls.initial_settings = {"database": db}
ls.warm(S.CORE, S.WARM, then=ls.warm_up)  # as initialized starts it
answer = S.text_document_content(ls, lsp.TextDocumentContentParams(uri=uri))
loaded = sorted(m for m in heavy if m in sys.modules)
with ls.reading():  # a read holding the warming, and something waiting for all of it
    ls.warmed()
print(json.dumps({"text": answer.text, "loaded_first": loaded, "ready": ls._ready,
                  "loaded_after": sorted(m for m in heavy if m in sys.modules)}))
"""


def _demo(db: Path) -> tuple[str, str]:
    """The demo in ``db``: the human's path and its text."""
    from loom.app import open_app
    from loom.lsp.documents import OpenDocuments

    app = open_app(db, use_default_subject=False)
    try:
        create_demo(app.ws)
        who = app.ws.human()
        tree = app.ws.trees()[0][0]
        _node, tip = app.ws.position(who, tree)
        uri = node_uri(tree, tip)
        text, _ = OpenDocuments(app.ws, who, "utf-16", "probe").text_for(uri)
        return uri, text
    finally:
        app.ws.db.close()


def test_a_first_open_answers_with_the_workspace_and_the_views_only(tmp_path: Path) -> None:
    """The path's text, answered while the rest of Loom waits to be imported (it had
    waited for all of it: 887 ms on a 2,000-node path right after ``initialized``); the
    rest is loaded after, and a read that holds the warming while something waits for
    all of it does not wait forever."""
    db = tmp_path / "loom.db"
    uri, text = _demo(db)
    out = subprocess.run([sys.executable, "-c", FIRST_OPEN, str(db), uri, ",".join(HEAVY)],
                         capture_output=True, text=True, timeout=120,
                         env={**os.environ, "LOOM_SUMMARIES": "off"})
    assert out.returncode == 0, out.stderr
    got = json.loads(out.stdout.splitlines()[-1])
    assert got["text"] == text
    assert got["loaded_first"] == [] and got["ready"] is False
    assert got["loaded_after"] == sorted(m for m in HEAVY if m != "keyring"
                                         and m != "loom.llm.subject"), got


def test_the_subject_model_is_looked_up_when_a_command_first_needs_one(
        tmp_path: Path, monkeypatch: Any) -> None:
    """Looking the subject model up asks the key store (100-130 ms): a command that needs
    no model never waits for it, and it is asked once."""
    import loom.app
    from loom.app import open_app

    asked: list[int] = []
    monkeypatch.setattr(loom.app, "default_subject", lambda: asked.append(1))
    app = open_app(tmp_path / "loom.db")
    create_demo(app.ws)
    who = app.ws.human()
    actor = app.actor(app.ws.trees()[0][0], who)
    assert app.executor.execute("→ tree", actor).ok
    assert asked == []
    result = app.executor.execute("→ continue", actor)  # no model: refused, and asked
    assert not result.ok and asked == [1]
    app.executor.execute("→ continue", actor)
    assert asked == [1]
    app.ws.db.close()


def test_a_command_line_that_needs_no_model_asks_no_key_store(tmp_path: Path) -> None:
    """``loom do TREE '→ tree'`` looked the subject model up (and imported the key store)
    before it ran anything."""
    db = tmp_path / "loom.db"
    _demo(db)
    probe = ("import sys\nfrom loom.cli import main\n"
             f"code = main(['--db', {str(db)!r}, 'do', 'The House', '→ tree'])\n"
             "print('LOADED', code, sorted(m for m in ('keyring', 'loom.llm.subject', "
             "'loom.llm.config') if m in sys.modules))\n")
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                         timeout=60).stdout
    assert "LOADED 0 []" in out, out


def test_a_change_made_between_the_first_read_and_the_sessions_start_is_followed(
        tmp_path: Path) -> None:
    """The change feed starts where the session's first read did, not where the rest of
    the session starts: a tree made from a terminal in between was never announced, and
    the session's caches never heard of what changed."""
    from loom.app import open_app
    from loom.lsp.features.outage import Outage
    from loom.lsp.features.sync import ChangeSync

    db = tmp_path / "loom.db"
    uri, _text = _demo(db)
    f = features(db)
    f.host.docs.text_for(uri)  # the first read
    other = open_app(db, use_default_subject=False)  # a terminal, meanwhile
    made = other.ws.create_tree("Made in a terminal", "buffer", root_content="It begins.")
    other.ws.db.close()

    async def start() -> list[Any]:
        sync = ChangeSync(f.host, f.editing, None, f.wired.get(Outage))  # type: ignore[arg-type]
        sync.start()  # the rest of the session, later
        try:
            assert sync.cursor is not None
            return sync.cursor.poll()
        finally:
            sync.stop()

    changes = asyncio.run(start())
    assert any(c.tree == made.id for c in changes), changes


def test_a_session_id_is_made_without_python_ulid() -> None:
    """An editor's session opens with a new ULID before its first answer; python-ulid's
    import reads package metadata (12-14 ms). The ULID is the same shape: its time part
    is this millisecond."""
    probe = ("import json, sys, time\nfrom loom.model.ids import new_ulid\n"
             "before = time.time_ns() // 1_000_000\nu = new_ulid()\n"
             "after = time.time_ns() // 1_000_000\n"
             "print(json.dumps([u, before, after, 'ulid' in sys.modules]))\n")
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                         timeout=60, check=True).stdout
    made, before, after, imported = json.loads(out)
    assert imported is False
    from ulid import ULID

    assert len(made) == 26 and str(ULID.from_str(made)) == made
    assert before <= ULID.from_str(made).milliseconds <= after
