"""Workspace as the façade of the store's repositories, which every caller keeps using:
every repository method is reachable through Workspace under its own name and parameters,
a replaced clock reaches every repository, and the rows a path is made of declare the
columns they carry."""

from __future__ import annotations

import inspect
from pathlib import Path

import pytest

from loom.store.db import open_database
from loom.store.documents import Documents
from loom.store.participants import Participants
from loom.store.positions import Positions
from loom.store.repository import Repository
from loom.store.schema import EditorSession, Node, SummaryJob
from loom.store.sessions import Sessions
from loom.store.summary_queue import SummaryQueue
from loom.store.workspace import NodeRow, Workspace

REPOSITORIES: tuple[type[Repository], ...] = (Participants, Sessions, Positions, SummaryQueue,
                                              Documents)


def _parameters(function: object) -> list[tuple[str, object, object]]:
    return [(p.name, p.kind, p.default)
            for p in inspect.signature(function).parameters.values()]  # type: ignore[arg-type]


@pytest.mark.parametrize("repository", REPOSITORIES, ids=lambda r: r.__name__)
def test_every_repository_method_is_on_the_facade_as_it_is(
        repository: type[Repository]) -> None:
    methods = [name for name, value in vars(repository).items()
               if inspect.isfunction(value) and not name.startswith("_")]
    assert methods
    for name in methods:
        facade = getattr(Workspace, name, None)
        assert facade is not None, f"Workspace.{name} is missing"
        assert _parameters(facade) == _parameters(getattr(repository, name)), name


@pytest.fixture
def ws(tmp_path: Path) -> Workspace:
    return Workspace(open_database(tmp_path / "loom.db"))


def test_a_replaced_clock_reaches_every_repository(ws: Workspace) -> None:
    ws.clock = lambda: 1_234.5
    bot = ws.ensure_participant("bot", "model", "collaborator", ())
    assert bot.created == 1_234.5  # participants
    session = ws.open_session(bot)
    assert EditorSession.get_by_id(session).started == 1_234.5  # sessions
    tree = ws.create_tree("T", "buffer", root_content="Root.")
    root = ws.node(tree.root)
    ws.set_position(bot, tree, root)
    assert [p.name for p, _ in ws.active_elsewhere(tree, ws.human(), within_s=1)] == ["bot"]
    assert ws.enqueue_summary("tree", tree.id, tree.id)  # the summary queue
    assert SummaryJob.get(SummaryJob.entity == tree.id).created == 1_234.5
    assert ws.create_document("notes").created == 1_234.5  # documents
    ws.clock = lambda: 2_000.0
    assert ws.active_elsewhere(tree, ws.human(), within_s=1) == []  # positions
    assert ws.create_document("later").created == 2_000.0
    ws.summary_queue_limit = 1
    assert not ws.enqueue_summary("node", root.id, tree.id)  # full: only urgent work
    assert ws.enqueue_summary("node", root.id, tree.id, priority=0)


def test_path_rows_declare_the_node_columns_they_carry(ws: Workspace) -> None:
    columns = tuple(f.column_name for f in Node._meta.sorted_fields)
    assert tuple(NodeRow.__annotations__) == columns == NodeRow._fields
    tree = ws.create_tree("T", "buffer", root_content="Root.")
    child = ws.add_node(tree, ws.node(tree.root), " More.", ws.human())
    path = ws.path(child)
    assert [type(n) for n in path] == [NodeRow, NodeRow]
    assert [n.id for n in path] == [tree.root, child.id]
