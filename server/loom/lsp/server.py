"""The language server: every pygls registration in one place, each a thin call into a
feature module or the controller (which call the same executor as the CLI)."""

from __future__ import annotations

import asyncio
import atexit
import logging
import os
from collections.abc import Callable
from typing import Any

from lsprotocol import types as lsp
from pygls.lsp.server import LanguageServer
from pygls.protocol import LanguageServerProtocol, lsp_method

from loom import __version__
from loom.app import App, open_app
from loom.errors import LoomError
from loom.lsp.controller import Controller
from loom.lsp.features import completion as completion_feature
from loom.lsp.features import decorations, navigation
from loom.lsp.session import Documents, OpenDoc
from loom.lsp.settings import Settings, parse_settings
from loom.lsp.text import TextDoc
from loom.render.formats import error as error_text
from loom.store.schema import Node
from loom.uris import node_uri, tree_uri

log = logging.getLogger(__name__)
SCHEME = "loom"
COMMANDS = ("loom.continue", "loom.branch", "loom.cycleSibling", "loom.annotate", "loom.run",
            "loom.commit", "loom.open", "loom.cancel", "loom.askCollaborator",
            "loom.stopCollaborator")


def _get(params: Any, key: str, default: Any = None) -> Any:
    """A field of custom-request params, whether pygls gives a dict or an object."""
    if params is None:
        return default
    if isinstance(params, dict):
        return params.get(key, default)
    return getattr(params, key, default)


class LoomProtocol(LanguageServerProtocol):
    """Advertises ``workspace/textDocumentContent`` for ``loom:`` (pygls does not by
    itself) and keeps ``loom:`` documents out of pygls' own workspace: the buffer sessions
    hold their text, and a keystroke costs no second copy of a long buffer."""

    @lsp_method(lsp.INITIALIZE)
    def lsp_initialize(self, params: lsp.InitializeParams):  # type: ignore[override]
        result = yield from super().lsp_initialize(params)
        # A client with its own file-system provider for loom: must not get a second
        # content provider for the scheme (LSP-NOTES): advertise it to the others only.
        if self._server.settings.document_provider != "fileSystem":  # type: ignore[attr-defined]
            ws = result.capabilities.workspace or lsp.WorkspaceOptions()
            ws.text_document_content = lsp.TextDocumentContentOptions(schemes=[SCHEME])
            result.capabilities.workspace = ws
        return result

    @lsp_method(lsp.TEXT_DOCUMENT_DID_OPEN)
    def lsp_text_document__did_open(self, params: lsp.DidOpenTextDocumentParams):
        if not params.text_document.uri.startswith(f"{SCHEME}:"):
            self.workspace.put_text_document(params.text_document)
        if (handler := self.fm.features.get(lsp.TEXT_DOCUMENT_DID_OPEN)) is not None:
            yield handler, (params,), None

    @lsp_method(lsp.TEXT_DOCUMENT_DID_CHANGE)
    def lsp_text_document__did_change(self, params: lsp.DidChangeTextDocumentParams):
        if not params.text_document.uri.startswith(f"{SCHEME}:"):
            for change in params.content_changes:
                self.workspace.update_text_document(params.text_document, change)
        if (handler := self.fm.features.get(lsp.TEXT_DOCUMENT_DID_CHANGE)) is not None:
            yield handler, (params,), None

    @lsp_method(lsp.TEXT_DOCUMENT_DID_CLOSE)
    def lsp_text_document__did_close(self, params: lsp.DidCloseTextDocumentParams):
        if not params.text_document.uri.startswith(f"{SCHEME}:"):
            self.workspace.remove_text_document(params.text_document.uri)
        if (handler := self.fm.features.get(lsp.TEXT_DOCUMENT_DID_CLOSE)) is not None:
            yield handler, (params,), None


class LoomServer(LanguageServer):
    def __init__(self, db: str | None = None) -> None:
        super().__init__("loom", __version__, protocol_cls=LoomProtocol, max_workers=8)
        self.db_arg = db
        self.settings = Settings()
        self._app: App | None = None
        self._docs: Documents | None = None
        self.controller = Controller(self)
        self.summaries: Any = None  # the summary worker process, when one was started

    @property
    def app(self) -> App:
        if self._app is None:
            self._app = open_app(self.settings.database or self.db_arg)
        return self._app

    @property
    def docs(self) -> Documents:
        if self._docs is None:
            encoding = str(self.workspace.position_encoding or "utf-16")
            who = self.app.ws.ensure_participant(self.settings.participant, "human", "human",
                                                 ("loom_aware", "loom_write", "loom_generate",
                                                  "doc_read", "doc_write", "cross_tree"), True)
            self._docs = Documents(self.app.ws, who, encoding)
        return self._docs

    def doc(self, uri: str) -> OpenDoc | None:
        if not uri.startswith(f"{SCHEME}:"):
            return None
        return self.docs.open.get(uri) or self._try_ensure(uri)

    def _try_ensure(self, uri: str) -> OpenDoc | None:
        try:
            return self.docs.ensure(uri)
        except LoomError:
            return None


server = LoomServer()


def _offset(doc: OpenDoc, pos: lsp.Position) -> int:
    return doc.session.doc.offset_at(pos.line, pos.character)


def _range(text_doc: TextDoc, start: int, end: int) -> lsp.Range:
    return lsp.Range(lsp.Position(*text_doc.position_at(start)),
                     lsp.Position(*text_doc.position_at(end)))


def _guard(default: Any = None) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Requests never crash the server: bad input answers ``default`` (and a message for
    Loom errors); bugs are logged."""
    def wrap(fn: Callable[..., Any]) -> Callable[..., Any]:
        if asyncio.iscoroutinefunction(fn):
            async def run_async(ls: LoomServer, *args: Any) -> Any:
                try:
                    return await fn(ls, *args)
                except LoomError as err:
                    ls.window_show_message(lsp.ShowMessageParams(
                        type=lsp.MessageType.Error,
                        message=error_text(err.code, err.message, err.hint)))
                    return default
                except Exception:
                    log.exception("%s failed", fn.__name__)
                    return default
            run_async.__name__ = fn.__name__
            return run_async

        def run(ls: LoomServer, *args: Any) -> Any:
            try:
                return fn(ls, *args)
            except LoomError as err:
                log.info("%s: %s", fn.__name__, err)
                return default
            except Exception:
                log.exception("%s failed", fn.__name__)
                return default
        run.__name__ = fn.__name__
        return run
    return wrap


# ── lifecycle and configuration ─────────────────────────────────────────────
@server.feature(lsp.INITIALIZE)
def initialize(ls: LoomServer, params: lsp.InitializeParams) -> None:
    settings, problem = parse_settings(params.initialization_options, ls.settings)
    ls.settings = settings
    if problem:
        log.warning(problem)


@server.feature(lsp.INITIALIZED)
def initialized(ls: LoomServer, params: lsp.InitializedParams) -> None:
    try:
        ls.docs  # noqa: B018 - open the database now, not on the first keystroke
        ls.controller.start_watching()
        if os.environ.get("LOOM_SUMMARIES", "on").lower() not in ("off", "0", "no"):
            from loom.llm.summaries import start_background

            ls.summaries = start_background(str(ls.app.ws.db.database))
            if ls.summaries is not None:
                atexit.register(ls.summaries.terminate)
    except Exception as err:
        log.exception("could not open the workspace")
        ls.window_show_message(lsp.ShowMessageParams(
            type=lsp.MessageType.Error, message=f"✗ Loom could not open its database: {err}"))


@server.feature(lsp.WORKSPACE_DID_CHANGE_CONFIGURATION)
def did_change_configuration(ls: LoomServer, params: lsp.DidChangeConfigurationParams) -> None:
    settings, problem = parse_settings(params.settings, ls.settings)
    if problem:
        ls.window_show_message(lsp.ShowMessageParams(type=lsp.MessageType.Warning,
                                                     message=f"✗ {problem}"))
        return
    ls.settings = settings
    ls.controller.refresh_decorations()


# ── documents ───────────────────────────────────────────────────────────────
@server.feature(lsp.TEXT_DOCUMENT_DID_OPEN)
@_guard()
def did_open(ls: LoomServer, params: lsp.DidOpenTextDocumentParams) -> None:
    item = params.text_document
    if item.uri.startswith(f"{SCHEME}:"):
        doc = ls.docs.did_open(item.uri, item.text, item.version)
        ls.controller.publish(doc)


@server.feature(lsp.TEXT_DOCUMENT_DID_CHANGE)
@_guard()
def did_change(ls: LoomServer, params: lsp.DidChangeTextDocumentParams) -> None:
    doc = ls.docs.open.get(params.text_document.uri)
    if doc is None:
        return
    doc.client_version = params.text_document.version
    touched: list[int] = []
    for change in params.content_changes:
        if isinstance(change, lsp.TextDocumentContentChangePartial):
            start = _offset(doc, change.range.start)
            end = _offset(doc, change.range.end)
            touched += ls.docs.did_change(doc, start, end, change.text)
        else:
            ls.docs.replace_all(doc, change.text)
    pending = doc.session.pending()
    if pending and any(i not in touched for i in pending) and touched and not doc.targets:
        # started editing another node: commit the one edited before (SPEC-NOTES)
        asyncio.get_event_loop().create_task(_commit_others(ls, doc))
    _schedule_persist(ls, doc)


async def _commit_others(ls: LoomServer, doc: OpenDoc) -> None:
    await ls.controller.commit(doc)


_persist_handles: dict[str, asyncio.TimerHandle] = {}


def _schedule_persist(ls: LoomServer, doc: OpenDoc) -> None:
    """Uncommitted text reaches the database shortly after typing stops."""
    handle = _persist_handles.pop(doc.uri, None)
    if handle is not None:
        handle.cancel()

    def persist() -> None:
        try:
            ls.docs.persist(doc)
        except Exception:
            log.exception("could not keep the pending text of %s", doc.uri)

    _persist_handles[doc.uri] = asyncio.get_event_loop().call_later(0.3, persist)


@server.feature(lsp.TEXT_DOCUMENT_DID_SAVE)
@_guard()
async def did_save(ls: LoomServer, params: lsp.DidSaveTextDocumentParams) -> None:
    doc = ls.docs.open.get(params.text_document.uri)
    if doc is not None and not doc.view.read_only:
        await ls.controller.save(doc.uri, doc.text)


@server.feature(lsp.TEXT_DOCUMENT_DID_CLOSE)
@_guard()
def did_close(ls: LoomServer, params: lsp.DidCloseTextDocumentParams) -> None:
    doc = ls.docs.open.get(params.text_document.uri)
    if doc is not None:
        ls.docs.persist(doc)
    ls.docs.did_close(params.text_document.uri)


@server.feature(lsp.WORKSPACE_TEXT_DOCUMENT_CONTENT)
def text_document_content(ls: LoomServer, params: lsp.TextDocumentContentParams
                          ) -> lsp.TextDocumentContentResult:
    text, _view = ls.docs.text_for(params.uri)
    return lsp.TextDocumentContentResult(text=text)


# ── custom requests ─────────────────────────────────────────────────────────
@server.feature("loom/read")
def loom_read(ls: LoomServer, params: Any) -> dict[str, Any]:
    uri = _get(params, "uri")
    try:
        text, view = ls.docs.text_for(uri)
    except LoomError as err:
        return {"uri": uri, "error": error_text(err.code, err.message, err.hint)}
    doc = ls.docs.open.get(uri)
    return {"uri": uri, "text": text, "readOnly": view.read_only,
            "languageId": view.language_id, "version": doc.client_version if doc else 0}


@server.feature("loom/save")
async def loom_save(ls: LoomServer, params: Any) -> dict[str, Any]:
    uri, text = _get(params, "uri"), _get(params, "text")
    if not isinstance(uri, str) or not isinstance(text, str):
        return {"ok": False, "message": "✗ INVALID_SYNTAX: loom/save needs {uri, text}"}
    # An autosave (reason afterDelay/focusOut) commits but never runs a half-typed command.
    manual = _get(params, "reason") in (None, "manual")
    try:
        return await ls.controller.save(uri, text, run_commands=manual)
    except LoomError as err:
        return {"ok": False, "message": error_text(err.code, err.message, err.hint), "uri": uri}


@server.feature("loom/trees")
def loom_trees(ls: LoomServer, params: Any) -> list[dict[str, Any]]:
    out = []
    for tree, count in ls.app.ws.trees():
        _node, tip = ls.app.ws.position(ls.docs.participant, tree)
        out.append({"id": tree.id, "title": tree.title, "mode": tree.mode, "nodes": count,
                    "uri": tree_uri(tree), "pathUri": node_uri(tree, tip)})
    return out


def _node_json(ls: LoomServer, tree: Any, node: Node) -> dict[str, Any]:
    k, n = decorations.sibling_position(ls.app.ws, node)
    author = ls.app.ws.db.execute_sql("SELECT name FROM participant WHERE id = ?",
                                      (node.author_id,)).fetchone()
    return {"id": node.id, "localId": node.local_id, "label": node.label,
            "author": author[0] if author else "?", "authorType": node.author_type,
            "summary": node.summary or "", "depth": node.depth, "created": node.created,
            "uri": node_uri(tree, node), "siblingIndex": k, "siblingCount": n}


@server.feature("loom/nodeInfo")
def loom_node_info(ls: LoomServer, params: Any) -> dict[str, Any]:
    ws = ls.app.ws
    try:
        tree = ws.find_tree(_get(params, "tree") or "")
        ref = _get(params, "node")
        uri, line, character = _get(params, "uri"), _get(params, "line"), _get(params,
                                                                               "character")
        node = None
        if uri and line is not None:
            doc = ls.doc(uri)
            if doc is not None:
                node = ls.docs.node_at(doc, doc.session.doc.offset_at(line, character or 0))
        if node is None:
            node = ws.resolve(tree, ref) if ref else ws.position(ls.docs.participant, tree)[0]
    except LoomError as err:
        return {"error": error_text(err.code, err.message, err.hint)}
    path = ws.path(ws.descend(node) if ref else ws.position(ls.docs.participant, tree)[1],
                   prefer=(node.id,))
    siblings = ws.children(ws.node(node.parent)) if node.parent else [node]
    return {"tree": {"id": tree.id, "title": tree.title, "mode": tree.mode},
            "node": _node_json(ls, tree, node),
            "path": [_node_json(ls, tree, p) for p in path],
            "siblings": [_node_json(ls, tree, s) for s in siblings],
            "children": [_node_json(ls, tree, c) for c in ws.children(node)]}


@server.feature("loom/newTree")
def loom_new_tree(ls: LoomServer, params: Any) -> dict[str, Any]:
    try:
        tree = ls.app.ws.create_tree(_get(params, "title") or "Untitled",
                                     _get(params, "mode") or "buffer",
                                     root_content=_get(params, "text") or "",
                                     author=ls.docs.participant)
    except LoomError as err:
        return {"error": error_text(err.code, err.message, err.hint)}
    root = ls.app.ws.node(tree.root)
    return {"tree": tree.id, "uri": node_uri(tree, root)}


@server.feature("loom/import")
def loom_import(ls: LoomServer, params: Any) -> dict[str, Any]:
    from pathlib import Path

    from loom.interchange import import_file

    try:
        trees = import_file(ls.app.ws, Path(_get(params, "path") or ""))
    except LoomError as err:
        return {"error": error_text(err.code, err.message, err.hint)}
    return {"trees": [{"id": t.id, "title": t.title, "uri": tree_uri(t)} for t in trees]}


@server.feature("loom/export")
def loom_export(ls: LoomServer, params: Any) -> dict[str, Any]:
    import json
    from pathlib import Path

    from loom.interchange.markdown import export_markdown
    from loom.interchange.openloom import export_openloom

    ws = ls.app.ws
    try:
        tree = ws.find_tree(_get(params, "tree") or "")
        fmt = _get(params, "format") or "openloom"
        if fmt == "md":
            text = export_markdown(ws, tree, ws.position(ls.docs.participant, tree)[1])
        elif fmt == "loom":
            from loom.protocol import dumps

            text = dumps(export_openloom(ws, tree))
        else:
            text = json.dumps(export_openloom(ws, tree), ensure_ascii=False, indent=2)
    except LoomError as err:
        return {"error": error_text(err.code, err.message, err.hint)}
    path = _get(params, "path")
    if path:
        Path(path).write_text(text, encoding="utf-8")
        return {"path": path}
    return {"text": text}


@server.feature("loom/status")
def loom_status(ls: LoomServer, params: Any) -> dict[str, Any]:
    doc = ls.doc(_get(params, "uri") or "")
    tip = doc.view.tip if doc is not None else None
    return {"label": tip.label if tip else None, "node": tip.local_id if tip else None,
            "depth": tip.depth if tip else None,
            "generating": ls.controller.generation is not None,
            "participant": ls.docs.participant.name,
            "collaborator": ls.controller.collaborator_status(doc.tree if doc else None)}


# ── editor features ─────────────────────────────────────────────────────────
_KINDS = {"keyword": lsp.CompletionItemKind.Keyword,
          "reference": lsp.CompletionItemKind.Reference,
          "value": lsp.CompletionItemKind.Value, "file": lsp.CompletionItemKind.File,
          "module": lsp.CompletionItemKind.Module, "text": lsp.CompletionItemKind.Text}


@server.feature(lsp.TEXT_DOCUMENT_COMPLETION,
                lsp.CompletionOptions(trigger_characters=[">", "→", " ", ":", '"']))
@_guard(None)
def completion(ls: LoomServer, params: lsp.CompletionParams) -> lsp.CompletionList | None:
    doc = ls.doc(params.text_document.uri)
    if doc is None:
        return None
    text_doc = doc.session.doc
    line_no = params.position.line
    line = text_doc.line(line_no)
    col = text_doc.offset_at(line_no, params.position.character) - text_doc.line_start(line_no)
    tree = doc.tree
    if tree is None:
        try:
            tree = ls.controller.actor(doc).tree
        except LoomError:
            tree = None
    items = completion_feature.complete(ls.docs, doc, tree, line, col)
    base = text_doc.line_start(line_no)
    out = []
    for it in items:
        edit = lsp.TextEdit(range=_range(text_doc, base + it.replace_start, base + it.replace_end),
                            new_text=it.insert or it.label)
        out.append(lsp.CompletionItem(
            label=it.label, kind=_KINDS.get(it.kind), detail=it.detail or None,
            documentation=it.documentation or None, text_edit=edit,
            filter_text=(line[it.replace_start:it.replace_end] + it.label
                         if it.kind == "keyword" and it.insert and it.insert.startswith("→")
                         else None),
            sort_text=it.sort or None))
    return lsp.CompletionList(is_incomplete=True, items=out)


@server.feature(lsp.TEXT_DOCUMENT_HOVER)
@_guard(None)
def hover(ls: LoomServer, params: lsp.HoverParams) -> lsp.Hover | None:
    doc = ls.doc(params.text_document.uri)
    if doc is None:
        return None
    found = navigation.hover(ls.docs, doc, _offset(doc, params.position))
    if found is None:
        return None
    text, span = found
    return lsp.Hover(contents=lsp.MarkupContent(kind=lsp.MarkupKind.Markdown, value=text),
                     range=_range(doc.session.doc, span.start, span.end))


def _location(loc: navigation.Location, encoding: str) -> lsp.Location:
    text_doc = TextDoc(loc.text, encoding)
    return lsp.Location(uri=loc.uri, range=_range(text_doc, loc.start, loc.end))


@server.feature(lsp.TEXT_DOCUMENT_DEFINITION)
@_guard(None)
def definition(ls: LoomServer, params: lsp.DefinitionParams) -> lsp.Location | None:
    doc = ls.doc(params.text_document.uri)
    if doc is None:
        return None
    loc = navigation.definition(ls.docs, doc, _offset(doc, params.position))
    return _location(loc, ls.docs.encoding) if loc else None


@server.feature(lsp.TEXT_DOCUMENT_REFERENCES)
@_guard([])
def references(ls: LoomServer, params: lsp.ReferenceParams) -> list[lsp.Location]:
    doc = ls.doc(params.text_document.uri)
    if doc is None:
        return []
    locs = navigation.references(ls.docs, doc, _offset(doc, params.position),
                                 params.context.include_declaration)
    return [_location(loc, ls.docs.encoding) for loc in locs]


@server.feature(lsp.TEXT_DOCUMENT_DOCUMENT_LINK)
@_guard([])
def document_link(ls: LoomServer, params: lsp.DocumentLinkParams) -> list[lsp.DocumentLink]:
    doc = ls.doc(params.text_document.uri)
    if doc is None:
        return []
    return [lsp.DocumentLink(range=_range(doc.session.doc, s, e), target=uri)
            for s, e, uri in navigation.document_links(ls.docs, doc)]


@server.feature(lsp.TEXT_DOCUMENT_CODE_LENS)
@_guard([])
def code_lens(ls: LoomServer, params: lsp.CodeLensParams) -> list[lsp.CodeLens]:
    doc = ls.doc(params.text_document.uri)
    if doc is None:
        return []
    out = []
    for lens in decorations.lenses(ls.docs, doc, ls.settings.default_n):
        rng = _range(doc.session.doc, lens.offset, lens.offset)
        out.append(lsp.CodeLens(range=rng, command=lsp.Command(
            title=lens.title, command=lens.command, arguments=[lens.args])))
    return out


LEGEND = lsp.SemanticTokensLegend(token_types=decorations.TOKEN_TYPES,
                                  token_modifiers=decorations.TOKEN_MODIFIERS)


@server.feature(lsp.TEXT_DOCUMENT_SEMANTIC_TOKENS_FULL, LEGEND)
@_guard(lsp.SemanticTokens(data=[]))
def semantic_tokens(ls: LoomServer, params: lsp.SemanticTokensParams) -> lsp.SemanticTokens:
    doc = ls.doc(params.text_document.uri)
    if doc is None:
        return lsp.SemanticTokens(data=[])
    return lsp.SemanticTokens(data=decorations.semantic_tokens(ls.docs, doc))


@server.feature(lsp.TEXT_DOCUMENT_INLAY_HINT)
@_guard([])
def inlay_hint(ls: LoomServer, params: lsp.InlayHintParams) -> list[lsp.InlayHint]:
    doc = ls.doc(params.text_document.uri)
    if doc is None or not ls.settings.inlay_hints:
        return []
    text_doc = doc.session.doc
    start = _offset(doc, params.range.start)
    end = _offset(doc, params.range.end)
    return [lsp.InlayHint(position=lsp.Position(*text_doc.position_at(off)), label=label,
                          kind=lsp.InlayHintKind.Type, tooltip=tip, padding_right=True)
            for off, label, tip in decorations.inlay_hints(doc, start, end)]


# ── commands ────────────────────────────────────────────────────────────────
def _arg(args: tuple[Any, ...]) -> dict[str, Any]:
    if args and isinstance(args[0], dict):
        return args[0]
    if args and hasattr(args[0], "__dict__"):
        return dict(vars(args[0]))
    return {}


def _answer(result: Any) -> dict[str, Any]:
    return {"ok": result.ok, "message": result.text, "data": result.data}


def _failure(err: LoomError) -> dict[str, Any]:
    return {"ok": False, "message": error_text(err.code, err.message, err.hint)}


def _command(name: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Register a command whose failures (bad arguments included) answer ``ok: false``."""
    def wrap(fn: Callable[..., Any]) -> Callable[..., Any]:
        async def run(ls: LoomServer, *args: Any) -> dict[str, Any]:
            try:
                result = fn(ls, _arg(args))
                return await result if asyncio.iscoroutine(result) else result
            except LoomError as err:
                return _failure(err)
            except (TypeError, ValueError, KeyError) as err:
                return {"ok": False, "message": f"✗ INVALID_SYNTAX: bad arguments for {name}: "
                                                f"{err}"}
            except Exception as err:
                log.exception("%s failed", name)
                return {"ok": False, "message": f"✗ INTERNAL: {type(err).__name__}: {err}"}
        run.__name__ = fn.__name__
        return server.command(name)(run)
    return wrap


@_command("loom.continue")
async def cmd_continue(ls: LoomServer, a: dict[str, Any]) -> dict[str, Any]:
    return _answer(await ls.controller.continue_(a.get("uri", ""), a.get("n"),
                                                 a.get("tokens"), a.get("temperature")))


@_command("loom.branch")
async def cmd_branch(ls: LoomServer, a: dict[str, Any]) -> dict[str, Any]:
    return _answer(await ls.controller.branch(a.get("uri", ""), _node_arg(ls, a)))


def _node_arg(ls: LoomServer, a: dict[str, Any]) -> str:
    """A command's node: given, or the one under the cursor (``line``/``character``)."""
    if a.get("node"):
        return str(a["node"])
    doc = ls.doc(a.get("uri", ""))
    if doc is not None and a.get("line") is not None:
        node = ls.docs.node_at(doc, doc.session.doc.offset_at(int(a["line"]),
                                                              int(a.get("character") or 0)))
        if node is not None:
            return node.id
    if doc is not None and doc.view.tip is not None:
        return doc.view.tip.id
    raise LoomError("NOT_FOUND", "no node given", "pass {uri, node} or {uri, line, character}")


@_command("loom.cycleSibling")
async def cmd_cycle(ls: LoomServer, a: dict[str, Any]) -> dict[str, Any]:
    return _answer(await ls.controller.cycle(a.get("uri", ""), _node_arg(ls, a),
                                             int(a.get("delta", 1))))


@_command("loom.annotate")
async def cmd_annotate(ls: LoomServer, a: dict[str, Any]) -> dict[str, Any]:
    return _answer(await ls.controller.annotate(a.get("uri", ""), _node_arg(ls, a),
                                                a.get("text")))


@_command("loom.run")
async def cmd_run(ls: LoomServer, a: dict[str, Any]) -> dict[str, Any]:
    return _answer(await ls.controller.run_line(a.get("uri", ""), int(a.get("line", 0))))


@_command("loom.commit")
async def cmd_commit(ls: LoomServer, a: dict[str, Any]) -> dict[str, Any]:
    doc = ls.doc(a.get("uri", ""))
    if doc is None:
        return {"ok": False, "message": "✗ NOT_FOUND: no such loom document"}
    created = await ls.controller.commit(doc)
    return {"ok": True, "message": f"✓ committed {len(created)}", "data": {"created": created}}


@_command("loom.open")
async def cmd_open(ls: LoomServer, a: dict[str, Any]) -> dict[str, Any]:
    ws = ls.app.ws
    tree = ws.find_tree(a.get("tree", ""))
    uri = node_uri(tree, ws.resolve(tree, a["node"])) if a.get("node") else tree_uri(tree)
    try:
        await asyncio.shield(ls.window_show_document_async(
            lsp.ShowDocumentParams(uri=uri, take_focus=True)))
    except Exception as err:
        log.info("showDocument failed: %s", err)
    return {"ok": True, "message": f"✓ {uri}", "data": {"uri": uri}}


@_command("loom.cancel")
def cmd_cancel(ls: LoomServer, a: dict[str, Any]) -> dict[str, Any]:
    cancelled = ls.controller.cancel()
    return {"ok": cancelled, "message": "✓ cancelling" if cancelled else "nothing to cancel"}


@_command("loom.askCollaborator")
async def cmd_ask_collaborator(ls: LoomServer, a: dict[str, Any]) -> dict[str, Any]:
    message = a.get("message")
    return await ls.controller.ask_collaborator(str(a.get("uri", "")),
                                                str(message) if message else None)


@_command("loom.stopCollaborator")
def cmd_stop_collaborator(ls: LoomServer, a: dict[str, Any]) -> dict[str, Any]:
    tree = None
    if a.get("uri"):
        doc = ls.doc(str(a["uri"]))
        tree = doc.tree.id if doc is not None and doc.tree is not None else None
    stopped = ls.controller.stop_collaborator(tree)
    return {"ok": stopped, "message": "✓ stopping the collaborator" if stopped
            else "the collaborator is not taking a turn"}


def serve(db: str | None = None, tcp: str | None = None) -> int:
    logging.basicConfig(level=logging.WARNING)
    server.db_arg = db
    if tcp:
        host, _, port = tcp.rpartition(":")
        server.start_tcp(host or "127.0.0.1", int(port))
    else:
        server.start_io()
    return 0
