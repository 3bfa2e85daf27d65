"""Trees, nodes, paths and the change log are repositories like the others
(``store/trees.py``, ``store/nodes.py``, ``store/paths.py``, ``store/change_log.py``): each
of their methods is on ``Workspace`` under its own name and parameters, and the workspace's
method hands the call on to it."""

from __future__ import annotations

import inspect
from pathlib import Path

import pytest

from loom.store.change_log import ChangeLog
from loom.store.db import open_database
from loom.store.nodes import Nodes
from loom.store.paths import Paths
from loom.store.repository import Repository
from loom.store.trees import Trees
from loom.store.workspace import Workspace

REPOSITORIES: tuple[type[Repository], ...] = (Trees, Nodes, Paths, ChangeLog)
#: What only another repository calls: a new tree's root (``Trees.create_tree``'s).
NOT_ON_THE_FACADE = {"insert_root"}


def _public(repository: type[Repository]) -> list[str]:
    return [name for name, value in vars(repository).items()
            if inspect.isfunction(value) and not name.startswith("_")
            and name not in NOT_ON_THE_FACADE]


def _parameters(function: object) -> list[tuple[str, object, object]]:
    return [(p.name, p.kind, p.default)
            for p in inspect.signature(function).parameters.values()]  # type: ignore[arg-type]


@pytest.mark.parametrize("repository", REPOSITORIES, ids=lambda r: r.__name__)
def test_every_method_is_on_the_facade_as_it_is(repository: type[Repository]) -> None:
    methods = _public(repository)
    assert methods
    for name in methods:
        facade = getattr(Workspace, name, None)
        assert facade is not None, f"Workspace.{name} is missing"
        assert _parameters(facade) == _parameters(getattr(repository, name)), name


@pytest.mark.parametrize("repository", REPOSITORIES, ids=lambda r: r.__name__)
def test_the_facade_hands_each_call_to_its_repository(
        repository: type[Repository], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    ws = Workspace(open_database(tmp_path / "loom.db"))
    owner = next(r for r in ws._repositories if type(r) is repository)
    for name in _public(repository):
        seen: list[tuple[tuple[object, ...], dict[str, object]]] = []

        def record(*args: object, _seen: list = seen, **kwargs: object) -> str:
            _seen.append((args, kwargs))
            return "answer"

        monkeypatch.setattr(owner, name, record)
        parameters = list(inspect.signature(getattr(Workspace, name)).parameters.values())[1:]
        args = [f"<{p.name}>" for p in parameters
                if p.kind is p.POSITIONAL_OR_KEYWORD and p.default is p.empty]
        keywords = {p.name: f"<{p.name}>" for p in parameters
                    if p.kind is p.KEYWORD_ONLY and p.default is p.empty}
        answer = getattr(ws, name)(*args, **keywords)
        assert len(seen) == 1, name
        assert list(seen[0][0])[:len(args)] == args, name
        assert {k: seen[0][1].get(k) for k in keywords} == keywords, name
        if inspect.signature(getattr(Workspace, name)).return_annotation != "None":
            assert answer == "answer", name
