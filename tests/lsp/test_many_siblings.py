"""A node with thousands of siblings: ``loom/nodeInfo`` and
``loom.siblings`` answer a page of them with the total and where the next page starts,
and a slow ``loom/nodeInfo`` never holds up another request."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path
from typing import Any

import pytest
import pytest_lsp
from lsprotocol import types as lsp
from pytest_lsp import ClientServerConfig, LanguageClient

from tests.lsp.conftest import NO_MODEL_ENV, Editor, make_demo, open_demo, sql, start_session

ADDED = 3_000


@pytest.fixture
def db(tmp_path: Path) -> Path:
    """The demo, with 3,000 more model siblings of the human's position (made three to a
    request, as ``continue n:3`` makes them)."""
    from loom.store.db import open_database
    from loom.store.workspace import NewNode, Workspace

    path = tmp_path / "loom.db"
    make_demo(path)
    ws = Workspace(open_database(path))
    (here_id,) = sql(path, "SELECT p.node FROM position p JOIN participant h "
                           "ON h.id = p.participant WHERE h.name = 'human'")[0]
    here = ws.node(here_id)
    parent = ws.node(here.parent)
    tree = ws.tree(here.tree_id)
    built = ws.bulk_add(tree, parent, [
        NewNode(f"s{i}", None, f" and then, the {i}th time, the door.", "subject", "model")
        for i in range(ADDED)])
    ws.insert_rows("generation", ("id", "node", "provider", "model", "params", "usage",
                                  "completion_index", "created"),
                   [(f"g{i}", built[f"s{i}"].id, "test", "many-model", "{}", "{}", i % 3,
                     1_700_000_000.0 + i // 3) for i in range(ADDED)])
    ws.db.close()
    return path


def tree_and_node(db: Path) -> tuple[str, str, str, int]:
    """The demo tree's id, the position's localId, its parent's, and how many
    continuations the parent has."""
    tree, here, parent, parent_id = sql(
        db, "SELECT p.tree, n.local_id, par.local_id, par.id FROM position p JOIN "
            "participant h ON h.id = p.participant JOIN node n ON n.id = p.node "
            "JOIN node par ON par.id = n.parent WHERE h.name = 'human'")[0]
    (total,) = sql(db, "SELECT count(*) FROM edge_source s JOIN edge e ON e.target = "
                       "s.target JOIN node n ON n.id = s.target WHERE s.node = ? AND "
                       "e.kind = 'continuation' AND NOT n.pruned", parent_id)[0]
    return tree, here, parent, total


async def test_node_info_pages_the_siblings_and_the_children(editor: Editor) -> None:
    tree, here, parent, total = tree_and_node(editor.db)  # type: ignore[arg-type]
    assert total > ADDED
    info = await editor.request("loom/nodeInfo", {"tree": tree})
    assert info["node"]["localId"] == here
    assert info["node"]["siblingCount"] == total
    assert len(info["siblings"]) == 100
    assert (info["siblingsTotal"], info["siblingsOffset"], info["siblingsNext"]) == \
        (total, 0, 100)
    assert [s["siblingIndex"] for s in info["siblings"]] == list(range(1, 101))
    assert all(s["siblingCount"] == total for s in info["siblings"])
    assert info["path"][-1]["localId"] != here or len(info["path"]) >= 2
    # the next page follows on, without overlap
    second = await editor.request("loom/nodeInfo", {"tree": tree,
                                                    "siblingsOffset": info["siblingsNext"]})
    assert [s["siblingIndex"] for s in second["siblings"]] == list(range(101, 201))
    assert not {s["id"] for s in second["siblings"]} & {s["id"] for s in info["siblings"]}
    # the last page is short and has no next; every sibling is on exactly one page
    last = await editor.request("loom/nodeInfo", {"tree": tree, "siblingsOffset": total - 7,
                                                  "limit": 50})
    assert len(last["siblings"]) == 7 and last["siblingsNext"] is None
    seen: set[str] = set()
    offset: int | None = 0
    while offset is not None:
        page = await editor.request("loom/nodeInfo", {"tree": tree, "limit": 1000,
                                                      "siblingsOffset": offset})
        assert len(page["siblings"]) <= 1000
        seen |= {s["id"] for s in page["siblings"]}
        offset = page["siblingsNext"]
    assert len(seen) == total and info["node"]["id"] in seen
    # the parent's children are the same many, paged the same way
    up = await editor.request("loom/nodeInfo", {"tree": tree, "node": parent,
                                                "childrenOffset": 2_000})
    assert up["childrenTotal"] == total and up["childrenOffset"] == 2_000
    assert [c["siblingIndex"] for c in up["children"]] == list(range(2_001, 2_101))
    assert up["childrenNext"] == 2_100
    # limit 0: the path and the totals only (what the Loom view asks for a tree)
    bare = await editor.request("loom/nodeInfo", {"tree": tree, "limit": 0})
    assert bare["siblings"] == [] and bare["siblingsTotal"] == total
    assert [p["id"] for p in bare["path"]] == [p["id"] for p in info["path"]]
    # a page size beyond the most is refused with Loom's own answer
    bad = await editor.request("loom/nodeInfo", {"tree": tree, "limit": 100_000})
    assert bad["ok"] is False and "limit" in bad["error"]


async def test_a_small_family_is_answered_whole(editor: Editor) -> None:
    trees = await editor.request("loom/trees", {})
    info = await editor.request("loom/nodeInfo", {"tree": trees[0]["id"], "node": "root"})
    assert info["siblingsTotal"] == 1 and info["siblingsNext"] is None
    assert len(info["children"]) == info["childrenTotal"] and info["childrenNext"] is None


async def siblings(editor: Editor, uri: str, **args: Any) -> dict[str, Any]:
    res = await editor.client.workspace_execute_command_async(lsp.ExecuteCommandParams(
        command="loom.siblings", arguments=[{"uri": uri, **args}]))
    return res if isinstance(res, dict) else dict(res._asdict())  # type: ignore[no-any-return]


async def test_the_sibling_picker_pages(editor: Editor) -> None:
    from tests.lsp.conftest import plain

    uri = await open_demo(editor)
    _tree, here, _parent, total = tree_and_node(editor.db)  # type: ignore[arg-type]
    first = plain(await siblings(editor, uri, node=here))
    assert first["ok"] is True, first
    data = first["data"]
    assert (data["total"], data["offset"], data["next"]) == (total, 0, 100)
    assert len(data["siblings"]) == 100
    assert [s["index"] for s in data["siblings"]] == list(range(1, 101))
    assert all(s["count"] == total for s in data["siblings"])
    assert first["message"].startswith(f"✓ {total} siblings of [") and "1–100" in \
        first["message"]
    k = data["currentIndex"]
    assert 1 <= k <= total
    # the page holding the current one marks it, and only it
    page = plain(await siblings(editor, uri, node=here, offset=k - 1, limit=5))["data"]
    assert page["siblings"][0]["current"] is True and page["siblings"][0]["localId"] == here
    assert not any(s["current"] for s in page["siblings"][1:])
    # the added ones were made three to a request by one model
    tail = plain(await siblings(editor, uri, node=here, offset=total - 3))["data"]
    assert len(tail["siblings"]) == 3 and tail["next"] is None
    assert {s["model"] for s in tail["siblings"]} == {"many-model"}
    assert {s["request"] for s in tail["siblings"]} == {3}


SLOW_SERVER = [sys.executable, "-c",
               "import runpy, sys, time\n"
               "import loom.lsp.features.lookup as lookup\n"
               "real = lookup.node_info\n"
               "def slow(*a, **k):\n"
               "    time.sleep(4)\n"
               "    return real(*a, **k)\n"
               "lookup.node_info = slow\n"
               "sys.argv = ['loom', 'serve']\n"
               "runpy.run_module('loom.cli', run_name='__main__')\n"]


@pytest_lsp.fixture(config=ClientServerConfig(server_command=SLOW_SERVER,
                                              server_env=NO_MODEL_ENV),
                    params=["visual_studio_code"])
async def slow_client(request: Any, lsp_client: LanguageClient, db: Path):  # type: ignore[no-untyped-def]
    async for _ in start_session(request, lsp_client, db):
        yield


async def test_a_slow_node_info_holds_up_no_other_request(slow_client: LanguageClient
                                                          ) -> None:
    """A ``loom/nodeInfo`` whose work takes seconds (here made slow on purpose): a hover
    and a status sent after it answer while it is still in flight."""
    editor: Editor = slow_client.editor  # type: ignore[attr-defined]
    uri = await open_demo(editor)
    tree, _here, _parent, total = tree_and_node(editor.db)  # type: ignore[arg-type]
    info = asyncio.ensure_future(editor.request("loom/nodeInfo", {"tree": tree}))
    await asyncio.sleep(0.3)  # it has reached the server and started
    hover = await slow_client.text_document_hover_async(lsp.HoverParams(
        text_document=lsp.TextDocumentIdentifier(uri=uri), position=lsp.Position(0, 1)))
    status = await editor.request("loom/status", {"uri": uri})
    assert not info.done(), "the hover waited for the nodeInfo"
    assert hover is not None and status["label"]
    answer = await info
    assert answer["siblingsTotal"] == total
