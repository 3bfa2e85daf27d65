"""The language server: every pygls registration in one place, each a thin call into a
feature object (or a feature module for the read-only requests). The server inherits
the client helpers the features share (``ClientHost``, ``lsp/host.py``); every change any
of them makes goes through ``Executor.execute`` with this editor session's participant."""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import gc
import logging
import os
from typing import TYPE_CHECKING, Any

from lsprotocol import types as lsp
from pygls.protocol import lsp_method

from loom import __version__
from loom.errors import LoomError
from loom.lsp.answers import Registrar, guard
from loom.lsp.features.table import TABLE
from loom.lsp.host import SCHEME, ClientHost
from loom.lsp.legend import LEGEND
from loom.lsp.messages import note_first
from loom.lsp.rpc import AnsweringProtocol, loom_converter
from loom.lsp.threads import claim_loop
from loom.lsp.warm import CORE
from loom.lsp.warm import MODULES as WARM
from loom.lsp.warm import converter as warm_converter
from loom.uris import node_uri, tree_uri

if TYPE_CHECKING:
    from loom.commands.results import Result
    from loom.lsp import args as A
    from loom.lsp.documents import OpenDoc
    from loom.lsp.features.collaborator import Collaborator
    from loom.lsp.features.command_lines import CommandLines
    from loom.lsp.features.diagnostics import Diagnostics
    from loom.lsp.features.editing import Editing
    from loom.lsp.features.exploring import Exploring
    from loom.lsp.features.files import Files
    from loom.lsp.features.filling import Filling
    from loom.lsp.features.generation import Generating
    from loom.lsp.features.identity import Identity
    from loom.lsp.features.library import Library
    from loom.lsp.features.moves import Moves
    from loom.lsp.features.navigation import Navigation
    from loom.lsp.features.outage import Outage
    from loom.lsp.features.probabilities import Probabilities
    from loom.lsp.features.scoring import Scoring
    from loom.lsp.features.semantic_delta import SemanticResults
    from loom.lsp.features.suggestions import Suggestions
    from loom.lsp.features.sync import ChangeSync

# The server starts with pygls, lsprotocol and the registrations below only, and answers
# ``initialize`` with them; the rest of Loom is imported in a thread once the editor says
# ``initialized`` (``lsp/warm.py``), and the features are built on first use
# (``LoomServer._build``). bench/bench_startup.py measures it.
#: the features ``_build`` makes (each an attribute of the server)
FEATURES = frozenset(TABLE)

log = logging.getLogger(__name__)


class LoomProtocol(AnsweringProtocol):
    """Answers every request (``lsp/rpc.py``), advertises ``workspace/textDocumentContent``
    for ``loom:`` (pygls does not by itself) and keeps ``loom:`` documents out of pygls' own
    workspace: the buffer sessions hold their text, and a keystroke costs no second copy of
    a long buffer."""

    @lsp_method(lsp.INITIALIZE)
    def lsp_initialize(self, params: lsp.InitializeParams):  # type: ignore[override]
        result = yield from super().lsp_initialize(params)
        # A client with its own file-system provider for loom: must not get a second
        # content provider for the scheme (LSP-NOTES): advertise it to the others only.
        server: LoomServer = self._server  # type: ignore[assignment]
        provider = (server.initial_option("documentProvider")
                    or server.initial_option("document_provider"))
        if provider != "fileSystem":
            ws = result.capabilities.workspace or lsp.WorkspaceOptions()
            ws.text_document_content = lsp.TextDocumentContentOptions(schemes=[SCHEME])
            result.capabilities.workspace = ws
        return result

    def _handle_cancel_notification(self, msg_id: Any) -> None:
        # pygls only cancels a request whose handler has not started; for a command it
        # cancels the reply, not the command's task, so the work ran on (and committed).
        # Commands that can stop (``on.command(…, cancellable=True)``) get their task
        # cancelled, and react to it.
        if not (isinstance(msg_id, str) or (isinstance(msg_id, int)
                                             and not isinstance(msg_id, bool))):
            log.info("ignored $/cancelRequest with an id that is no request id: %r", msg_id)
            return  # (before: {"id": {"x": 1}} logged a TypeError)
        if msg_id in self._request_futures:
            super()._handle_cancel_notification(msg_id)
        else:  # already answered: nothing to cancel (pygls would log a warning, which the
            # editor's log shows as an error)
            log.debug("$/cancelRequest for %r: already answered", msg_id)
        self._server.cancel_request(msg_id)  # type: ignore[attr-defined]

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


class LoomServer(ClientHost):
    """The server: the table's features, built once with what each asks
    (``lsp/wiring.py``); the client helpers they share are ``ClientHost``'s
    (``lsp/host.py``)."""

    protocol: LoomProtocol

    diagnostics: Diagnostics
    editing: Editing
    generation: Generating
    command_lines: CommandLines
    collaborator: Collaborator
    navigation: Navigation
    library: Library
    files: Files
    identity: Identity
    probabilities: Probabilities
    scoring: Scoring
    suggestions: Suggestions
    semantic_results: SemanticResults
    sync: ChangeSync
    outage: Outage
    exploring: Exploring
    filling: Filling
    moves: Moves

    def __init__(self, db: str | None = None) -> None:
        super().__init__(db, "loom", __version__, protocol_cls=LoomProtocol,
                         converter_factory=loom_converter, max_workers=8)
        self.summaries: Any = None  # the summary worker process, when one was started
        self._building = False
        self._rehearsed = False

    def __getattr__(self, name: str) -> Any:
        # only for attributes not set yet: a feature's first use builds them all
        if name in FEATURES and not self.__dict__.get("_building", True):
            self._build()
            return self.__dict__[name]
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")

    def _build(self) -> None:
        """The features of the table, each built once with what its constructor asks
        (``lsp/wiring.py``), after the warming thread has imported them, if it runs: two
        threads importing at once can deadlock."""
        self.warmed()
        from loom.lsp.wiring import FeatureSet

        self._building = True
        try:
            given = {"publish": self.text_document_publish_diagnostics,
                     "progress": self.work_done_progress, "on_back": self._database_back}
            for name, feature in FeatureSet(self, given).all().items():
                setattr(self, name, feature)
        finally:
            self._building = False

    def warm_up(self) -> None:
        """The warming thread's last step: the LSP types Loom answers most met once by the
        converter."""
        warm_converter(self.protocol._converter)

    def start_session(self) -> None:
        """The session's start (``ClientHost.ready``): the database opened now, not on the
        first keystroke, the change feed followed, and the background work started."""
        try:
            self.docs  # noqa: B018
            _settle_heap()
            self.sync.start()
            self.exploring.attach()
            atexit.register(_close_session, self)
            if self.identity.needs_grant():
                self.spawn(self.identity.offer(), "ask what the participant may do")
            self.spawn(self._read_ahead(), "the writer's path, read ahead")
            if os.environ.get("LOOM_SUMMARIES", "on").lower() not in ("off", "0", "no"):
                from loom.llm.summaries import start_background

                self.summaries = start_background(self.app.ws.location)
                if self.summaries is not None:
                    atexit.register(self.summaries.terminate)
            from loom.lsp.purging import purge_daily

            self.spawn(purge_daily(self.app.ws), "the purge of deleted content")
        except Exception as err:
            from loom.commands.results import Result
            from loom.errors import LoomError

            log.exception("could not open the workspace")
            self.window_show_message(lsp.ShowMessageParams(
                type=lsp.MessageType.Error,  # (a refusal says its hint, as every ✗ does)
                message=Result.from_error(err).text if isinstance(err, LoomError)
                else f"✗ Loom could not open its database: {err}"))

    async def open_document(self, uri: str, text: str, version: int) -> None:
        """``didOpen``'s work. An open the database could not answer is kept, with the
        changes typed into it meanwhile (``Editing.unopened``), and made when it is back."""
        from loom.store.backend import unreachable

        try:
            doc = self.docs.did_open(uri, text, version)
        except Exception as err:
            if not unreachable(err):
                raise
            self.docs.open.pop(uri, None)
            self.editing.unopened[uri] = (text, version)
            self.database_lost()
            return
        _settle_heap()  # a long buffer's ranges live as long as it is open
        self.diagnostics.publish(doc)
        if doc.out_of_step:
            await self.editing.bring_in_step(doc)
        if doc.kind == "path":
            await self.editing.recover(doc)
            self.editing.announce(doc)  # kept edits of nodes versioned while it was closed
            if not self._rehearsed:
                self._rehearsed = True
                self.spawn(self._rehearse(doc), "the first completion and hover, rehearsed")

    async def _read_ahead(self) -> None:
        """The path where the writer left off, read into the session's caches while the
        editor is still starting: it is the document an editor opens first (``loom
        demo``, a reopened session), and its first open read 2,000 nodes' pages cold."""
        await asyncio.sleep(0)
        with contextlib.suppress(Exception):
            ws, who = self.app.ws, self.docs.participant
            tree = ws.tree_or_none(who.current_tree) if who.current_tree else None
            if tree is not None:
                _node, tip = ws.position(who, tree)
                self.docs.text_for(node_uri(tree, tip))

    async def _rehearse(self, doc: OpenDoc) -> None:
        """A session's first completion and hover took 2-4× what later ones take (SQLite's
        statements prepared, a codec and the session's caches loaded on first use): once,
        when the first path opens, each runs with its answer dropped."""
        from loom.lsp.features import completion, probabilities

        await asyncio.sleep(0)  # after the open's own answers
        with contextlib.suppress(Exception):
            for line in ("→ view ", "→ continue n:3 "):
                completion.complete(self.docs, doc, doc.tree, line, len(line))
            text = doc.session.doc
            middle = text.position_at(len(doc.session.text) // 2)
            self.protocol._converter.unstructure(probabilities.lsp_hover(
                self.docs, doc, lsp.Position(line=middle[0], character=middle[1])))

    async def _database_back(self, took: float) -> None:
        """The database answers again: what others did meanwhile first, the documents
        opened while it was away, then the commits that waited for it, and the human told."""
        with contextlib.suppress(Exception):
            await self.sync.catch_up()
        for uri, (text, version) in list(self.editing.unopened.items()):
            del self.editing.unopened[uri]
            await self.open_document(uri, text, version)
        committed = await self.editing.retry_blocked()
        from loom.commands.results import Result

        where = ", ".join(f'"{t}"' for t in committed)
        self.show(Result.success(f"✓ the database is back (after {took:.0f} s)" + (
            f": committed your text in {where}" if committed else "")))


server = LoomServer()
on = Registrar(server)  # custom requests and commands, each answered whatever happens


# ── lifecycle and configuration ─────────────────────────────────────────────
@server.feature(lsp.INITIALIZE)
def initialize(ls: LoomServer, params: lsp.InitializeParams) -> None:
    claim_loop()  # the thread answering is the event loop's (lsp/threads.py)
    ls.initial_settings = params.initialization_options  # parsed on first use


def _settle_heap() -> None:
    """Keep what is loaded for good (modules, the workspace, open buffers) out of the
    cyclic collector's full passes: with them in, each pass took 40–50 ms and held up
    whichever request it fell in (a hover, a keystroke). Reference counting still frees
    them when they go. (A collection first found nothing to free, and took 40–60 ms.)"""
    gc.freeze()


@server.feature(lsp.INITIALIZED)
async def initialized(ls: LoomServer, params: lsp.InitializedParams) -> None:
    # The rest of Loom, imported in a thread (the loop answers meanwhile): first what a
    # path's open needs, and the workspace opened, for the editor restoring its tabs now;
    # then the rest, the LSP types Loom answers most met once by the converter, and the
    # subject model looked up (the key store).
    ls.warm(CORE, WARM, then=ls.warm_up)
    await asyncio.to_thread(ls.core_warmed)
    with contextlib.suppress(Exception):  # start_session says what failed
        ls.docs  # noqa: B018
    ls.go_on()
    await asyncio.to_thread(ls.warming_done)
    ls.ready()


@server.feature(lsp.SHUTDOWN)
async def shutdown(ls: LoomServer, params: Any = None) -> None:
    """New requests are already refused (``rpc.py``). Stop the long work (a generation, a
    collaborator turn) so the requests in flight can end, let them, then keep every open
    buffer's uncommitted text: nothing typed is lost when ``exit`` follows."""
    if not ls.opened:
        return
    ls.generation.cancel()
    ls.collaborator.stop(None)
    ls.exploring.stop_all()
    await ls.protocol.drain()
    for doc in list(ls.docs.open.values()):
        ls.editing.persist(doc)


def _close_session(ls: LoomServer) -> None:
    with contextlib.suppress(Exception):
        ls.sync.stop()
        for doc in list(ls.docs.open.values()):
            ls.editing.persist(doc)
        ls.app.ws.close_session(ls.docs.session)


@server.feature(lsp.WORKSPACE_DID_CHANGE_CONFIGURATION)
def did_change_configuration(ls: LoomServer, params: lsp.DidChangeConfigurationParams) -> None:
    ls.warmed()
    from loom.lsp.settings import parse_settings

    settings, problem = parse_settings(params.settings, ls.settings)
    if problem:
        ls.window_show_message(lsp.ShowMessageParams(type=lsp.MessageType.Warning,
                                                     message=f"✗ {problem}"))
        return
    ls.settings = settings
    ls.refresh_decorations()


# ── documents ───────────────────────────────────────────────────────────────
@server.feature(lsp.TEXT_DOCUMENT_DID_OPEN)
@guard()
async def did_open(ls: LoomServer, params: lsp.DidOpenTextDocumentParams) -> None:
    item = params.text_document
    if item.uri.startswith(f"{SCHEME}:"):
        await ls.open_document(item.uri, item.text, item.version)
    elif is_loom_file(item.uri, item.language_id):
        ls.diagnostics.publish(ls.docs.open_file(item.uri, item.text, item.version))


def is_loom_file(uri: str, language_id: str | None) -> bool:
    """A file of Loom command lines the editor opened (``*.loom``, or marked ``loom``)."""
    return uri.startswith("file:") and (uri.endswith(".loom") or language_id == "loom")


@server.feature(lsp.TEXT_DOCUMENT_DID_CHANGE)
@guard()
def did_change(ls: LoomServer, params: lsp.DidChangeTextDocumentParams) -> None:
    file = ls.docs.files.get(params.text_document.uri)
    if file is not None:  # a .loom file on disk: its text follows the editor's, no more
        file.client_version = params.text_document.version
        ls.docs.apply_changes(file, params.content_changes)
        return
    ls.editing.changed(params)
    if ls.scoring.on:
        ls.scoring.changed(params.text_document.uri)


@server.feature(lsp.TEXT_DOCUMENT_DID_SAVE)
@guard()
async def did_save(ls: LoomServer, params: lsp.DidSaveTextDocumentParams) -> None:
    if ls.settings.document_provider != "textDocumentContent":
        return  # the editor saved through loom/save: running the save again doubled it
    doc = ls.docs.open.get(params.text_document.uri)
    if doc is not None and not doc.view.read_only:
        await ls.editing.save_text(doc.uri, doc.text, run_commands=True)


@server.feature(lsp.TEXT_DOCUMENT_DID_CLOSE)
@guard()
def did_close(ls: LoomServer, params: lsp.DidCloseTextDocumentParams) -> None:
    if ls.docs.files.pop(params.text_document.uri, None) is not None:
        return
    doc = ls.docs.open.get(params.text_document.uri)
    if doc is not None:
        ls.editing.persist(doc)
    ls.editing.forget(params.text_document.uri)
    ls.semantic_results.forget(params.text_document.uri)
    ls.docs.did_close(params.text_document.uri)


@server.feature(lsp.WORKSPACE_TEXT_DOCUMENT_CONTENT)
def text_document_content(ls: LoomServer, params: lsp.TextDocumentContentParams
                          ) -> lsp.TextDocumentContentResult:
    with ls.reading():  # an editor's restored tab: answered before the session starts
        text, _view = ls.docs.text_for(params.uri)
    return lsp.TextDocumentContentResult(text=text)


# ── custom requests ─────────────────────────────────────────────────────────
@on.request("loom/read")
def loom_read(ls: LoomServer, a: A.UriArgs) -> dict[str, Any]:
    text, view = ls.docs.text_for(a.uri)
    doc = ls.docs.open.get(a.uri)
    if doc is not None and doc.unseen:
        text = ls.docs.expected_text(doc)  # the changes it is reloaded for (send_edit)
    return {"ok": True, "uri": a.uri, "text": text, "readOnly": view.read_only,
            "languageId": view.language_id, "version": doc.client_version if doc else 0}


@on.request("loom/save")
async def loom_save(ls: LoomServer, a: A.SaveParams) -> dict[str, Any]:
    # An autosave (reason afterDelay/focusOut) commits but never runs a half-typed command.
    return await ls.editing.save_text(a.uri, a.text,
                                      run_commands=a.reason in (None, "manual"),
                                      confirm=a.confirm)


@on.request("loom/trees")
def loom_trees(ls: LoomServer, a: A.Args) -> list[dict[str, Any]]:
    out = []
    for tree, count in ls.app.ws.trees():
        _node, tip = ls.app.ws.position(ls.docs.participant, tree)
        out.append({"id": tree.id, "title": tree.title, "mode": tree.mode, "nodes": count,
                    "uri": tree_uri(tree), "pathUri": node_uri(tree, tip)})
    return out


@on.request("loom/nodeInfo")
async def loom_node_info(ls: LoomServer, a: A.NodeInfoParams) -> dict[str, Any]:
    from loom.lsp.features import lookup

    # the open buffer is read here, on the loop; the database work runs in a thread, so
    # a large answer never holds up a hover or a keystroke
    doc = ls.doc(a.uri) if a.uri else None
    at = lookup.node_at_cursor(ls.docs, doc, a.line, a.character)
    return await asyncio.to_thread(
        lookup.node_info, ls.docs, a.tree, a.node, doc, None, None, at=at,
        siblings_offset=a.siblings_offset, children_offset=a.children_offset, limit=a.limit)


@on.request("loom/newTree")
def loom_new_tree(ls: LoomServer, a: A.NewTreeParams) -> dict[str, Any]:
    from loom.lsp.args import answer

    made = ls.files.new_tree(a.title, a.mode, a.text)
    result: Result = made.pop("result")  # type: ignore[assignment]
    return answer(result, **made)


@on.request("loom/import")
async def loom_import(ls: LoomServer, a: A.ImportParams) -> dict[str, Any]:
    from loom.lsp.args import answer

    result, trees = await ls.files.import_(a.path, a.content, a.name)
    return answer(result, trees=trees)


@on.request("loom/export")
async def loom_export(ls: LoomServer, a: A.ExportParams) -> dict[str, Any]:
    from loom.lsp.args import answer

    result = await ls.files.export(a.tree, a.format, a.path, a.node)
    extra = {"text": result.data["output"]} if "output" in result.data else {}
    if "output_base64" in result.data:  # a binary file: the editor decodes and writes it
        extra = {"base64": result.data["output_base64"],
                 "extension": result.data.get("extension")}
    if "path" in result.data:
        extra["path"] = result.data["path"]
    return answer(result, **extra)


def _uri_of(params: Any) -> str | None:
    uri = params.get("uri") if isinstance(params, dict) else getattr(params, "uri", None)
    return uri if isinstance(uri, str) else None


@server.feature("loom/tabClosed")
def tab_closed(ls: LoomServer, params: Any) -> None:
    """The editor's last tab showing a document closed (its document may stay open)."""
    uri = _uri_of(params)
    if uri is None:
        return
    ls.ready()
    doc = ls.docs.open.get(uri)
    if doc is not None:
        doc.unseen = True
    ls.generation.tab_closed(uri)


@server.feature("loom/tabOpened")
def tab_opened(ls: LoomServer, params: Any) -> None:
    """A tab shows the document again: the server's changes are edits again."""
    uri = _uri_of(params)
    ls.ready()
    doc = ls.docs.open.get(uri) if uri is not None else None
    if doc is not None:
        doc.unseen = False


@on.request("loom/continueOptions")
def loom_continue_options(ls: LoomServer, a: A.ContinueOptionsArgs) -> Result:
    """What ``loom.continue`` with these options would ask, for an editor's prompt to say
    while they are typed (VS Code's Continue With Options…): ``✓ → continue …`` (``✓ read
    as → continue …`` after a typo), else the ✗ the typed line would get; nothing runs."""
    from loom.commands.canonical import to_text
    from loom.commands.results import Result
    from loom.lsp.args import continue_options

    cmd, note = continue_options(a.options)
    invalid = ls.generation.invalid(cmd)
    if invalid is not None:
        return invalid
    return Result.success(f"✓ {'read as ' if note else ''}{to_text(cmd)}",
                          reads_as=to_text(cmd), corrected=note is not None)


@on.request("loom/picture")
def loom_picture(ls: LoomServer, a: A.PictureParams) -> dict[str, Any]:
    return ls.library.picture(a.tree, a.uri)


@on.request("loom/doctor")
async def loom_doctor(ls: LoomServer, a: A.DoctorParams) -> dict[str, Any]:
    """``loom doctor``'s checks, run off the event loop (they may start the model)."""
    from loom.llm import doctor

    report = await asyncio.to_thread(doctor.run, generate=a.generate)
    report.checks.append(doctor.this_process("language server"))
    return {"ok": report.ok, "text": report.render(),
            "checks": [c.model_dump() for c in report.checks]}


@on.request("loom/status")
def loom_status(ls: LoomServer, a: A.MaybeUriArgs) -> dict[str, Any]:
    view = None
    if (a.uri or "").startswith(f"{SCHEME}:"):
        with contextlib.suppress(LoomError):
            view = ls.docs.peek(a.uri or "")  # never renders an open path again
    tip = view.tip if view is not None else None
    return {"ok": True, "label": tip.label if tip else None,
            "node": tip.local_id if tip else None, "depth": tip.depth if tip else None,
            "generating": ls.generation.busy, "participant": ls.docs.participant.name,
            "collaborator": ls.collaborator.status(view.tree if view else None)}


# ── editor features ─────────────────────────────────────────────────────────
@server.feature(lsp.TEXT_DOCUMENT_COMPLETION,
                lsp.CompletionOptions(trigger_characters=[">", "→", " ", ":", '"']))
@guard(None)
def completion(ls: LoomServer, params: lsp.CompletionParams) -> lsp.CompletionList | None:
    from loom.lsp.features import completion as completion_feature

    doc = ls.doc(params.text_document.uri)
    if doc is None:
        return None
    tree = doc.tree
    if tree is None:
        try:
            tree = ls.actor(doc).tree
        except LoomError:
            tree = None
    return completion_feature.completion_list(ls.docs, doc, tree, params.position)


@server.feature(lsp.TEXT_DOCUMENT_HOVER)
@guard(None)
def hover(ls: LoomServer, params: lsp.HoverParams) -> lsp.Hover | None:
    from loom.lsp.features import probabilities

    doc = ls.doc(params.text_document.uri)
    return probabilities.lsp_hover(ls.docs, doc, params.position) if doc else None


@server.feature(lsp.TEXT_DOCUMENT_DEFINITION)
@guard(None)
def definition(ls: LoomServer, params: lsp.DefinitionParams) -> lsp.Location | None:
    from loom.lsp.features import lookup

    doc = ls.doc(params.text_document.uri)
    return lookup.lsp_definition(ls.docs, doc, params.position) if doc else None


@server.feature(lsp.TEXT_DOCUMENT_REFERENCES)
@guard([])
def references(ls: LoomServer, params: lsp.ReferenceParams) -> list[lsp.Location]:
    from loom.lsp.features import lookup

    doc = ls.doc(params.text_document.uri)
    return lookup.lsp_references(ls.docs, doc, params.position,
                                 params.context.include_declaration) if doc else []


@server.feature(lsp.TEXT_DOCUMENT_DOCUMENT_LINK)
@guard([])
def document_link(ls: LoomServer, params: lsp.DocumentLinkParams) -> list[lsp.DocumentLink]:
    from loom.lsp.features import lookup

    doc = ls.doc(params.text_document.uri)
    return lookup.lsp_links(ls.docs, doc) if doc else []


@server.feature(lsp.TEXT_DOCUMENT_CODE_LENS)
@guard([])
def code_lens(ls: LoomServer, params: lsp.CodeLensParams) -> list[lsp.CodeLens]:
    from loom.lsp.features import decorations

    doc = ls.doc(params.text_document.uri)
    return decorations.lsp_lenses(ls.docs, doc, ls.settings.default_n,
                                  ls.settings.markers == "all") if doc else []


@server.feature(lsp.TEXT_DOCUMENT_FOLDING_RANGE)
@guard([])
def folding_range(ls: LoomServer, params: lsp.FoldingRangeParams) -> list[lsp.FoldingRange]:
    """Every branch of a tree overview folds."""
    from loom.lsp.features import decorations

    doc = ls.doc(params.text_document.uri)
    return decorations.lsp_folds(ls.docs, doc) if doc else []


async def _token_data(ls: LoomServer, doc: OpenDoc) -> list[int]:
    """The document's tokens: kept per text revision (editors ask again and again), and
    computed in slices that let hovers and keystrokes in between (a long buffer)."""
    from loom.lsp.features import decorations, probabilities
    from loom.store import node_tokens

    key = (doc.session.version, id(doc.session.segments), ls.settings.probabilities,
           node_tokens.epoch())
    data = ls.semantic_results.cached(doc.uri, key)
    if data is None:
        if ls.settings.probabilities:
            data = probabilities.semantic_tokens(ls.docs, doc)
        else:
            data = await decorations.semantic_tokens_async(ls.docs, doc)
        ls.semantic_results.keep(doc.uri, key, data)
    return data


@server.feature(lsp.TEXT_DOCUMENT_SEMANTIC_TOKENS_FULL, LEGEND)
@guard(lsp.SemanticTokens(data=[]))
async def semantic_tokens(ls: LoomServer, params: lsp.SemanticTokensParams
                          ) -> lsp.SemanticTokens:
    doc = ls.doc(params.text_document.uri)
    if doc is None:
        return lsp.SemanticTokens(data=[])
    return ls.semantic_results.lsp_full(doc.uri, await _token_data(ls, doc))


@server.feature(lsp.TEXT_DOCUMENT_SEMANTIC_TOKENS_FULL_DELTA, LEGEND)
@guard(lsp.SemanticTokens(data=[]))
async def semantic_tokens_delta(ls: LoomServer, params: lsp.SemanticTokensDeltaParams
                                ) -> lsp.SemanticTokens | lsp.SemanticTokensDelta:
    """Typing changes a few tokens of a long buffer: send only those."""
    doc = ls.doc(params.text_document.uri)
    if doc is None:
        return lsp.SemanticTokens(data=[])
    return ls.semantic_results.lsp_delta(doc.uri, params.previous_result_id,
                                         await _token_data(ls, doc))


@server.feature(lsp.TEXT_DOCUMENT_CODE_ACTION, lsp.CodeActionOptions(
    code_action_kinds=[lsp.CodeActionKind.RefactorRewrite, lsp.CodeActionKind.QuickFix]))
@guard([])
def code_action(ls: LoomServer, params: lsp.CodeActionParams) -> list[lsp.CodeAction]:
    """Branch from an alternative token (and continue), or split the node, at a model
    token; on a least likely span of scored text, branch with the model's choice."""
    from loom.lsp.features import probabilities

    doc = ls.doc(params.text_document.uri)
    if doc is None:
        return []
    return [*ls.scoring.code_actions(doc, params), *probabilities.code_actions(
        ls.docs, doc, params, ls.settings.alternative_continues)]


@server.feature(lsp.TEXT_DOCUMENT_INLINE_COMPLETION, lsp.InlineCompletionOptions())
async def inline_completion(ls: LoomServer, params: lsp.InlineCompletionParams
                            ) -> lsp.InlineCompletionList | None:
    """The path's continuations as ghost text at the end of the buffer (once an accept
    running there has settled)."""
    ls.ready()
    if not ls.settings.inline_suggestions:
        return None
    await ls.suggestions.settled(params.text_document.uri)
    return _inline_items(ls, params)


@guard(None)
def _inline_items(ls: LoomServer, params: lsp.InlineCompletionParams
                  ) -> lsp.InlineCompletionList | None:
    doc = ls.doc(params.text_document.uri)
    return ls.suggestions.inline_list(doc, params.position) if doc else None


@server.feature(lsp.TEXT_DOCUMENT_INLAY_HINT)
@guard([])
def inlay_hint(ls: LoomServer, params: lsp.InlayHintParams) -> list[lsp.InlayHint]:
    from loom.lsp.features import decorations

    doc = ls.doc(params.text_document.uri)
    if doc is None or not ls.settings.inlay_hints:
        return []
    return decorations.lsp_inlay_hints(ls.docs, doc, params.range,
                                       ls.settings.markers == "all")


# ── commands ────────────────────────────────────────────────────────────────
def _node_arg(ls: LoomServer, a: A.NodeArgs) -> str:
    """A command's node: given, or the one under the cursor (``line``/``character``)."""
    if a.node:
        return a.node
    doc = ls.doc(a.uri)
    if doc is not None and a.line is not None:
        node = ls.docs.node_at(doc, doc.session.doc.offset_at(a.line, a.character or 0))
        if node is not None:
            return node.id
    if doc is not None and doc.view.tip is not None:
        return doc.view.tip.id
    raise LoomError("NOT_FOUND", "no node given", "pass {uri, node} or {uri, line, character}")


@on.command("loom.continue", cancellable=True)
async def cmd_continue(ls: LoomServer, a: A.ContinueArgs) -> Result:
    asked, note = a.command()
    result = await ls.generation.continue_(a.uri, asked)
    if note and result.ok:  # a typo in the options, and how it was read
        result.text = note_first(result.text, note)
    return result


@on.command("loom.fill", cancellable=True)
async def cmd_fill(ls: LoomServer, a: A.FillArgs) -> Result:
    return await ls.filling.fill(a.uri, (a.line, a.character), (a.endLine, a.endCharacter),
                                 a.command())


@on.command("loom.branch")
async def cmd_branch(ls: LoomServer, a: A.NodeArgs) -> Result:
    return await ls.navigation.branch(a.uri, _node_arg(ls, a))


@on.command("loom.cycleSibling")
async def cmd_cycle(ls: LoomServer, a: A.CycleArgs) -> Result:
    return await ls.navigation.cycle(a.uri, _node_arg(ls, a), a.delta)


@on.command("loom.siblings")
def cmd_siblings(ls: LoomServer, a: A.SiblingsArgs) -> Result:
    return ls.navigation.siblings(a.uri, _node_arg(ls, a), a.offset, a.limit)


@on.command("loom.switchTo")
async def cmd_switch_to(ls: LoomServer, a: A.NodeArgs) -> Result:
    return await ls.navigation.switch_to(a.uri, _node_arg(ls, a))


@on.command("loom.act")
async def cmd_act(ls: LoomServer, a: A.ActArgs) -> Result:
    node = None
    if a.node or a.line is not None:
        node = _node_arg(ls, a)
    elif a.action not in ("rename", "deleteTree", "undeleteTree") and a.uri:
        node = _node_arg(ls, a)  # the path's end
    return await ls.library.act(a.uri, node, a.action, a.value, a.tree)


@on.command("loom.models")
def cmd_models(ls: LoomServer, a: A.UriArgs) -> Result:
    from loom.lsp.features import models

    return models.models(ls, a.uri)


@on.command("loom.chooseModel")
async def cmd_choose_model(ls: LoomServer, a: A.ModelArgs) -> Result:
    from loom.lsp.features import models

    return await models.choose(ls, a.uri, a.profile, a.preset)


@on.command("loom.search")
def cmd_search(ls: LoomServer, a: A.SearchArgs) -> Result:
    return ls.library.search(a.query, a.tree, a.limit)


@server.feature(lsp.WORKSPACE_SYMBOL)
@guard([])
def workspace_symbol(ls: LoomServer, params: lsp.WorkspaceSymbolParams
                     ) -> list[lsp.WorkspaceSymbol]:
    """Trees by title, bookmarks, node ids and text matches, each opening its path."""
    return ls.library.workspace_symbols(params.query)


@on.command("loom.annotate")
async def cmd_annotate(ls: LoomServer, a: A.AnnotateArgs) -> Result:
    return await ls.navigation.annotate(a.uri, _node_arg(ls, a), a.text)


@on.command("loom.split")
async def cmd_split(ls: LoomServer, a: A.SplitArgs) -> Result:
    return await ls.probabilities.split(a.uri, a.node, a.at, a.line, a.character, a.alt,
                                        a.continue_, a.n, a.tokens)


@on.command("loom.suggest")
async def cmd_suggest(ls: LoomServer, a: A.ContinueArgs) -> Result:
    asked, note = a.command()
    result = await ls.suggestions.suggest(a.uri, asked)
    if note and result.ok:
        result.text = note_first(result.text, note)
    return result


@on.command("loom.acceptSuggestion")
async def cmd_accept_suggestion(ls: LoomServer, a: A.AcceptArgs) -> Result:
    return await ls.suggestions.accept(a.uri, a.node, a.text, a.inserted)


@on.command("loom.dismissSuggestion")
def cmd_dismiss_suggestion(ls: LoomServer, a: A.UriArgs) -> Result:
    return ls.suggestions.dismiss(a.uri)


@on.command("loom.toggleProbabilities")
def cmd_toggle_probabilities(ls: LoomServer, a: A.ToggleArgs) -> Result:
    return ls.probabilities.toggle(a.on)


@on.command("loom.toggleScores")
async def cmd_toggle_scores(ls: LoomServer, a: A.ScoreToggleArgs) -> Result:
    return await ls.scoring.toggle(a.uri or None, a.on)


@on.command("loom.run")
async def cmd_run(ls: LoomServer, a: A.RunArgs) -> Result:
    return await ls.command_lines.run_line(a.uri, a.line)


@on.command("loom.commit")
async def cmd_commit(ls: LoomServer, a: A.UriArgs) -> Result:
    doc = ls.doc(a.uri)
    if doc is None:
        from loom.commands.results import Result

        return Result.failure("NOT_FOUND", "no such loom document")
    return await ls.editing.commit_and_show(doc)


@on.command("loom.open")
async def cmd_open(ls: LoomServer, a: A.OpenArgs) -> Result:
    return await ls.navigation.open(a.tree, a.node)


@on.command("loom.cancel")
def cmd_cancel(ls: LoomServer, a: A.Args) -> dict[str, Any]:
    if ls.generation.cancel() or ls.scoring.cancel():
        return {"ok": True, "message": "✓ cancelling"}
    stopping = ls.exploring.stop_all()  # Neovim's way to cancel an exploration
    return {"ok": stopping, "message": "✓ stopping the exploration" if stopping
            else "nothing to cancel"}


@on.command("loom.explore")
async def cmd_explore(ls: LoomServer, a: A.ExploreArgs) -> Result:
    node = _node_arg(ls, a) if a.node or a.line is not None else None
    return await ls.exploring.start(a.uri, node, a.options)


@on.command("loom.stopExploring")
async def cmd_stop_exploring(ls: LoomServer, a: A.StopExploringArgs) -> Result:
    """The tree's exploration, shown here or run by another process (``→ explore end``
    reaches it through the change log)."""
    from loom.commands import ast
    from loom.commands.results import Result
    from loom.store import reader

    doc = ls.doc(a.uri) if a.uri else None
    actor = ls.actor(doc)
    tree = actor.tree
    if a.tree:
        tree = reader.find_any_tree(ls.app.ws, a.tree)
    if tree is None:
        return Result.failure("NOT_FOUND", "no tree given", "pass {uri} or {tree}")
    if ls.exploring.stop_tree(tree.id):
        return Result.success("✓ stopping the exploration")
    return await ls.execute(ast.Explore(end=True), type(actor)(actor.participant, tree))


@on.command("loom.askCollaborator")
async def cmd_ask_collaborator(ls: LoomServer, a: A.AskArgs) -> dict[str, Any]:
    return await ls.collaborator.ask(a.uri, a.message or None)


@on.command("loom.stopCollaborator")
def cmd_stop_collaborator(ls: LoomServer, a: A.MaybeUriArgs) -> dict[str, Any]:
    tree = None
    if a.uri:
        doc = ls.doc(a.uri)
        tree = doc.tree.id if doc is not None and doc.tree is not None else None
    stopped = ls.collaborator.stop(tree)
    return {"ok": stopped, "message": "✓ stopping the collaborator" if stopped
            else "the collaborator is not taking a turn"}


def serve(db: str | None = None, tcp: str | None = None,
          token_file: str | None = None, participant: str | None = None) -> int:
    """Serve on stdio, or on ``tcp`` (``[HOST:]PORT``) to one editor holding the token
    (``lsp/tcp.py``): generated and printed on stderr, or read from ``token_file``. The
    server acts as ``participant`` unless the editor's settings name one."""
    logging.basicConfig(level=logging.WARNING)
    # pygls, lsprotocol and the registrations stay for good: out of the collector's passes
    # while the rest of Loom is imported (35-40 ms of them) and after
    gc.freeze()
    server.db_arg = db
    server.participant_arg = participant
    if not tcp:
        server.start_io()
        return 0
    from loom.lsp import tcp as tcp_server

    host, port = tcp_server.parse_address(tcp)
    token = tcp_server.read_token_file(token_file) if token_file else tcp_server.new_token()
    def announce(bound_host: str, bound_port: int) -> None:
        tcp_server.announce(bound_host, bound_port, None if token_file else token, token_file)

    tcp_server.serve_tcp(server, host, port, token, on_listening=announce)
    return 0
