"""``Editing`` over a fake host (``fake_host.py``): what the human types reaches the tree
as commits — on save, on starting to type in another node, and once a lock that refused
it goes — and a fake that has drifted from ``Host`` is caught here first."""

from __future__ import annotations

import inspect
from pathlib import Path

import pytest

from loom.lsp.host import Host
from loom.uris import node_uri, tree_uri
from tests.unit.fake_host import FakeHost, Features, features


@pytest.fixture
def f(tmp_path: Path) -> Features:
    return features(tmp_path / "loom.db")


def _path(f: Features, *texts: str) -> tuple[str, list[str]]:
    """A buffer tree whose path holds ``texts`` (root first), opened in the editor: its
    URI and the ids of its nodes."""
    ws = f.host.app.ws
    human = ws.human()
    tree = ws.create_tree("Cats", root_content=texts[0])
    _node, tip = ws.position(human, tree)
    ids = [tip.id]
    for text in texts[1:]:
        tip = ws.add_node(tree, tip, text, human)
        ids.append(tip.id)
    uri = node_uri(tree, tip)
    f.host.open(uri)
    return uri, ids


def test_the_fake_host_has_every_member_of_host() -> None:
    wanted = {name for name, _ in inspect.getmembers(Host) if not name.startswith("_")}
    wanted |= set(Host.__annotations__)
    missing = {name for name in wanted if not hasattr(FakeHost, name)
               and name not in FakeHost.__init__.__code__.co_names}
    assert missing == set()


async def test_a_commit_makes_the_typed_text_a_node(f: Features) -> None:
    uri, ids = _path(f, "Once upon a time.")
    f.host.append(uri, " The cat sat.")
    doc = f.host.docs.open[uri]
    result = await f.editing.commit_and_show(doc)
    assert result.ok, result.text
    ws = f.host.app.ws
    [child] = ws.children(ws.node(ids[0]))
    assert child.content == " The cat sat."
    assert doc.view.tip is not None and doc.view.tip.id == child.id
    assert f.host.client[uri] == "Once upon a time. The cat sat."  # nothing moved
    assert not doc.session.pending() and not doc.session.working_text
    assert (await f.editing.commit_and_show(doc)).text == "✓ nothing to commit"


async def test_typing_in_another_node_commits_the_one_edited_before(f: Features) -> None:
    uri, ids = _path(f, "Once upon a time.", " The cat sat.")
    ws = f.host.app.ws
    tree = ws.trees()[0][0]
    doc = f.host.docs.open[uri]
    f.host.type(uri, 0, 4, "ONCE")  # an edit of the root: pending, nothing commits
    await f.host.settle()
    assert ws.node_count(tree) == 2 and doc.session.pending() == [0]
    at = f.host.client[uri].index("cat")
    f.host.type(uri, at, at + 3, "dog")  # the next node: what is pending commits
    await f.host.settle()
    shown = [ws.node(s.node or "") for s in doc.session.segments]
    assert [n.content for n in shown] == ["ONCE upon a time.", " The dog sat."]
    assert [n.version_of for n in shown] == ids  # versions of the two nodes, kept apart
    assert [ws.node(i).content for i in ids] == ["Once upon a time.", " The cat sat."]
    assert doc.session.pending() == [] and ws.node_count(tree) == 4
    assert f.host.client[uri] == "ONCE upon a time. The dog sat."


async def test_a_save_runs_nothing_twice_and_commits(f: Features) -> None:
    uri, ids = _path(f, "Once upon a time.")
    f.host.append(uri, " The cat sat.")
    answer = await f.editing.save_text(uri, f.host.client[uri], run_commands=True)
    assert answer["ok"] and answer["uri"] == uri, answer
    assert answer["text"] == f.host.client[uri] == "Once upon a time. The cat sat."
    ws = f.host.app.ws
    assert [c.content for c in ws.children(ws.node(ids[0]))] == [" The cat sat."]
    again = await f.editing.save_text(uri, f.host.client[uri], run_commands=True)
    assert again["ok"] and again["message"] == "✓ nothing to commit"
    assert len(ws.children(ws.node(ids[0]))) == 1


async def test_a_read_only_view_refuses_a_save(f: Features) -> None:
    _uri, _ids = _path(f, "Once upon a time.")
    tree = f.host.app.ws.trees()[0][0]
    answer = await f.editing.save_text(tree_uri(tree), "anything", run_commands=True)
    assert not answer["ok"] and answer["message"].startswith("✗ PERMISSION_DENIED")


async def test_a_commit_blocked_by_a_lock_is_kept_and_retried(f: Features) -> None:
    uri, ids = _path(f, "Once upon a time.")
    ws = f.host.app.ws
    bot = ws.subject()
    ws.acquire_turn(ws.node(ids[0]), bot)  # a model is generating from the path's end
    f.host.append(uri, " The cat sat.")
    doc = f.host.docs.open[uri]
    refused = await f.editing.commit_and_show(doc)
    assert not refused.ok and refused.code == "CONFLICT"
    assert uri in f.editing.blocked
    assert ws.children(ws.node(ids[0])) == []
    assert any(m and "will be committed when it yields" in m for _u, m in f.host.statuses)
    assert f.host.client[uri].endswith(" The cat sat.")  # the text stays in the editor
    ws.release_turn(ws.node(ids[0]), bot)
    committed = await f.editing.retry_blocked()
    assert committed == ["Cats"] and uri not in f.editing.blocked
    assert [c.content for c in ws.children(ws.node(ids[0]))] == [" The cat sat."]


async def test_a_commit_blocked_by_a_dead_processs_lock_goes_in_at_the_next_beat(
        f: Features) -> None:
    """A lock whose process was killed (kill -9: it never released it) is freed by the
    editor's heartbeat while a commit waits, and the commit goes in (before: it waited out
    the lock's 120 s)."""
    import socket
    import subprocess
    import sys

    from loom.lsp.features.outage import Outage
    from loom.lsp.features.sync import ChangeSync
    from loom.store.feed import ChangeCursor
    from loom.store.schema import BranchLock

    uri, ids = _path(f, "Once upon a time.")
    ws = f.host.app.ws
    bot = ws.subject()
    ws.acquire_turn(ws.node(ids[0]), bot)  # held by this (live) process
    sync = ChangeSync(f.host, f.editing, None, f.wired.get(Outage))  # type: ignore[arg-type]
    sync.cursor = ChangeCursor(ws)
    f.host.append(uri, " The cat sat.")
    refused = await f.editing.commit_and_show(f.host.docs.open[uri])
    assert not refused.ok and refused.code == "CONFLICT", refused.text
    assert uri in f.editing.blocked
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()  # a pid no process has now: the holder is killed
    BranchLock.update(host=socket.gethostname(), pid=child.pid).execute()
    await sync.beat()  # frees it, logging lock.release …
    await sync.catch_up()  # … which retries the commit
    assert uri not in f.editing.blocked
    assert [c.content for c in ws.children(ws.node(ids[0]))] == [" The cat sat."]
