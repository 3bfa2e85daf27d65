"""A throwaway PostgreSQL server for tests and benchmarks: ``initdb`` in a temporary
directory, ``pg_ctl start`` on a free localhost port and a unix socket there, stopped and
removed at the end. Debian's ``postgresql`` package provides the binaries
(``/usr/lib/postgresql/*/bin``); without them :func:`binaries` says why, and the tests that
need a server are skipped with that reason.

initdb refuses to run as root, so as root the server runs as ``nobody`` (the directory is
handed to it). The server is tuned for tests, not durability: no fsync."""

from __future__ import annotations

import contextlib
import glob
import os
import shutil
import socket
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

SUPERUSER = "loom"


def binaries() -> tuple[Path | None, str]:
    """The directory holding ``initdb``/``pg_ctl``, or None and the reason there is none."""
    for candidate in sorted(glob.glob("/usr/lib/postgresql/*/bin"), reverse=True):
        if (Path(candidate) / "initdb").exists() and (Path(candidate) / "pg_ctl").exists():
            return Path(candidate), ""
    found = shutil.which("initdb")
    if found and shutil.which("pg_ctl"):
        return Path(found).resolve().parent, ""
    return None, ("no PostgreSQL binaries (initdb, pg_ctl): install Debian's postgresql "
                  "package (apt-get install postgresql)")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class Cluster:
    """A running server: ``url(db)`` connects over the unix socket as the superuser."""

    root: Path
    bindir: Path
    port: int
    as_user: str | None
    opts: str = ""

    @property
    def socket_dir(self) -> Path:
        return self.root / "sock"

    def url(self, dbname: str = "postgres", user: str = SUPERUSER) -> str:
        return f"postgresql://{user}@/{dbname}?host={self.socket_dir}&port={self.port}"

    def tcp_url(self, dbname: str, user: str) -> str:
        return f"postgresql://{user}@127.0.0.1:{self.port}/{dbname}"

    def admin(self, statement: str, dbname: str = "postgres") -> None:
        """Run one statement as the superuser, outside a transaction (CREATE DATABASE)."""
        import psycopg

        with psycopg.connect(self.url(dbname), autocommit=True) as conn:
            conn.execute(statement)

    def halt(self, mode: str = "fast") -> None:
        """Stop the server and keep its data (an outage): ``resume`` starts it again."""
        _run(self, [str(self.bindir / "pg_ctl"), "-D", str(self.root / "data"), "-m", mode,
                    "-w", "stop"])

    def resume(self) -> None:
        """Start the server ``halt`` stopped, on the same port and socket."""
        _run(self, [str(self.bindir / "pg_ctl"), "-D", str(self.root / "data"), "-o",
                    self.opts, "-l", str(self.root / "server.log"), "-w", "-t", "60", "start"])

    def stop(self) -> None:
        _run(self, [str(self.bindir / "pg_ctl"), "-D", str(self.root / "data"), "-m",
                    "immediate", "-w", "stop"], check=False)
        shutil.rmtree(self.root, ignore_errors=True)


def _run(cluster_or_user: Cluster | str | None, argv: list[str],
         check: bool = True) -> subprocess.CompletedProcess[str]:
    user = cluster_or_user.as_user if isinstance(cluster_or_user, Cluster) else cluster_or_user
    if user:
        argv = ["runuser", "-u", user, "--", *argv]
    return subprocess.run(argv, check=check, capture_output=True, text=True,
                          env={**os.environ, "LC_ALL": "C.UTF-8"})


def start(password_user: tuple[str, str] | None = None) -> Cluster:
    """Start a server. With ``password_user`` = (role, password) that role is created and
    must give its password over TCP (scram); the socket trusts everyone (tests)."""
    bindir, why = binaries()
    if bindir is None:
        raise RuntimeError(why)
    root = Path(tempfile.mkdtemp(prefix="loom-pg-"))
    as_user = "nobody" if os.geteuid() == 0 else None
    (root / "sock").mkdir()
    if as_user:
        shutil.chown(root, as_user)
        shutil.chown(root / "sock", as_user)
    data = root / "data"
    _run(as_user, [str(bindir / "initdb"), "-D", str(data), "-U", SUPERUSER, "-E", "UTF8",
                   "--locale=C", "--auth-local=trust", "--auth-host=scram-sha-256",
                   "--no-sync"])
    port = _free_port()
    opts = (f"-c port={port} -c listen_addresses=127.0.0.1 "
            f"-c unix_socket_directories={root / 'sock'} -c fsync=off "
            "-c synchronous_commit=off -c full_page_writes=off -c max_connections=300 "
            "-c shared_buffers=64MB")
    cluster = Cluster(root, bindir, port, as_user, opts)
    try:
        _run(cluster, [str(bindir / "pg_ctl"), "-D", str(data), "-o", opts, "-l",
                       str(root / "server.log"), "-w", "-t", "60", "start"])
    except subprocess.CalledProcessError as err:
        log = (root / "server.log").read_text(errors="replace") if (
            root / "server.log").exists() else ""
        shutil.rmtree(root, ignore_errors=True)
        raise RuntimeError(f"PostgreSQL did not start: {err.stderr}\n{log[-2000:]}") from None
    deadline = time.monotonic() + 30
    while True:
        try:
            cluster.admin("SELECT 1")
            break
        except Exception:
            if time.monotonic() > deadline:
                cluster.stop()
                raise
            time.sleep(0.1)
    if password_user:
        role, password = password_user
        cluster.admin(f"CREATE ROLE {role} LOGIN PASSWORD '{password}'")
    return cluster


@contextlib.contextmanager
def running(password_user: tuple[str, str] | None = None):  # type: ignore[no-untyped-def]
    cluster = start(password_user)
    try:
        yield cluster
    finally:
        cluster.stop()
