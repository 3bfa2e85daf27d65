"""Shared fixtures: a fresh workspace per test — on SQLite and on PostgreSQL (a server the
suite starts itself, see ``tests/pg_cluster.py``) — and a fixed clock."""

from __future__ import annotations

import itertools
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests import pg_cluster

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO.parent / "shared"
FIXTURES = SHARED / "fixtures"
# Loop-only state checked in this process and in every server it starts (lsp/threads.py)
os.environ.setdefault("LOOM_CHECK_LOOP", "1")


def pytest_configure(config: pytest.Config) -> None:
    """The suite's model services live in a runtime directory of its own (one shared
    local model process for every test and every server the tests start), stopped when
    the run ends; they never meet the user's."""
    if "LOOM_RUNTIME_DIR" not in os.environ:
        path = tempfile.mkdtemp(prefix="loom-test-runtime-")
        os.environ["LOOM_RUNTIME_DIR"] = path
        config.stash[_RUNTIME] = path
    os.environ.setdefault("LOOM_MODEL_IDLE_S", "300")


def pytest_unconfigure(config: pytest.Config) -> None:
    path = config.stash.get(_RUNTIME, None)
    if path is not None:
        from loom.llm.service.client import stop_all

        stop_all(Path(path))
        shutil.rmtree(path, ignore_errors=True)


_RUNTIME = pytest.StashKey[str]()


class Clock:
    def __init__(self, t: float = 1_800_000_000.0) -> None:
        self.t = t

    def __call__(self) -> float:
        return self.t

    def advance(self, seconds: float) -> None:
        self.t += seconds


@pytest.fixture
def clock() -> Clock:
    return Clock()


def _missing(why: str) -> None:
    """Skip where PostgreSQL cannot run; in CI (``LOOM_REQUIRE_POSTGRES=1``) fail."""
    if os.environ.get("LOOM_REQUIRE_POSTGRES") == "1":
        pytest.fail(why)
    pytest.skip(why)


_TEMPLATE = "loom_template"
_numbers = itertools.count()


@pytest.fixture(scope="session")
def pg() -> Iterator[pg_cluster.Cluster]:
    """A PostgreSQL server for the whole run, with a migrated template database; skipped
    (with the reason) only where the binaries or the driver are missing."""
    bindir, why = pg_cluster.binaries()
    if bindir is None:
        _missing(why)
    try:
        import psycopg  # noqa: F401
    except ImportError:
        _missing("the PostgreSQL driver is missing: pip install -e '.[postgres]'")
    cluster = pg_cluster.start()
    try:
        from loom.store.db import open_database

        cluster.admin(f"CREATE DATABASE {_TEMPLATE}")
        open_database(cluster.url(_TEMPLATE)).close()
        yield cluster
    finally:
        cluster.stop()


def new_pg_database(cluster: pg_cluster.Cluster, template: bool = True) -> str:
    """A database of its own (for tests whose subprocesses share it), as a URL: the
    migrated template copied, or an empty one (about a second each on a busy machine)."""
    name = f"t{next(_numbers)}"
    cluster.admin(f"CREATE DATABASE {name}" + (f" TEMPLATE {_TEMPLATE}" if template else ""))
    return cluster.url(name)


@pytest.fixture(scope="session")
def _pg_shared(pg: pg_cluster.Cluster) -> tuple[str, bytes]:
    """One migrated database that in-process tests share, and the statement that empties
    it (milliseconds, where creating a database takes about a second)."""
    import psycopg

    url = new_pg_database(pg)
    with psycopg.connect(url, autocommit=True) as conn:
        tables = [r[0] for r in conn.execute(
            "SELECT tablename FROM pg_tables WHERE schemaname = 'public' "
            "AND tablename <> 'meta'")]
        seqs = [r[0] for r in conn.execute(
            "SELECT sequencename FROM pg_sequences WHERE schemaname = 'public'")]
    # children before the rows they reference
    tables.sort(key=lambda t: t in ("tree", "participant"))
    wipe = ("BEGIN; SET LOCAL lock_timeout = '10s'; "
            + " ".join(f'DELETE FROM "{t}";' for t in tables)
            + " ".join(f"SELECT setval('{q}', 1, false);" for q in seqs) + " COMMIT;")
    return url, wipe.encode()


@pytest.fixture
def pg_url(_pg_shared: tuple[str, bytes]) -> str:
    """The shared PostgreSQL test database, emptied: a fresh workspace."""
    import psycopg

    url, wipe = _pg_shared
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(wipe)
    return url


@pytest.fixture(autouse=True)
def _interchange_backend(request: Any) -> Iterator[None]:
    """``LOOM_INTERCHANGE_BACKEND=postgresql``: the interchange tests' workspaces
    (``interchange_support.fresh``, SQLite files by default) are PostgreSQL databases, each
    a copy of the migrated template; tests that reopen a workspace's file by its path
    (the CLI's --db, a second connection) do not apply there."""
    if os.environ.get("LOOM_INTERCHANGE_BACKEND") != "postgresql" or \
            "interchange" not in request.module.__name__:
        yield
        return
    from tests.unit import interchange_support as support

    cluster = request.getfixturevalue("pg")
    support.DATABASES = lambda: new_pg_database(cluster)
    try:
        yield
    finally:
        support.DATABASES = None


@pytest.fixture(params=["sqlite", "postgresql"])
def backend(request: Any) -> str:
    """Which database the test's workspace lives in: every test using ``app`` or
    ``db_target`` runs on both."""
    return str(request.param)


@pytest.fixture
def db_target(backend: str, tmp_path: Path, request: Any) -> str | Path:
    """A fresh workspace's ``--db``: an SQLite file or a PostgreSQL database's URL."""
    if backend == "sqlite":
        return tmp_path / "loom.db"
    return str(request.getfixturevalue("pg_url"))


@pytest.fixture
def own_db_target(backend: str, tmp_path: Path, request: Any) -> str | Path:
    """Like ``db_target``, but a database no other test shares (schema changes,
    subprocesses that outlive the test's own connection)."""
    if backend == "sqlite":
        return tmp_path / "loom.db"
    return new_pg_database(request.getfixturevalue("pg"))


@pytest.fixture
def app(db_target: str | Path, clock: Clock):  # type: ignore[no-untyped-def]
    from loom.app import open_app

    a = open_app(db_target, use_default_subject=False)
    a.ws.clock = clock
    yield a
    a.ws.db.close()
