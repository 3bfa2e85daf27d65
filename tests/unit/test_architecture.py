"""The layering of ``loom`` (STYLE.md: a functional core with thin shells), checked on the
source with ``ast``: no import cycles, a core that imports no shell, model SDK or LSP
library, and every layer but the store reaching it only through ``Workspace`` and the
repositories under ``store/`` (docs/architecture.md's first paragraph)."""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cache
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "server" / "loom"

#: The functional core.
CORE = ("commands", "model", "store", "render", "memory", "protocol", "interchange")
#: What the core must never import (shells, providers, the LSP stack, model SDKs).
FORBIDDEN_IN_CORE = ("loom.llm", "loom.lsp", "loom.agent", "pygls", "lsprotocol",
                     "anthropic", "openai", "llama_cpp")

#: Modules whose import cycles are tolerated: none.
CYCLE_ALLOWED: tuple[str, ...] = ()

#: Peewee calls on a schema model (``Node.select(…)``, ``Position.replace(…)``).
MODEL_QUERIES = frozenset({
    "select", "get", "get_or_none", "get_by_id", "raw", "update", "insert", "insert_many",
    "delete", "delete_by_id", "replace", "replace_many", "create", "bulk_create",
})
#: Calls that are database access on whatever object they are made on (``ws.sql`` is the
#: store's raw SQL: a caller outside it asks a repository function instead).
DB_CALLS = frozenset({"execute_sql", "atomic", "transaction", "cursor", "sql", "sql_many",
                      "insert_rows"})
SCHEMA = "loom.store.schema"
#: The store's query builders: a call to one of them outside the store is a query too.
BUILDERS = {"loom.store.dialect": "*", "loom.store.orm": "*",
            "loom.store.backend": ("insert_rows", "executemany")}


@dataclass(frozen=True)
class Module:
    name: str
    path: Path
    tree: ast.Module


@cache
def modules() -> dict[str, Module]:
    found = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        name = ".".join(parts)
        found[name] = Module(name, path, ast.parse(path.read_text(encoding="utf-8")))
    return found


def _package(mod: Module) -> str:
    return mod.name if mod.path.name == "__init__.py" else mod.name.rpartition(".")[0]


def imported_names(mod: Module) -> Iterator[tuple[str, ast.stmt]]:
    """Every dotted name ``mod`` imports, anywhere in it (lazy imports count: a cycle through a
    function-level import is still a cycle). ``from a import b`` yields ``a`` and ``a.b``."""
    for node in ast.walk(mod.tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield alias.name, node
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = _package(mod).split(".")
                base = base[: len(base) - (node.level - 1)]
                origin = ".".join([*base, *([node.module] if node.module else [])])
            else:
                origin = node.module or ""
            yield origin, node
            for alias in node.names:
                yield f"{origin}.{alias.name}", node


def import_graph() -> dict[str, set[str]]:
    mods = modules()
    return {name: {target for target, _ in imported_names(mod)
                   if target in mods and target != name}
            for name, mod in mods.items()}


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, edges = work[-1]
            for nxt in edges:
                if nxt not in index:
                    index[nxt] = low[nxt] = len(index)
                    stack.append(nxt)
                    on_stack.add(nxt)
                    work.append((nxt, iter(sorted(graph[nxt]))))
                    break
                if nxt in on_stack:
                    low[node] = min(low[node], index[nxt])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    component = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.append(member)
                        if member == node:
                            break
                    if len(component) > 1:
                        found.append(sorted(component))
    return found


def _under(name: str, prefixes: tuple[str, ...]) -> bool:
    return any(name == p or name.startswith(p + ".") for p in prefixes)


def schema_names(mod: Module) -> set[str]:
    """Local names bound to ``loom.store.schema`` or to one of its models."""
    names = set()
    for node in ast.walk(mod.tree):
        if isinstance(node, ast.ImportFrom) and node.module == SCHEMA:
            names.update(a.asname or a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module == "loom.store":
            names.update(a.asname or a.name for a in node.names if a.name == "schema")
        elif isinstance(node, ast.Import):
            names.update(a.asname for a in node.names if a.name == SCHEMA and a.asname)
    return names


def builder_names(mod: Module) -> set[str]:
    """Local names bound to the store's query builders (``upsert``, ``pw``…)."""
    names = set()
    for node in ast.walk(mod.tree):
        if isinstance(node, ast.ImportFrom) and node.module in BUILDERS:
            allowed = BUILDERS[node.module]
            names.update(a.asname or a.name for a in node.names
                         if allowed == "*" or a.name in allowed)
    return names


def _root_name(expr: ast.expr) -> str | None:
    while isinstance(expr, ast.Attribute):
        expr = expr.value
    return expr.id if isinstance(expr, ast.Name) else None


def _workspace_db(expr: ast.expr) -> bool:
    """``ws.db`` or ``….ws.db``: the workspace's peewee database itself."""
    return isinstance(expr, ast.Attribute) and expr.attr == "db" and (
        (isinstance(expr.value, ast.Name) and expr.value.id == "ws")
        or (isinstance(expr.value, ast.Attribute) and expr.value.attr == "ws"))


def store_queries(mod: Module) -> list[str]:
    """``line: call`` for every peewee query ``mod`` runs itself, and every use of the
    workspace's database (``ws.db.…``)."""
    models = schema_names(mod)
    builders = builder_names(mod)
    found: list[tuple[int, int, str]] = []
    for node in ast.walk(mod.tree):
        if isinstance(node, ast.Call) and _root_name(node.func) in builders:
            found.append((node.lineno, node.col_offset, ast.unparse(node.func)))
            continue
        if isinstance(node, ast.Attribute) and _workspace_db(node.value):
            found.append((node.lineno, node.col_offset, ast.unparse(node)))
            continue
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
            continue
        attr = node.func.attr
        owner = node.func.value
        if _workspace_db(owner):
            continue  # (counted as the attribute above)
        if attr in DB_CALLS or (attr in MODEL_QUERIES and _root_name(owner) in models):
            found.append((node.lineno, node.col_offset, ast.unparse(node.func)))
    return [f"{line}: {call}" for line, _col, call in sorted(found)]


# ── the checks ────────────────────────────────────────────────────────────────


def test_the_package_is_found() -> None:
    assert "loom.commands.executor" in modules() and "loom.store.workspace" in modules()


def test_no_import_cycles() -> None:
    found = [c for c in cycles(import_graph())
             if not all(_under(m, CYCLE_ALLOWED) for m in c)]
    assert found == [], f"import cycles: {found}"


def test_the_core_imports_no_shell_provider_or_lsp_library() -> None:
    core = tuple(f"loom.{layer}" for layer in CORE)
    bad = []
    for name, mod in modules().items():
        if not _under(name, core):
            continue
        for target, stmt in imported_names(mod):
            if _under(target, FORBIDDEN_IN_CORE):
                bad.append(f"{name}:{stmt.lineno} imports {target}")
    assert not bad, "the core imports an outer layer:\n" + "\n".join(sorted(set(bad)))


def test_every_layer_above_the_store_reaches_it_only_through_workspace() -> None:
    scope = tuple(f"loom.{p}" for p in NO_QUERIES)
    assert {name for name in modules() if not _under(name, ("loom.store", "loom"))
            or name == "loom"} - {n for n in modules() if _under(n, scope)} == {"loom"}, \
        "a module the check does not cover: add its layer to MAY_IMPORT or SHELLS"
    bad = {name: q for name, mod in modules().items()
           if _under(name, scope) and (q := store_queries(mod))}
    assert not bad, "store queries outside store/:\n" + "\n".join(
        f"{name}:{q}" for name, queries in sorted(bad.items()) for q in queries)


# ── the checks check what they say ───────────────────────────────────────────


def _module(source: str, name: str = "loom.agent.sample") -> Module:
    return Module(name, PACKAGE / "agent" / "sample.py", ast.parse(source))


def test_cycle_finder_finds_circles_and_only_them() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}, "e": set()}
    assert cycles(graph) == [["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": set()}) == []


def test_query_finder_sees_model_queries_and_raw_sql() -> None:
    source = (
        "from loom.store.schema import Position, Node as N\n"
        "from loom.store import schema\n"
        "def f(ws, rows):\n"
        "    Position.select().where(Position.tree == 1).order_by(Position.updated.desc())\n"
        "    N.get_or_none(N.id == 1)\n"
        "    schema.Pin.delete().execute()\n"
        "    ws.db.execute_sql('SELECT 1')\n"
        "    with ws.db.atomic():\n"
        "        rows.update({})\n"  # a dict's update is not a query
        "    ws.update_tree(1)\n"
    )
    found = [q.split(": ", 1)[1] for q in store_queries(_module(source))]
    assert found == ["Position.select", "N.get_or_none", "schema.Pin.delete",
                     "ws.db.execute_sql", "ws.db.atomic"]
    more = (
        "def g(ctx, args, app):\n"
        "    ctx.ws.sql('SELECT 1')\n"
        "    path = app.ws.db.database\n"
        "    open_database(args.db)\n"  # a --db argument is no database
        "    ctx.ws.add_node(1)\n"
    )
    found = [q.split(": ", 1)[1] for q in store_queries(_module(more))]
    assert found == ["ctx.ws.sql", "app.ws.db.database"]
    builders = (
        "from loom.store.dialect import upsert\n"
        "from loom.store.orm import pw\n"
        "from loom.store.backend import insert_rows, storage_error\n"
        "def h(ws, err):\n"
        "    upsert(ws.x, ('a',), a=1).execute()\n"
        "    pw.SQL('x')\n"
        "    insert_rows(None, 'node', (), [])\n"
        "    storage_error(err)\n"  # (an error's reading: no query)
        "    try:\n"
        "        pass\n"
        "    except pw.DatabaseError:\n"
        "        pass\n"
    )
    found = [q.split(": ", 1)[1] for q in store_queries(_module(builders))]
    assert found == ["upsert", "pw.SQL", "insert_rows"]


def test_the_query_check_covers_every_layer_above_the_store() -> None:
    """Every module outside ``store/`` is in the check's scope, the shells with names of
    their own included (``cli_team``, ``cli_model``, ``cli_preferences``)."""
    scope = tuple(f"loom.{p}" for p in NO_QUERIES)
    assert {"loom.cli_team", "loom.cli_model", "loom.cli_preferences", "loom.commands.executor",
            "loom.interchange.openloom.snapshot", "loom.uris"} <= \
        {name for name in modules() if _under(name, scope)}
    assert not any(_under(name, scope) for name in modules() if _under(name, ("loom.store",)))


def test_relative_imports_resolve_to_modules() -> None:
    mod = Module("loom.agent.loop", PACKAGE / "agent" / "loop.py",
                 ast.parse("from . import assembly\nfrom ..commands import syntax\n"))
    names = {n for n, _ in imported_names(mod)}
    assert {"loom.agent.assembly", "loom.commands.syntax"} <= names


#: Native model code: never loaded by a Loom process. The model runs in its
#: own process (loom.llm.service), where a crash is a message, not an editor's death.
NATIVE_MODEL_CODE = ("llama_cpp", "ctransformers", "gpt4all", "torch", "transformers")


def test_no_loom_process_loads_native_model_code() -> None:
    found = [(mod.name, name) for mod in modules().values()
             for name, _node in imported_names(mod) if _under(name, NATIVE_MODEL_CODE)]
    assert not found, found


def test_the_test_suite_loads_no_native_model_code() -> None:
    tests = PACKAGE.parents[1] / "tests"
    found = []
    for path in sorted(tests.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else \
                [node.module or ""] if isinstance(node, ast.ImportFrom) else []
            found += [(path.name, n) for n in names if _under(n, NATIVE_MODEL_CODE)]
    assert not found, found


#: docs/architecture.md's layer table, its "may import" column as a rule: each layer (a
#: package of ``loom``, or a top-level module) and the layers it may import directly.
#: The leaves (``errors``, ``redact``: no Loom imports) may be imported by every layer;
#: the shells at the top (``cli``, ``app``…) import everything.
CORE_LAYERS = ("commands", "model", "store", "render", "memory", "protocol", "interchange")
LEAVES = ("errors", "redact")
MAY_IMPORT: dict[str, tuple[str, ...]] = {
    "model": (),
    "render": ("model",),
    "store": ("model",),
    "protocol": ("model", "store"),
    "interchange": ("model", "store", "render", "protocol"),
    "memory": ("model", "store", "render", "commands"),
    "commands": ("model", "store", "render", "memory", "interchange"),
    "uris": ("model", "store"),
    "llm": CORE_LAYERS,
    "agent": (*CORE_LAYERS, "llm"),
    "lsp": (*CORE_LAYERS, "llm", "agent", "uris"),
    "mcp_server": (*CORE_LAYERS, "agent"),
}
#: Single modules allowed past their layer's row, each with its reason.
MAY_ALSO: dict[str, tuple[str, ...]] = {
    # render/text.py is pure text (counts, previews, first sentences), importing nothing
    # of Loom (checked below): the store words its counts and summaries with it
    "loom.store": ("loom.render.text",),
    # the entry points of `loom agent` and `loom serve` build the app, as cli.py does;
    # the LSP's Host protocol names the App type
    "loom.agent.cli": ("loom.app",),
    "loom.lsp.server": ("loom.app",),
    "loom.lsp.host": ("loom.app",),
    # `loom mcp` serves the App it is given; HTTP checks its host as `serve --tcp` does
    "loom.mcp_server": ("loom.app", "loom.lsp.tcp"),
}
SHELLS = ("cli", "cli_model", "cli_team", "cli_preferences", "app", "demo", "shell")
#: Modules that must not query the store themselves, as ``loom.<prefix>``: every layer but
#: the store (and the leaves) goes through ``Workspace`` and the repositories under
#: ``store/`` (before: a list of prefixes that ``cli_team`` and ``cli_model`` did not match).
NO_QUERIES = tuple(layer for layer in (*MAY_IMPORT, *SHELLS, *LEAVES) if layer != "store")


def _layer(name: str) -> str:
    return name.split(".")[1] if name.count(".") else name


def test_each_layer_imports_only_what_the_layer_table_allows() -> None:
    mods = modules()
    named = set(MAY_IMPORT) | set(SHELLS) | set(LEAVES)
    assert named >= {_layer(n) for n in mods if n != "loom"}, \
        "a layer the table does not name: add its row (and docs/architecture.md's)"
    wrong = []
    for name, mod in mods.items():
        layer = _layer(name)
        if layer in SHELLS or name == "loom":
            continue
        allowed = {layer, *LEAVES, *MAY_IMPORT.get(layer, ())}
        extra = [m for prefix, ms in MAY_ALSO.items() if _under(name, (prefix,)) for m in ms]
        for target, node in imported_names(mod):
            if (target not in mods or target == "loom" or _layer(target) in allowed
                    or target in extra):  # (``loom`` itself: its version)
                continue
            wrong.append(f"{name}:{node.lineno} imports {target}")
    assert not wrong, "\n".join(sorted(set(wrong)))


def test_the_leaves_import_nothing_of_loom() -> None:
    mods = modules()
    for leaf in ("loom", *(f"loom.{name}" for name in LEAVES), "loom.render.text"):
        imports = [t for t, _ in imported_names(mods[leaf]) if _under(t, ("loom",))]
        assert not imports, (leaf, imports)


def test_peewee_is_imported_only_through_the_store_orm_module() -> None:
    """store/orm.py imports peewee with the database drivers hidden (psycopg alone took
    40-90 ms of every start): a module importing peewee itself, first, would undo that."""
    found = [(mod.name, name) for mod in modules().values() if mod.name != "loom.store.orm"
             for name, _node in imported_names(mod) if _under(name, ("peewee", "playhouse"))]
    assert not found, found


# ── docs/architecture.md's layer table is MAY_IMPORT ──────────────────────────────────────
DOC = PACKAGE.parents[1] / "docs" / "architecture.md"


def _doc_layers() -> tuple[tuple[str, ...], dict[str, tuple[str, str]]]:
    """The page's definition of *the core*, and each row of its layer table: the layer's
    cell and its "may import" cell, by layer name (a shell row under each of its names)."""
    text = DOC.read_text(encoding="utf-8")
    section = text.split("## Layers (`server/loom/`)", 1)[1].split("\n## ", 1)[0]
    core = section.split("*The core* is ", 1)[1].split(".\n", 1)[0]
    rows: dict[str, tuple[str, str]] = {}
    for line in section.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) != 3 or cells[0] in ("layer", "---"):
            continue
        for name in _ticked(cells[0]):
            rows[_as_layer(name)] = (cells[0], cells[2])
    return tuple(_as_layer(n) for n in _ticked(core)), rows


def _ticked(cell: str) -> list[str]:
    return re.findall(r"`([^`]+)`", cell)


def _as_layer(name: str) -> str:
    return name.removesuffix("/").removesuffix(".py")


def _allowed_in_doc(cell: str, core: tuple[str, ...], layer: str = ""
                    ) -> tuple[set[str], set[str]]:
    """A "may import" cell of ``layer``'s row read as (layers, single modules): the layers
    named before any ``;`` (``the core`` standing for its layers), and every module path
    (``x/y.py``, or a ``.py`` after the ``;``) as ``loom.x.y`` — a name no top-level module
    has being one of ``layer``'s own (``server.py`` in ``lsp/``'s row)."""
    head, _, _tail = cell.partition(";")
    layers = {_as_layer(n) for n in _ticked(head) if n.count("/") <= 1 and (
        n.endswith("/") or ("/" not in n and n.endswith(".py")))}
    if "the core" in head:
        layers = layers | set(core)
    known = modules()
    named = set()
    for n in _ticked(cell):
        if not n.endswith(".py") or ("/" not in n and cell.find(f"`{n}`") < len(head)):
            continue
        dotted = "loom." + n.removesuffix(".py").replace("/", ".")
        named.add(dotted if dotted in known or not layer else f"loom.{layer}.{dotted[5:]}")
    return layers, named


def test_the_documented_layer_table_is_the_one_the_suite_enforces() -> None:
    core, rows = _doc_layers()
    assert set(core) == set(CORE_LAYERS), "docs/architecture.md's *the core* is not CORE_LAYERS"
    assert set(rows) == set(MAY_IMPORT) | set(SHELLS), \
        "the page's rows and MAY_IMPORT/SHELLS name different layers"
    for shell in SHELLS:
        assert rows[shell][1] == "everything", shell
    for layer, allowed in MAY_IMPORT.items():
        layers, named = _allowed_in_doc(rows[layer][1], core, layer)
        assert layers == set(allowed), (layer, sorted(layers), sorted(allowed))
        # the single modules past the row, and the row's modules that import them
        also = {m for importer, ms in MAY_ALSO.items() if _layer(importer) == layer for m in ms}
        importers = {i for i in MAY_ALSO if _layer(i) == layer and i != f"loom.{layer}"}
        assert named == also | importers, (layer, sorted(named), sorted(also | importers))


def test_the_page_reads_a_changed_row() -> None:
    """The check above reads the cells it compares (not a vacuous match)."""
    core, rows = _doc_layers()
    assert _allowed_in_doc(rows["lsp"][1], core, "lsp") == (
        {*CORE_LAYERS, "llm", "agent", "uris"}, {"loom.lsp.server", "loom.lsp.host",
                                                 "loom.app"})
    assert _allowed_in_doc("`model/`, `store/`", core)[0] != set(MAY_IMPORT["interchange"])


def test_every_package_says_what_it_is() -> None:
    """A newcomer opening a package's ``__init__.py`` reads what the package holds."""
    silent = [str(p.relative_to(PACKAGE)) for p in PACKAGE.rglob("__init__.py")
              if "__pycache__" not in p.parts and ast.get_docstring(ast.parse(
                  p.read_text(encoding="utf-8"))) is None]
    assert not silent, f"packages without a docstring: {silent}"


# ── the language server's features (lsp/features/table.py, lsp/wiring.py) ───────────
def _table() -> dict[str, str]:
    from loom.lsp.features.table import TABLE  # (names and paths: no feature imported)

    return TABLE


def _takes_a_host(cls: ast.ClassDef) -> bool:
    init = next((n for n in cls.body if isinstance(n, ast.FunctionDef)
                 and n.name == "__init__"), None)
    return init is not None and any(
        a.annotation is not None and ast.unparse(a.annotation) == "Host"
        for a in init.args.args)


def _feature_expr(expr: ast.expr, names: frozenset[str]) -> str | None:
    """The feature an expression stands for: ``self.editing``, ``ls.editing``, a bare
    ``editing``, or a ``Later`` handle called (``self.editing()``); else None."""
    if isinstance(expr, ast.Call) and not expr.args and not expr.keywords:
        expr = expr.func
    if isinstance(expr, ast.Attribute) and expr.attr in names:
        return expr.attr
    if isinstance(expr, ast.Name) and expr.id in names:
        return expr.id
    return None


def reaches_into_features(mod: Module, names: frozenset[str]) -> list[str]:
    """``line: expression`` where ``mod`` touches a feature's private member, or sets an
    attribute of a feature (wiring it after construction)."""
    found: list[tuple[int, str]] = []
    for node in ast.walk(mod.tree):
        if (isinstance(node, ast.Attribute) and node.attr.startswith("_")
                and not node.attr.startswith("__")
                and _feature_expr(node.value, names) is not None):
            found.append((node.lineno, ast.unparse(node)))
        targets = (node.targets if isinstance(node, ast.Assign)
                   else [node.target] if isinstance(node, ast.AugAssign | ast.AnnAssign)
                   else [])
        for target in targets:
            for part in ast.walk(target):
                if (isinstance(part, ast.Attribute) and isinstance(part.ctx, ast.Store)
                        and _feature_expr(part.value, names) is not None):
                    found.append((part.lineno, f"{ast.unparse(part)} = …"))
    return [f"{line}: {what}" for line, what in sorted(found)]


def test_every_feature_class_is_in_the_table_and_the_table_names_only_classes() -> None:
    mods = modules()
    in_table = {tuple(where.split(":")) for where in _table().values()}
    for module, cls in in_table:
        assert module in mods and any(isinstance(n, ast.ClassDef) and n.name == cls
                                      for n in mods[module].tree.body), (module, cls)
    feature_classes = {(mod.name, node.name) for mod in mods.values()
                       if mod.name.startswith("loom.lsp.features.")
                       for node in mod.tree.body
                       if isinstance(node, ast.ClassDef) and _takes_a_host(node)}
    assert feature_classes <= in_table, \
        f"not in lsp/features/table.py: {feature_classes - in_table}"


def test_the_server_types_each_feature_of_the_table_and_no_other() -> None:
    server = modules()["loom.lsp.server"].tree
    cls = next(n for n in server.body if isinstance(n, ast.ClassDef) and n.name == "LoomServer")
    classes = {where.split(":")[1] for where in _table().values()}
    typed = {ast.unparse(n.target): ast.unparse(n.annotation) for n in cls.body
             if isinstance(n, ast.AnnAssign) and ast.unparse(n.annotation) in classes}
    assert typed == {name: where.split(":")[1] for name, where in _table().items()}


def test_no_module_wires_a_feature_or_touches_its_private_members() -> None:
    """Each feature gets what it needs at construction (``lsp/wiring.py``); another
    feature's private members are its own (before: ``Library`` was handed
    ``navigation._follow``, and the server set ``editing.run_commands`` and five more)."""
    names = frozenset(_table())
    found = [f"{mod.name}:{hit}" for mod in modules().values()
             if _under(mod.name, ("loom.lsp",)) for hit in reaches_into_features(mod, names)]
    assert not found, "\n".join(found)


def test_the_feature_check_sees_wiring_and_private_reaches() -> None:
    names = frozenset({"editing", "navigation", "sync"})
    mod = Module("loom.lsp.example", Path("example.py"), ast.parse(
        "self.generation.moves = self.editing.moves = navigation.moves\n"
        "ls.library = Library(ls, ls.navigation._follow)\n"
        "self.sync().outage = None\n"
        "self.editing.unopened[uri] = (text, 1)\n"  # an entry of its state: no wiring
        "self.editing.persist(doc)\n"
        "doc.last_move = None\n"))
    assert reaches_into_features(mod, names) == [
        "1: self.editing.moves = …", "2: ls.navigation._follow", "3: self.sync().outage = …"]
