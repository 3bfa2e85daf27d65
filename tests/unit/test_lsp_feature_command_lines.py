"""``CommandLines`` over a fake host (``fake_host.py``): a ``→`` line the human typed runs
once, through the executor, and leaves the buffer; one that fails stays, with its
diagnostic, and is not run again until it changes."""

from __future__ import annotations

from pathlib import Path

import pytest

from loom.uris import node_uri
from tests.unit.fake_host import Features, features


@pytest.fixture
def f(tmp_path: Path) -> Features:
    return features(tmp_path / "loom.db")


def _open(f: Features) -> tuple[str, str]:
    ws = f.host.app.ws
    tree = ws.create_tree("Cats", root_content="Once upon a time.")
    _node, tip = ws.position(ws.human(), tree)
    uri = node_uri(tree, tip)
    f.host.open(uri)
    return uri, tip.local_id


async def test_a_command_line_runs_once_and_leaves_the_buffer(f: Features) -> None:
    uri, root = _open(f)
    ws = f.host.app.ws
    tree = ws.trees()[0][0]
    f.host.append(uri, f'\n→ annotate {root} "where it starts"')
    doc = f.host.docs.open[uri]
    [result] = await f.command_lines.run_all(doc)
    assert result.ok, result.text
    note = ws.node(result.data["created"][0])
    assert note.content == "where it starts" and note.kind == "annotation"
    assert f.host.client[uri] == "Once upon a time."  # the line is gone
    assert f.host.shown == [result]
    assert await f.command_lines.run_all(doc) == []  # nothing left to run
    assert ws.node_count(tree) == 2


async def test_a_failed_line_stays_with_its_diagnostic(f: Features) -> None:
    uri, _root = _open(f)
    f.host.append(uri, "\n→ view zzzz")
    doc = f.host.docs.open[uri]
    [result] = await f.command_lines.run_all(doc)
    assert not result.ok and result.code == "NOT_FOUND"
    assert f.host.client[uri] == "Once upon a time.\n→ view zzzz"
    [diag] = f.published[-1].diagnostics
    assert diag.message.startswith("✗ NOT_FOUND") and diag.range.start.line == 1
    assert await f.command_lines.run_all(doc) == []  # unchanged: not run again
