"""pytest-lsp sessions against the real server, with VS Code's and Neovim's capabilities.

The test client plays the editor's part: it keeps each open document's text, applies the
server's ``workspace/applyEdit`` and sends the resulting ``didChange`` back, as an editor
does.
"""

from __future__ import annotations

import asyncio
import os
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import pytest_lsp
from lsprotocol import types as lsp
from pytest_lsp import ClientServerConfig, LanguageClient, client_capabilities

from loom.lsp.positions import TextDoc
from tests.e2e.fake_provider import FakeProvider

SERVER = [sys.executable, "-m", "loom.cli", "serve"]
# No model unless a test configures one (the bundled local model would answer otherwise).
NO_MODEL_ENV = {**os.environ, "LOOM_SUBJECT": "none", "LOOM_NO_KEYRING": "1",
                "LOOM_SUMMARIES": "off"}


@dataclass
class Editor:
    """The editor side of the session: open documents and what the server told us."""

    client: LanguageClient
    encoding: str = "utf-16"
    texts: dict[str, str] = field(default_factory=dict)
    versions: dict[str, int] = field(default_factory=dict)
    messages: list[str] = field(default_factory=list)
    notifications: list[tuple[str, Any]] = field(default_factory=list)
    #: the URI of every workspace/applyEdit the server sent, in order
    edited: list[str] = field(default_factory=list)
    db: Path | None = None

    def open(self, uri: str, text: str) -> None:
        self.texts[uri] = text
        self.versions[uri] = 1
        self.client.text_document_did_open(lsp.DidOpenTextDocumentParams(
            text_document=lsp.TextDocumentItem(uri=uri, language_id="loom", version=1,
                                               text=text)))

    def doc(self, uri: str) -> TextDoc:
        return TextDoc(self.texts[uri], self.encoding)

    def pos(self, uri: str, offset: int) -> lsp.Position:
        return lsp.Position(*self.doc(uri).position_at(offset))

    def replace(self, uri: str, start: int, end: int, new: str) -> None:
        """Type: replace text[start:end] with ``new`` and tell the server."""
        doc = self.doc(uri)
        rng = lsp.Range(lsp.Position(*doc.position_at(start)), lsp.Position(*doc.position_at(end)))
        self.texts[uri] = doc.text[:start] + new + doc.text[end:]
        self.versions[uri] += 1
        self.client.text_document_did_change(lsp.DidChangeTextDocumentParams(
            text_document=lsp.VersionedTextDocumentIdentifier(uri=uri,
                                                              version=self.versions[uri]),
            content_changes=[lsp.TextDocumentContentChangePartial(range=rng, text=new)]))

    def append(self, uri: str, new: str) -> None:
        end = len(self.texts[uri])
        self.replace(uri, end, end, new)

    def apply_text_edits(self, uri: str, edits: list[lsp.TextEdit]) -> None:
        for e in sorted(edits, key=lambda e: (e.range.start.line, e.range.start.character),
                        reverse=True):
            doc = self.doc(uri)
            s = doc.offset_at(e.range.start.line, e.range.start.character)
            t = doc.offset_at(e.range.end.line, e.range.end.character)
            self.replace(uri, s, t, e.new_text)

    async def request(self, method: str, params: Any) -> Any:
        """A custom ``loom/…`` request, its answer as plain dicts and lists."""
        return plain(await self.client.protocol.send_request_async(method, params))

    async def wait_for(self, predicate, timeout: float = 10.0) -> None:  # type: ignore[no-untyped-def]
        deadline = asyncio.get_event_loop().time() + timeout
        while not predicate():
            if asyncio.get_event_loop().time() > deadline:
                raise AssertionError("timed out waiting for the server")
            await asyncio.sleep(0.05)


def plain(value: Any) -> Any:
    if hasattr(value, "_asdict"):
        return {k: plain(v) for k, v in value._asdict().items()}
    if isinstance(value, dict):
        return {k: plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [plain(v) for v in value]
    return value


def sql(db: Path, query: str, *args: Any) -> list[tuple[Any, ...]]:
    import sqlite3

    con = sqlite3.connect(db)
    try:
        rows = con.execute(query, args).fetchall()
        con.commit()
        return rows
    finally:
        con.close()


def demo_uri(db: Path) -> str:
    """The path view through the human's position in the demo tree."""
    tree, tip = sql(db, "SELECT p.tree, n.local_id FROM position p JOIN participant h "
                        "ON h.id = p.participant JOIN node n ON n.id = p.tip "
                        "WHERE h.name = 'human'")[0]
    return f"loom://path/{tree}/{tip}"


async def open_demo(editor: Editor) -> str:
    """Open the path through the human's position in the demo, as an editor does."""
    uri = demo_uri(editor.db)  # type: ignore[arg-type]
    res = await editor.client.workspace_text_document_content_async(
        lsp.TextDocumentContentParams(uri=uri))
    editor.open(uri, res.text)
    return uri


def write_fake_profile(config: Path, base_url: str, model: str, purpose: str) -> None:
    """A config file making the local fake server the model for ``purpose``."""
    config.write_text(
        "[profiles.fake]\n"
        'provider = "openai-compatible"\n'
        f'model = "{model}"\n'
        f'base_url = "{base_url}"\n'
        "backoff_base_s = 0.01\n"
        "max_attempts = 2\n"
        "\n[defaults]\n"
        f'{purpose} = "fake"\n', encoding="utf-8")


def fake_model_session(name: str, model: str, purpose: str,
                       **env: str) -> tuple[Any, Any]:
    """A test module's ``fake`` and ``client`` fixtures: a local server speaking OpenAI's wire
    protocol, configured (through a config file named after ``name``) as the model for
    ``purpose``, and a session with VS Code's and Neovim's capabilities against a server
    that uses it. Assign both at module level: ``fake, client = fake_model_session(...)``."""
    config = Path(tempfile.gettempdir()) / f"loom-lsp-{name}-{os.getpid()}.toml"
    server_env = {**os.environ, "LOOM_CONFIG": str(config),
                  "LOOM_API_KEY": "sk-test-not-a-secret", "LOOM_NO_KEYRING": "1",
                  "LOOM_SUMMARIES": "off", **env}

    @pytest.fixture
    def fake() -> Iterator[FakeProvider]:
        with FakeProvider() as server:
            write_fake_profile(config, server.openai_base_url, model, purpose)
            yield server
        config.unlink(missing_ok=True)

    @pytest_lsp.fixture(config=ClientServerConfig(server_command=SERVER,
                                                  server_env=server_env),
                        params=["visual_studio_code", "neovim"])
    async def client(request: Any, lsp_client: LanguageClient, db: Path,  # type: ignore[no-untyped-def]
                     fake: FakeProvider):
        async for _ in start_session(request, lsp_client, db):
            yield

    return fake, client


def make_demo(db: Path) -> None:
    from loom.demo import create_demo
    from loom.store.db import open_database
    from loom.store.workspace import Workspace

    create_demo(Workspace(open_database(db)))


@pytest.fixture
def db(tmp_path: Path) -> Path:
    path = tmp_path / "loom.db"
    make_demo(path)
    return path


@pytest.fixture
def editor(client: LanguageClient) -> Editor:
    return client.editor  # type: ignore[attr-defined,no-any-return]


@pytest_lsp.fixture(config=ClientServerConfig(server_command=SERVER, server_env=NO_MODEL_ENV),
                    params=["visual_studio_code", "neovim"])
async def client(request: Any, lsp_client: LanguageClient, db: Path):  # type: ignore[no-untyped-def]
    async for _ in start_session(request, lsp_client, db):
        yield


async def start_session(request: Any, lsp_client: LanguageClient, db: Path,  # type: ignore[no-untyped-def]
                        participant: str | None = None, workspace: Path | None = None,
                        experimental: dict[str, Any] | None = None):
    """Initialize a session as the named editor (acting as ``participant``, with
    ``workspace`` as its folder, declaring ``experimental`` capabilities as Loom's own
    extension does); yields once the editor is ready."""
    caps = client_capabilities(request.param)
    if experimental is not None:
        caps.experimental = experimental
    ws = caps.workspace or lsp.WorkspaceClientCapabilities()
    ws.text_document_content = lsp.TextDocumentContentClientCapabilities(
        dynamic_registration=False)
    caps.workspace = ws
    ed = Editor(lsp_client, db=db)

    @lsp_client.feature(lsp.WORKSPACE_APPLY_EDIT)
    def apply_edit(params: lsp.ApplyWorkspaceEditParams) -> lsp.ApplyWorkspaceEditResult:
        edit = params.edit
        for change in edit.document_changes or []:
            if isinstance(change, lsp.TextDocumentEdit):
                ed.edited.append(change.text_document.uri)
                ed.apply_text_edits(change.text_document.uri, list(change.edits))
        for uri, edits in (edit.changes or {}).items():
            ed.edited.append(uri)
            ed.apply_text_edits(uri, list(edits))
        return lsp.ApplyWorkspaceEditResult(applied=True)

    @lsp_client.feature(lsp.WORKSPACE_TEXT_DOCUMENT_CONTENT_REFRESH)
    def refresh(params: Any) -> None:
        ed.notifications.append(("refresh", params))

    for method in (lsp.WORKSPACE_CODE_LENS_REFRESH, lsp.WORKSPACE_SEMANTIC_TOKENS_REFRESH,
                   lsp.WORKSPACE_INLAY_HINT_REFRESH):
        def record(params: Any, method: str = method) -> None:
            ed.notifications.append((method, params))

        lsp_client.feature(method)(record)

    @lsp_client.feature("loom/documentChanged")
    def changed(params: Any) -> None:
        ed.notifications.append(("loom/documentChanged", params))

    @lsp_client.feature("loom/status")
    def status(params: Any) -> None:
        ed.notifications.append(("loom/status", params))

    @lsp_client.feature("loom/clean")
    def clean(params: Any) -> None:
        ed.notifications.append(("loom/clean", params))

    @lsp_client.feature("loom/treesChanged")
    def trees_changed(params: Any) -> None:
        ed.notifications.append(("loom/treesChanged", params))

    @lsp_client.feature("loom/exploring")
    def exploring(params: Any) -> None:
        ed.notifications.append(("loom/exploring", params))

    options: dict[str, Any] = {"database": str(db), "documentProvider": "textDocumentContent",
                               "watchInterval": 0.2}
    if participant is not None:
        options["participant"] = participant
    folders = None
    if workspace is not None:
        workspace.mkdir(parents=True, exist_ok=True)
        folders = [lsp.WorkspaceFolder(uri=workspace.as_uri(), name=workspace.name)]
    result = await lsp_client.initialize_session(lsp.InitializeParams(
        capabilities=caps, workspace_folders=folders, initialization_options=options))
    ed.server_capabilities = result.capabilities  # type: ignore[attr-defined]
    pe = result.capabilities.position_encoding
    ed.encoding = str(pe) if pe else "utf-16"
    ed.client_name = request.param  # type: ignore[attr-defined]
    lsp_client.editor = ed  # type: ignore[attr-defined]
    yield
    await lsp_client.shutdown_session()
