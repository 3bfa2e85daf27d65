"""The real server over stdio, started, timed and stopped the way the LSP benchmarks all
do it."""

from __future__ import annotations

import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from lsprotocol import types as lsp
from pygls.lsp.client import LanguageClient


async def start_server(db: Path, name: str = "bench",
                       prepare: Callable[[LanguageClient], None] | None = None,
                       env: dict[str, Any] | None = None) -> LanguageClient:
    """``loom serve`` on ``db``, initialized with UTF-16 positions (as VS Code asks);
    ``prepare(client)`` runs before the server is spawned."""
    client = LanguageClient(name, "1")
    if prepare is not None:
        prepare(client)
    await client.start_io(sys.executable, "-m", "loom.cli", "serve", env=env)
    await client.initialize_async(lsp.InitializeParams(
        capabilities=lsp.ClientCapabilities(
            general=lsp.GeneralClientCapabilities(position_encodings=["utf-16"])),
        initialization_options={"database": str(db)}))
    client.initialized(lsp.InitializedParams())
    return client


async def stop_server(client: LanguageClient) -> None:
    """Shut the server down as an editor does."""
    await client.shutdown_async(None)
    client.exit(None)
    await client.stop()


async def timed(fn: Callable[[int], Awaitable[object]], n: int) -> list[float]:
    """Milliseconds of each of ``n`` awaited calls ``fn(0)`` … ``fn(n - 1)``."""
    out = []
    for i in range(n):
        t = time.perf_counter()
        await fn(i)
        out.append((time.perf_counter() - t) * 1000)
    return out
