"""peewee, imported once for all of Loom without the PostgreSQL driver.

peewee imports every database driver it can find when it is itself imported: psycopg alone
is 40-90 ms, paid by every ``loom`` command and every language server start although most
workspaces are an SQLite file. Loom imports peewee only from here (a rule of
``tests/unit/test_architecture.py``), with the drivers hidden for that moment;
``with_psycopg()`` gives peewee the driver when a ``postgresql://`` database is opened."""

from __future__ import annotations

import sys
import threading

_DRIVERS = ("psycopg", "psycopg2", "psycopg2cffi", "pymysql", "MySQLdb")
_hidden = [name for name in _DRIVERS if name not in sys.modules]
for _name in _hidden:
    sys.modules[_name] = None  # type: ignore[assignment]  # import raises ImportError
try:
    import peewee as pw
    from peewee import fn
finally:
    for _name in _hidden:
        if sys.modules.get(_name, 0) is None:
            del sys.modules[_name]

_lock = threading.Lock()


def with_psycopg() -> None:
    """What peewee's own import would have set for psycopg 3, set now (once): the module,
    its JSON adapters and the transaction states its adapter reads."""
    with _lock:
        if pw.psycopg is not None:
            return
        import psycopg
        from psycopg.pq import TransactionStatus
        from psycopg.types.json import Json, Jsonb

        pw.TransactionStatus = TransactionStatus  # type: ignore[attr-defined]
        pw.Json_pg3, pw.Jsonb_pg3 = Json, Jsonb  # type: ignore[attr-defined]
        adapter = pw.Psycopg3Adapter
        adapter.txn_idle = TransactionStatus.IDLE  # type: ignore[attr-defined]
        adapter.txn_inerror = TransactionStatus.INERROR  # type: ignore[attr-defined]
        adapter.txn_unknown = TransactionStatus.UNKNOWN  # type: ignore[attr-defined]
        pw.psycopg = psycopg  # last: peewee tests this name for "the driver is there"


__all__ = ["fn", "pw", "with_psycopg"]
