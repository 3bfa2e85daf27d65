"""Which database a workspace lives in: an SQLite file (the embedded default) or a
PostgreSQL server (a team's shared workspace, ``postgresql://user@host/dbname``).

The rest of Loom writes one SQL: ``?`` placeholders and the portable fragments of
:mod:`loom.store.dialect`. :class:`PostgresDatabase` rewrites ``?`` to the driver's ``%s``
in every statement that reaches it, so a raw query written for SQLite runs unchanged.

Passwords never come from a URL (a URL ends up on command lines, in settings files and in
logs): they come from ``PGPASSWORD``, ``~/.pgpass`` (both read by libpq itself) or the OS
keyring, through the ``password`` callback the composition root passes in.
"""

from __future__ import annotations

import contextlib
import itertools
import logging
import os
import re
import select
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

from loom.errors import LoomError
from loom.redact import redact
from loom.store.orm import pw, with_psycopg
from loom.store.role_guards import CONSTRAINT

log = logging.getLogger(__name__)

URL_SCHEMES = ("postgresql://", "postgres://")
#: Session settings: a writer waiting on a row lock gives up (``CONFLICT``, retry) instead
#: of hanging behind a stuck client; a client that stops in the middle of a transaction
#: (suspended, partitioned) loses it, so its locks never block a branch for long.
LOCK_TIMEOUT_MS = 15_000
IDLE_IN_TRANSACTION_MS = 60_000


def is_url(target: object) -> bool:
    """Whether a ``--db`` value names a PostgreSQL database rather than an SQLite file."""
    return isinstance(target, str) and target.startswith(URL_SCHEMES)


def is_postgres(db: pw.Database) -> bool:
    return isinstance(db, pw.PostgresqlDatabase)


@dataclass(frozen=True)
class ConnInfo:
    """A PostgreSQL URL's parts, without any password."""

    url: str
    user: str
    host: str
    port: str
    dbname: str

    @property
    def keyring_name(self) -> str:
        """The keyring entry (service ``loom``) holding this connection's password."""
        host = self.host if not self.host.startswith("/") else "localhost"
        return f"postgresql://{self.user}@{host}:{self.port}/{self.dbname}"

    @property
    def shown(self) -> str:
        """The URL as logs and messages show it."""
        return redact(self.url)


def parse_url(url: str) -> ConnInfo:
    """The URL's parts; a password in it is refused (``PERMISSION_DENIED``) before anything
    connects or logs it."""
    from psycopg.conninfo import conninfo_to_dict

    try:
        parts = conninfo_to_dict(url)
    except Exception:  # psycopg.ProgrammingError: a malformed URL
        raise LoomError("INVALID_SYNTAX", f"not a PostgreSQL URL: {redact(url)}",
                        "use postgresql://user@host[:port]/dbname") from None
    if parts.get("password"):
        raise LoomError("PERMISSION_DENIED", "a password in the database URL is refused: "
                        "URLs end up in shell history, settings and logs",
                        "remove it from the URL and put it in PGPASSWORD, ~/.pgpass or the "
                        "keyring (keyring set loom " + ConnInfo(
                            url, str(parts.get("user") or _default_user()),
                            str(parts.get("host") or "localhost"),
                            str(parts.get("port") or "5432"),
                            str(parts.get("dbname") or "")).keyring_name + ")")
    user = str(parts.get("user") or os.environ.get("PGUSER") or _default_user())
    host = str(parts.get("host") or os.environ.get("PGHOST") or "localhost")
    port = str(parts.get("port") or os.environ.get("PGPORT") or "5432")
    dbname = str(parts.get("dbname") or os.environ.get("PGDATABASE") or user)
    return ConnInfo(url, user, host, port, dbname)


def _default_user() -> str:
    try:
        import getpass

        return getpass.getuser()
    except Exception:
        return "postgres"


# ── the ? placeholders ────────────────────────────────────────────────────────

_TOKENS = re.compile(r"'(?:[^']|'')*'|\"(?:[^\"]|\"\")*\"|--[^\n]*|/\*.*?\*/|\?\d*|%",
                     re.DOTALL)


def translate(sql: str) -> str:
    """An SQLite-style statement for psycopg: ``?`` outside quotes becomes ``%s`` and every
    ``%`` is doubled (psycopg reads ``%`` everywhere, quoted or not). Numbered ``?1``
    placeholders have no equivalent and are refused, so they fail in tests rather than in a
    user's team workspace. peewee's own statements (``%s`` already) pass unchanged."""
    if "?" not in sql:
        return sql if "%s" in sql or "%" not in sql else sql.replace("%", "%%")

    def swap(m: re.Match[str]) -> str:
        tok = m.group(0)
        if tok == "%":
            return "%%"
        if tok.startswith("?"):
            if len(tok) > 1:
                raise ValueError(f"numbered placeholder {tok} is not portable: use ?")
            return "%s"
        return tok.replace("%", "%%")  # a literal or comment keeps its text

    return _TOKENS.sub(swap, sql)


class PostgresDatabase(pw.PostgresqlDatabase):
    """peewee's PostgreSQL database speaking Loom's SQL: ``?`` placeholders, timestamps as
    double precision (peewee's default REAL keeps only ~7 digits), and a reconnect when the
    server dropped an idle connection."""

    field_types: ClassVar[dict[str, str]] = {**pw.PostgresqlDatabase.field_types,
                                             "FLOAT": "DOUBLE PRECISION"}

    def __init__(self, url: str, password: str | None = None, **kwargs: Any) -> None:
        self.info = parse_url(url)
        params: dict[str, Any] = {
            "application_name": "loom",
            "options": (f"-c lock_timeout={LOCK_TIMEOUT_MS} "
                        f"-c idle_in_transaction_session_timeout={IDLE_IN_TRANSACTION_MS}"),
            "connect_timeout": 10,
        }
        if password:
            params["password"] = password
        with_psycopg()  # (peewee was imported without it: store/orm.py)
        super().__init__(url, prefer_psycopg3=True, **params, **kwargs)

    def execute_sql(self, sql: str, params: Sequence[Any] | None = None) -> Any:
        self._reconnect_if_dropped()
        return super().execute_sql(translate(sql), params)

    def executemany(self, sql: str, rows: Sequence[Sequence[Any]]) -> None:
        """One statement for many rows (psycopg pipelines them)."""
        self._reconnect_if_dropped()
        with pw.__exception_wrapper__:
            self.cursor().executemany(translate(sql), rows)

    def begin(self, isolation_level: Any = None) -> None:
        self._reconnect_if_dropped()  # (peewee's BEGIN does not go through execute_sql)
        super().begin(isolation_level)

    def _reconnect_if_dropped(self) -> None:
        """Outside a transaction, a connection the server closed is replaced before the
        next statement. A restarted server says goodbye on every idle connection (and a
        killed one closes them): the socket then has something to read though nothing was
        asked (this connection never LISTENs), so one ``select`` finds it before a
        statement fails on it. (Anything else arriving unasked costs a reconnect.)"""
        conn = self._state.conn
        if conn is None or self.in_transaction():
            return
        if not conn.closed:
            try:
                dropped = bool(select.select([conn.fileno()], [], [], 0)[0])
            except (OSError, ValueError):
                dropped = True
            if dropped:
                with contextlib.suppress(Exception):
                    conn.close()
        if conn.closed:
            log.info("reconnecting to %s", self.info.shown)
            self._state.reset()
            self.connect()

    def listen_params(self) -> tuple[str, dict[str, Any]]:
        """What a dedicated listening connection needs: the URL and the parameters."""
        params = {k: v for k, v in self.connect_params.items() if k != "options"}
        return self.database, params


_SQLITE_LIMIT_VARIABLE_NUMBER = 9  # (sqlite3's constant: the parameters a statement takes)


def insert_rows(db: pw.Database, table: str, columns: Sequence[str],
                rows: Sequence[Sequence[Any]]) -> None:
    """``rows`` (values the columns take as they are) inserted by multi-row ``INSERT …
    VALUES (…), (…)`` statements as large as the driver allows. On SQLite a bulk import's
    rows go in about a third faster than by ``executemany``, which steps the statement
    once per row: most of that time was binding and stepping each row through Python."""
    if not rows:
        return
    width = len(columns)
    if isinstance(db, PostgresDatabase):
        limit = 32_000  # (of psycopg's 65,535 parameters a statement)
    else:
        limit = db.connection().getlimit(_SQLITE_LIMIT_VARIABLE_NUMBER)
    per = max(1, min(limit // width, 2_000))
    head = (f'INSERT INTO "{table}" (' + ", ".join(f'"{c}"' for c in columns)
            + ") VALUES ")
    one = "(" + ", ".join("?" * width) + ")"
    full = head + ", ".join([one] * per)
    chain = itertools.chain.from_iterable
    for i in range(0, len(rows), per):
        batch = rows[i:i + per]
        sql = full if len(batch) == per else head + ", ".join([one] * len(batch))
        db.execute_sql(sql, list(chain(batch)))


def executemany(db: pw.Database, sql: str, rows: Sequence[Sequence[Any]]) -> None:
    """``sql`` (``?`` placeholders) run for every row, on either backend."""
    if isinstance(db, PostgresDatabase):
        db.executemany(sql, rows)
        return
    with pw.__exception_wrapper__:
        db.cursor().executemany(sql, rows)


# ── what a storage failure means to a user ───────────────────────────────────

# SQLSTATEs that mean "someone else holds what you need; nothing was written, retry".
_RETRYABLE = {"40001": "another writer changed the same rows",
              "40P01": "two writers waited on each other",
              "55P03": "another writer held a lock too long",
              "57014": "the statement took too long"}


UNREACHABLE = "the database is unreachable"
#: SQLSTATEs of a server going away: connection exceptions, and the server shutting down
#: (``pg_ctl stop``), crashing or starting up
_GONE = ("08", "57P01", "57P02", "57P03")


def _sqlstate(err: BaseException) -> str | None:
    # peewee wraps the driver's error: its first argument (and the exception context)
    # is psycopg's, which carries the SQLSTATE
    wrapped = [err, err.__cause__, err.__context__, *(a for a in err.args[:1]
                                                       if isinstance(a, Exception))]
    return next((s for e in wrapped if e is not None and (s := getattr(e, "sqlstate", None))),
                None)


def _guard_reason(err: BaseException) -> str | None:
    """What a provenance guard of the team's roles said, or None for another refusal."""
    for e in (err, err.__cause__, err.__context__, *err.args[:1]):
        diag = getattr(e, "diag", None)
        if diag is not None and getattr(diag, "constraint_name", None) == CONSTRAINT:
            return str(diag.message_primary or "")
    return None


def unreachable(err: BaseException) -> bool:
    """Whether a database failure means the server cannot be reached (down, restarting,
    the network gone), rather than a refusal or a conflict: what was asked may succeed as
    is once it is back."""
    if not isinstance(err, pw.DatabaseError | pw.InterfaceError):
        return False
    state = _sqlstate(err) or ""
    if state.startswith(_GONE):
        return True
    text = str(err).lower()
    if isinstance(err, pw.InterfaceError):
        return "closed" in text  # a connection that went away, used again
    return isinstance(err, pw.OperationalError) and not state and (
        "connection" in text or "server closed" in text or "could not connect" in text)


def storage_error(err: Exception) -> LoomError:
    """A database failure as the ``✗`` a user sees (the transaction has rolled back)."""
    state = _sqlstate(err)
    text = str(err)
    if state in _RETRYABLE:
        return LoomError("CONFLICT", f"the workspace is busy: {_RETRYABLE[state]}",
                         "retry the command; nothing was written")
    if "locked" in text or "busy" in text:
        return LoomError("CONFLICT", "the workspace is busy (another writer)",
                         "retry the command")
    if unreachable(err):
        return LoomError("CONFLICT", UNREACHABLE,
                         "check that the server is running and retry; nothing was written")
    if "NUL (0x00)" in text or state in ("22021", "22P05"):
        # psycopg refuses U+0000 in text before sending it; the server, a character its
        # encoding cannot hold
        return LoomError("INVALID_SYNTAX", "PostgreSQL cannot store this text: it holds a "
                         "NUL character (U+0000) or one the database's encoding lacks",
                         "remove the character and retry (a SQLite workspace keeps it)")
    if state == "42501":
        reason = _guard_reason(err)
        if reason is not None:  # a provenance guard (store/role_guards.py), not a grant
            return LoomError("PERMISSION_DENIED", "the database refused this write for "
                             f"your database role: {reason}", "nothing was written; "
                             "docs/team.md says what the database checks")
        return LoomError("PERMISSION_DENIED", "the database refused this write for your "
                         "database role", "ask whoever runs the server for the grant "
                         "(docs/team.md)")
    return LoomError("CONFLICT", f"storage error: {redact(text.strip())}",
                     "retry; nothing was written")


# ── opening ──────────────────────────────────────────────────────────────────

PasswordSource = Callable[[ConnInfo], "str | None"]


def connect_postgres(url: str, password: PasswordSource | None = None,
                     attempts: int = 3) -> PostgresDatabase:
    """A connected :class:`PostgresDatabase`; failures are ``✗`` errors that say what to do."""
    info = parse_url(url)
    secret = password(info) if password is not None else None
    db = PostgresDatabase(url, password=secret)
    for attempt in range(attempts):
        try:
            db.connect(reuse_if_open=True)
            return db
        except pw.OperationalError as err:
            text = redact(str(err).strip().splitlines()[0] if str(err).strip() else "")
            if "password" in text or "authentication" in text:
                raise LoomError("PERMISSION_DENIED", f"{info.shown}: {text}",
                                "set PGPASSWORD, add the password to ~/.pgpass, or "
                                f"keyring set loom {info.keyring_name}") from None
            if "does not exist" in text:
                raise LoomError("NOT_FOUND", f"{info.shown}: {text}",
                                f"create it: createdb -h {info.host} -U {info.user} "
                                f"{info.dbname}") from None
            if attempt + 1 == attempts:
                raise LoomError("NOT_FOUND", f"cannot reach {info.shown}: {text}",
                                "is the server running and the URL right?") from None
            time.sleep(0.5 * (attempt + 1))
    raise AssertionError("unreachable")
