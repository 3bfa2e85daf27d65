"""The real server over stdio, started the way the LSP benchmarks all start it."""

from __future__ import annotations

import sys
from pathlib import Path

from lsprotocol import types as lsp
from pygls.lsp.client import LanguageClient


async def start_server(db: Path, name: str = "bench") -> LanguageClient:
    """``loom serve`` on ``db``, initialized with UTF-16 positions (as VS Code asks)."""
    client = LanguageClient(name, "1")
    await client.start_io(sys.executable, "-m", "loom.cli", "serve")
    await client.initialize_async(lsp.InitializeParams(
        capabilities=lsp.ClientCapabilities(
            general=lsp.GeneralClientCapabilities(position_encodings=["utf-16"])),
        initialization_options={"database": str(db)}))
    client.initialized(lsp.InitializedParams())
    return client
