"""The threading model's checks (docs/architecture.md, "Threading model"): loop-only state
changed from a worker raises ``OffTheLoop`` while ``LOOM_CHECK_LOOP`` is on, and commands
run in the loop's default executor, not pygls' pool."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace

import pytest
from lsprotocol import types as lsp

from loom.lsp import threads
from loom.uris import node_uri
from tests.unit.fake_host import Features, features


@pytest.fixture
def f(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Features]:
    monkeypatch.setattr(threads, "CHECKING", True)
    yield features(tmp_path / "loom.db")
    threads.release_loop()


def _open(f: Features) -> str:
    ws = f.host.app.ws
    tree = ws.create_tree("Cats", root_content="The cat sat.")
    _node, tip = ws.position(ws.human(), tree)
    uri = node_uri(tree, tip)
    f.host.open(uri)
    return uri


def _typed(text: str) -> list[lsp.TextDocumentContentChangeWholeDocument]:
    return [lsp.TextDocumentContentChangeWholeDocument(text=text)]


async def test_a_buffer_changed_from_a_worker_is_refused(f: Features) -> None:
    uri = _open(f)
    threads.claim_loop()
    doc = f.host.docs.open[uri]
    with pytest.raises(threads.OffTheLoop, match=r"Documents\.apply_changes: loop-only "
                       r"state changed from thread 'asyncio_\d+', not the event loop's"):
        await asyncio.to_thread(f.host.docs.apply_changes, doc, _typed("The dog sat."))
    assert doc.session.text == "The cat sat."  # refused before it changed anything
    f.host.docs.apply_changes(doc, _typed("The dog sat."))  # on the loop: as ever
    assert doc.session.text == "The dog sat."


async def test_opening_closing_and_proposing_from_a_worker_are_refused(f: Features) -> None:
    uri = _open(f)
    threads.claim_loop()
    docs, doc = f.host.docs, f.host.docs.open[uri]
    for call, what in ((lambda: docs.did_open(uri, doc.text, 1), "did_open"),
                       (lambda: docs.open_file("file:///a.loom", "→ status", 1), "open_file"),
                       (lambda: docs.did_change(doc, 0, 3, "A"), "did_change"),
                       (lambda: docs.did_close(uri), "did_close"),
                       (lambda: docs.propose(doc, "Other.", []), "propose"),
                       (lambda: docs.replace_all(doc, "Other."), "replace_all")):
        with pytest.raises(threads.OffTheLoop, match=rf"Documents\.{what}"):
            await asyncio.to_thread(call)
    assert uri in docs.open and doc.session.text == "The cat sat." and not docs.files


async def test_a_task_spawned_from_a_worker_is_refused() -> None:
    from loom.lsp.host import ClientHost

    host = ClientHost.__new__(ClientHost)  # (spawn needs only its task set)
    host._tasks = set()
    threads.claim_loop()
    try:
        with pytest.MonkeyPatch.context() as mp:
            mp.setattr(threads, "CHECKING", True)
            coro = asyncio.sleep(0)
            with pytest.raises(threads.OffTheLoop, match=r"ClientHost\.spawn"):
                await asyncio.to_thread(host.spawn, coro, "from a worker")
            coro.close()
    finally:
        threads.release_loop()
    assert not host._tasks


async def test_nothing_is_checked_when_the_check_is_off(f: Features,
                                                         monkeypatch: pytest.MonkeyPatch
                                                         ) -> None:
    uri = _open(f)
    threads.claim_loop()
    monkeypatch.setattr(threads, "CHECKING", False)
    doc = f.host.docs.open[uri]
    await asyncio.to_thread(f.host.docs.apply_changes, doc, _typed("The dog sat."))
    assert doc.session.text == "The dog sat."


def test_before_a_loop_is_claimed_nothing_is_checked(f: Features) -> None:
    """A process serving no editor (a script, the unit tests' fake host) has no loop
    thread to check against."""
    uri = _open(f)
    worker = threading.Thread(target=f.host.docs.apply_changes,
                              args=(f.host.docs.open[uri], _typed("The dog sat.")))
    worker.start()
    worker.join()
    assert f.host.docs.open[uri].session.text == "The dog sat."


@pytest.mark.parametrize(("value", "checking"), [("1", True), ("on", True), ("", False),
                                                 ("0", False), (None, False)])
def test_the_environment_variable_turns_the_check_on(value: str | None,
                                                     checking: bool) -> None:
    env = {k: v for k, v in os.environ.items() if k != "LOOM_CHECK_LOOP"}
    if value is not None:
        env["LOOM_CHECK_LOOP"] = value
    out = subprocess.run([sys.executable, "-c",
                          "from loom.lsp import threads; print(threads.CHECKING)"],
                         env=env, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == str(checking)


async def test_commands_run_in_the_loops_default_executor_not_pyglss_pool() -> None:
    """``ClientHost.execute``: ``asyncio.to_thread``, whose workers are the loop's
    default executor's (``asyncio_N``); pygls' pool (``max_workers=8``) is not made."""
    from loom.lsp.server import LoomServer

    server = LoomServer()
    ran: list[str] = []

    def execute(command: object, actor: object, on_delta: object, cancel: object) -> str:
        ran.append(threading.current_thread().name)
        return "✓ done"

    async def refresh_traces() -> None:
        ran.append("traces refreshed on " + threading.current_thread().name)

    server._app = SimpleNamespace(executor=SimpleNamespace(execute=execute))
    server.sync = SimpleNamespace(refresh_traces=refresh_traces)
    assert await server.execute("→ status", None) == "✓ done"  # type: ignore[arg-type]
    assert ran[0].startswith("asyncio_"), ran
    assert ran[1] == f"traces refreshed on {threading.current_thread().name}"
    assert server._thread_pool is None


def test_the_thread_answering_initialize_is_the_loops() -> None:
    from loom.lsp.server import LoomServer, initialize

    threads.release_loop()
    try:
        initialize(LoomServer(), lsp.InitializeParams(
            capabilities=lsp.ClientCapabilities()))
        assert threads._loop_thread == threading.get_ident()
    finally:
        threads.release_loop()


def test_the_suites_check_this_process_and_the_servers_they_start() -> None:
    from tests.lsp.conftest import NO_MODEL_ENV

    assert os.environ["LOOM_CHECK_LOOP"] == "1" and threads.CHECKING
    assert NO_MODEL_ENV["LOOM_CHECK_LOOP"] == "1"


async def test_the_default_executor_is_pythons_default_size() -> None:
    await asyncio.to_thread(int)  # (the loop makes it on first use)
    cpus = getattr(os, "process_cpu_count", os.cpu_count)() or 1
    executor = asyncio.get_running_loop()._default_executor  # type: ignore[attr-defined]
    assert executor._max_workers == min(32, cpus + 4)


def test_no_loom_handler_runs_in_pyglss_pool_and_no_module_swaps_the_executor() -> None:
    import ast

    from pygls.feature_manager import is_thread_function

    from loom.lsp.server import server

    handlers = [*server.protocol.fm.features.values(), *server.protocol.fm.commands.values()]
    assert len(handlers) > 40 and not any(is_thread_function(h) for h in handlers)
    package = Path(__file__).resolve().parents[2] / "server" / "loom"
    uses: dict[str, list[str]] = {"set_default_executor": [], "thread_pool": []}
    for path in sorted(package.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Attribute) and node.attr in uses:
                uses[node.attr].append(path.name)
    # pygls' pool: only the reader of a stdin that is no pipe (rpc.py's start_io)
    assert uses == {"set_default_executor": [], "thread_pool": ["rpc.py"]}


def test_each_thread_has_its_own_connection_and_sqlite_writers_take_the_lock_up_front(
        tmp_path: Path) -> None:
    import sqlite3

    from loom.app import open_app

    ws = open_app(tmp_path / "loom.db", use_default_subject=False).ws
    mine = ws.db.connection()
    theirs: list[object] = []
    worker = threading.Thread(target=lambda: theirs.append(ws.db.connection()))
    worker.start()
    worker.join()
    assert theirs and theirs[0] is not mine
    assert ws.db.execute_sql("PRAGMA journal_mode").fetchone()[0] == "wal"
    other = sqlite3.connect(tmp_path / "loom.db", timeout=0)
    # nothing written yet: the write lock is held from BEGIN
    with ws.db.atomic(), pytest.raises(sqlite3.OperationalError, match="locked"):
        other.execute("BEGIN IMMEDIATE")
    other.execute("BEGIN IMMEDIATE")  # and free once it commits
    other.rollback()
    other.close()
