"""Locks for every write on a branch (seed 001, SPEC-NOTES decision 10): while one
participant generates on a branch, another's writes there are ``✗ CONFLICT`` and write
nothing; other branches stay fully parallel."""

from __future__ import annotations

import pytest

from loom.commands import syntax
from loom.commands.context import Actor


@pytest.fixture
def world(app):  # type: ignore[no-untyped-def]
    ws = app.ws
    tree = ws.create_tree("Locks", root_content="Root.")
    human = ws.human()
    bot = ws.ensure_participant("collaborator", "model", "collaborator",
                                ("loom_aware", "loom_write", "loom_generate"))
    root = ws.node(tree.root)
    a = ws.add_node(tree, root, " A.", human)
    a2 = ws.add_node(tree, a, " A2.", human)
    b = ws.add_node(tree, root, " B.", human)
    ws.acquire_turn(a2, bot)  # the collaborator is generating from a2
    return app, tree, human, {"root": root, "a": a, "a2": a2, "b": b}


def _run(app, tree, who, cmd):  # type: ignore[no-untyped-def]
    before = app.ws.node_count(tree)
    result = app.executor.execute(cmd, Actor(who, tree))
    return result, app.ws.node_count(tree) - before


@pytest.mark.parametrize("make", [
    lambda n: syntax.Respond(node=n["a2"].local_id, content="mine"),
    lambda n: syntax.Annotate(node=n["a2"].local_id, content="a note"),
    lambda n: syntax.Annotate(node=n["a"].local_id, content="a note above"),
    lambda n: syntax.Edit(node=n["a"].local_id, content=" A, edited."),
    lambda n: syntax.Commit(text=" typed", after=n["a2"].id),
    lambda n: syntax.Commit(versions=(syntax.VersionEdit(node=n["a2"].id, content=" A2!"),)),
], ids=["respond", "annotate", "annotate-above", "edit-above", "commit-text", "commit-edit"])
def test_writes_on_the_locked_branch_conflict(world, make) -> None:  # type: ignore[no-untyped-def]
    app, tree, human, n = world
    result, made = _run(app, tree, human, make(n))
    assert not result.ok and result.code == "CONFLICT", result.text
    assert "collaborator is generating" in result.text and "hint: retry" in result.text
    assert made == 0


@pytest.mark.parametrize("make", [
    lambda n: syntax.Respond(node=n["b"].local_id, content="mine"),
    lambda n: syntax.Annotate(node=n["b"].local_id, content="a note"),
    lambda n: syntax.Edit(node=n["b"].local_id, content=" B, edited."),
    lambda n: syntax.Commit(text=" typed", after=n["b"].id),
    lambda n: syntax.Respond(node=n["root"].local_id, content="a new branch"),
], ids=["respond", "annotate", "edit", "commit", "new-branch-from-root"])
def test_other_branches_stay_parallel(world, make) -> None:  # type: ignore[no-untyped-def]
    app, tree, human, n = world
    result, made = _run(app, tree, human, make(n))
    assert result.ok, result.text
    assert made == 1  # the write happened: one node (an edit's version, a commit's text)


def test_the_holder_writes_and_after_release_everyone_does(world) -> None:  # type: ignore[no-untyped-def]
    app, tree, human, n = world
    bot = app.ws.participant("collaborator")
    result, made = _run(app, tree, bot, syntax.Annotate(node=n["a2"].local_id, content="mine"))
    assert result.ok and made == 1
    app.ws.release_turn(n["a2"], bot)
    assert "lock.release" in [c.kind for c in app.ws.changes_since(0)]  # editors retry on it
    result, made = _run(app, tree, human, syntax.Respond(node=n["a2"].local_id, content="now"))
    assert result.ok and made == 1


def test_an_expired_lock_blocks_nobody(world, clock) -> None:  # type: ignore[no-untyped-def]
    app, tree, human, n = world
    clock.advance(121)  # a crashed holder never blocks a branch forever
    result, made = _run(app, tree, human, syntax.Respond(node=n["a2"].local_id, content="now"))
    assert result.ok and made == 1


def _held_by(app, node, host: str, pid: int) -> None:  # type: ignore[no-untyped-def]
    from loom.store.schema import BranchLock

    BranchLock.update(host=host, pid=pid).where(BranchLock.node == node.id).execute()


def _dead_pid() -> int:
    import subprocess
    import sys

    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid  # (reaped: no process has it now)


def test_a_lock_whose_process_died_blocks_nobody(world) -> None:  # type: ignore[no-untyped-def]
    """docs/agent.md: a crashed exploration blocks nothing. A lock's process is recorded;
    on this machine a dead pid frees it at once (before: up to its 120 s expiry)."""
    import socket

    app, tree, human, n = world
    _held_by(app, n["a2"], socket.gethostname(), _dead_pid())
    result, made = _run(app, tree, human, syntax.Respond(node=n["a2"].local_id, content="mine"))
    assert result.ok and made == 1, result.text
    assert app.ws.reap_dead_locks(tree.id) == 1  # freed, lock.release logged
    assert not app.ws.foreign_locks(tree.id, human)
    app.ws.acquire_turn(n["a2"], human)  # and it can be taken


def test_a_lock_on_another_machine_is_free_once_its_session_is_silent(world) -> None:  # type: ignore[no-untyped-def]
    from loom.store.schema import EditorSession

    app, tree, human, n = world
    ws = app.ws
    _held_by(app, n["a2"], "another-host", 4242)
    # no session of that process known: its lock waits for its expiry, as before v15
    assert ws.foreign_locks(tree.id, human)
    EditorSession.create(id="s1", participant=human.id, host="another-host", pid=4242,
                         started=ws.clock(), heartbeat=ws.clock())
    assert ws.foreign_locks(tree.id, human)  # its session beats: alive
    EditorSession.update(heartbeat=ws.clock() - 60).where(EditorSession.id == "s1").execute()
    assert not ws.foreign_locks(tree.id, human)  # silent for a minute: gone
    assert ws.reap_dead_locks() == 1
