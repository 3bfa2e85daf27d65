"""SQL that runs on SQLite and on PostgreSQL: the source holds none of SQLite's own forms
(outside the few modules that speak to one backend on purpose), and ``?`` statements are
rewritten for psycopg without touching quoted text. The store and executor tests
themselves run on both backends (the ``app`` fixture)."""

from __future__ import annotations

import ast
import re
from functools import cache
from pathlib import Path

import pytest

from loom.redact import redact
from loom.store.backend import translate

PACKAGE = Path(__file__).resolve().parents[2] / "server" / "loom"

#: SQLite-only SQL in string literals (docstrings aside), what to write instead, and the
#: modules allowed to use it.
FORBIDDEN_SQL: list[tuple[str, str, tuple[str, ...]]] = [
    (r"json_each\s*\(", "dialect.json_values()", ("store/dialect.py",)),
    (r"INSERT\s+OR\s+(IGNORE|REPLACE)", "ON CONFLICT … DO NOTHING / dialect.upsert", ()),
    (r"\bPRAGMA\b", "nothing: a PRAGMA is SQLite's", ("store/db.py",)),
    (r"\browid\b", "an explicit key (ids: model.ids.ordered_ulid)",
     ("store/fulltext.py",)),  # FTS5's external-content join, SQLite's own by nature
    (r"NOCASE", "lower(x) = lower(?)", ()),
    (r"\?\d", "plain ? placeholders (repeat the parameter)", ()),
    (r"\bIS\s+(NOT\s+)?\?", "x IS NULL or x = ? (PostgreSQL takes no parameter after IS)",
     ()),
    (r"\b(pruned|excluded|archived|bookmarked|ok)\s*=\s*[01]\b",
     "NOT pruned / pruned (PostgreSQL has a real boolean)", ()),
    (r"(?i)\bgroup_concat\(|\bifnull\(|\bstrftime\(|\bdatetime\(|\binstr\(",
     "coalesce, string_agg via the dialect, or Python", ()),
]
#: Python calls that bypass the backend's rewriting, and where they belong.
FORBIDDEN_CALLS: list[tuple[str, str, tuple[str, ...]]] = [
    ("cursor", "Workspace.sql / Workspace.sql_many", ("store/backend.py",)),
    ("execute_sql", "Workspace.sql", ("store/",)),
    ("executemany", "Workspace.sql_many", ("store/backend.py",)),
    ("collate", "fn.lower(x) == value.lower()", ()),
]


@cache
def _sources() -> list[tuple[str, ast.Module]]:
    return [(str(p.relative_to(PACKAGE)), ast.parse(p.read_text(encoding="utf-8")))
            for p in sorted(PACKAGE.rglob("*.py"))]


def _allowed(rel: str, allowed: tuple[str, ...]) -> bool:
    return any(rel == a or (a.endswith("/") and rel.startswith(a)) for a in allowed)


@cache
def _strings(tree: ast.Module) -> list[tuple[int, str]]:
    """The module's string literals, docstrings left out."""
    docs = set()
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if (isinstance(body, list) and body and isinstance(body[0], ast.Expr)
                and isinstance(body[0].value, ast.Constant)):
            docs.add(id(body[0].value))
    return [(n.lineno, n.value) for n in ast.walk(tree)
            if isinstance(n, ast.Constant) and isinstance(n.value, str) and id(n) not in docs]


@pytest.mark.parametrize(("pattern", "instead", "allowed"), FORBIDDEN_SQL,
                         ids=[f[0] for f in FORBIDDEN_SQL])
def test_no_sqlite_only_sql(pattern: str, instead: str, allowed: tuple[str, ...]) -> None:
    rx = re.compile(pattern)
    found = [f"{rel}:{line}: {text[:80]!r}" for rel, tree in _sources()
             if not _allowed(rel, allowed) for line, text in _strings(tree) if rx.search(text)]
    assert not found, f"SQLite-only SQL (write {instead}):\n" + "\n".join(found)


@pytest.mark.parametrize(("attr", "instead", "allowed"), FORBIDDEN_CALLS,
                         ids=[f[0] for f in FORBIDDEN_CALLS])
def test_no_raw_database_calls(attr: str, instead: str, allowed: tuple[str, ...]) -> None:
    found = [f"{rel}:{node.lineno}" for rel, tree in _sources() if not _allowed(rel, allowed)
             for node in ast.walk(tree)
             if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
             and node.func.attr == attr]
    assert not found, f".{attr}() bypasses the backend (use {instead}): " + ", ".join(found)


def test_no_sqlite3_outside_the_store() -> None:
    found = [f"{rel}:{node.lineno}" for rel, tree in _sources() for node in ast.walk(tree)
             if (isinstance(node, ast.Import) and any(a.name == "sqlite3" for a in node.names))
             or (isinstance(node, ast.ImportFrom) and node.module == "sqlite3")]
    assert not found, "sqlite3 imported (catch peewee's errors instead): " + ", ".join(found)


def test_no_model_replace() -> None:
    """peewee's ``Model.replace`` is SQLite's INSERT OR REPLACE: use ``dialect.upsert``."""
    from loom.store import schema

    models = {name for name, obj in vars(schema).items()
              if isinstance(obj, type) and issubclass(obj, schema.Base)}
    found = []
    for rel, tree in _sources():
        for node in ast.walk(tree):
            if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                    and node.func.attr in ("replace", "replace_many")
                    and isinstance(node.func.value, ast.Name) and node.func.value.id in models):
                found.append(f"{rel}:{node.lineno}")
    assert not found, "Model.replace (use dialect.upsert): " + ", ".join(found)


def test_the_checks_see_what_they_look_for() -> None:
    tree = ast.parse('"""INSERT OR IGNORE in a docstring is prose."""\n'
                     'ws.db.execute_sql("INSERT OR IGNORE INTO x SELECT value FROM '
                     'json_each(?1) WHERE pruned = 0")\n')
    strings = [text for _, text in _strings(tree)]
    assert len(strings) == 1
    hits = [p for p, _, _ in FORBIDDEN_SQL if re.search(p, strings[0])]
    assert len(hits) == 4


def test_translate_rewrites_placeholders_outside_quotes() -> None:
    assert translate("SELECT a FROM t WHERE b = ? AND c = ?") == \
        "SELECT a FROM t WHERE b = %s AND c = %s"
    assert translate("SELECT '?', \"q?\" FROM t WHERE x = ? -- why?\n") == \
        "SELECT '?', \"q?\" FROM t WHERE x = %s -- why?\n"
    assert translate("SELECT 'it''s 5%' WHERE x LIKE ?") == \
        "SELECT 'it''s 5%%' WHERE x LIKE %s"
    assert translate("SELECT 'a%'") == "SELECT 'a%%'"  # psycopg reads % even unbound
    assert translate('SELECT "t"."a" FROM "t" WHERE "t"."b" = %s') == \
        'SELECT "t"."a" FROM "t" WHERE "t"."b" = %s'  # peewee's own: unchanged
    with pytest.raises(ValueError, match="numbered"):
        translate("SELECT ?1")


def test_passwords_never_show() -> None:
    # (the one redaction table: loom.redact)
    assert redact("postgresql://bob:s3cret@db.lab/loom") == \
        "postgresql://bob:[REDACTED]@db.lab/loom"
    assert redact("host=db password=s3cret user=bob") == \
        "host=db password=[REDACTED] user=bob"
    assert redact("host=db password='two s3cret words' user=bob") == \
        "host=db password='[REDACTED]' user=bob"
    assert redact("postgresql://bob@db.lab/loom") == "postgresql://bob@db.lab/loom"
