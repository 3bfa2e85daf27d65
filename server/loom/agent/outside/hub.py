"""The connections to the configured MCP servers, on an event loop of their own.

The SDK's sessions live in anyio task groups that must be entered and left by one task in
one loop, and a collaborator's turns run in whatever loop the front end has (``loom
agent`` runs one, the language server another; a test a new one per turn). So the hub
runs a loop on a daemon thread: each server is a task there that connects (starts the
program, or opens the HTTP session), lists its tools and stays connected until
:meth:`Hub.close`; a call is handed to that loop and awaited from the caller's
(``asyncio.wrap_future``), with a timeout.

Nothing here raises into the agent: a server that does not start, stops, or fails a call
is a :class:`Failure` the caller turns into a ``✗`` line. A server's stderr goes to a file
of the hub's own (its last lines explain a failed start), not to the terminal or the
language server's stream.
"""

from __future__ import annotations

import asyncio
import base64
import concurrent.futures
import contextlib
import logging
import tempfile
import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from loom.agent.outside.config import McpServerConfig
from loom.agent.outside.schema import ToolSpec
from loom.llm.base import ImagePart
from loom.llm.media import MEDIA_TYPES
from loom.redact import redact, register_secret
from loom.render.text import thousands

log = logging.getLogger(__name__)

IMAGE_MAX_BYTES = 5_000_000  # what the hosted APIs take inline
_EXT = {"image/png": ".png", "image/jpeg": ".jpg", "image/gif": ".gif", "image/webp": ".webp"}


@dataclass
class Failure:
    """A server or a call that failed: ``code`` is a seed error code."""

    message: str
    hint: str | None = None
    code: str = "MODEL_ERROR"


@dataclass
class Reply:
    """A tool's answer: its text, images (files of the hub's) and whether the tool said
    it failed (``isError``)."""

    text: str
    images: list[ImagePart] = field(default_factory=list)
    is_error: bool = False
    notes: list[str] = field(default_factory=list)  # images not attached, and why


@dataclass
class _Server:
    config: McpServerConfig
    ready: threading.Event = field(default_factory=threading.Event)
    client: Any = None
    tools: list[ToolSpec] = field(default_factory=list)
    failure: Failure | None = None
    stop: asyncio.Event | None = None
    task: concurrent.futures.Future[None] | None = None
    errlog: Path | None = None


def describe(err: BaseException) -> str:
    """An exception in a line: the first leaf of an exception group, by type and text."""
    while isinstance(err, BaseExceptionGroup) and err.exceptions:
        err = err.exceptions[0]
    text = " ".join(str(err).split()) or type(err).__name__
    return redact(text if len(text) <= 300 else text[:299] + "…")


class Hub:
    """The MCP servers of one process (or one collaborator), connected in the
    background."""

    def __init__(self, servers: Mapping[str, McpServerConfig]) -> None:
        self.servers = {name: _Server(cfg) for name, cfg in servers.items()}
        for cfg in servers.values():
            for secret in cfg.secrets():
                register_secret(secret)
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._dir: tempfile.TemporaryDirectory[str] | None = None
        self._lock = threading.Lock()
        self._images = 0
        self.closed = False

    # -- lifecycle --
    def start(self) -> None:
        """Start connecting to every server (returns at once)."""
        with self._lock:
            if self._thread is not None or self.closed:
                return
            self._dir = tempfile.TemporaryDirectory(prefix="loom-mcp-")
            self._loop = asyncio.new_event_loop()
            self._thread = threading.Thread(target=self._loop.run_forever,
                                            name="loom-mcp", daemon=True)
            self._thread.start()
        for name, server in self.servers.items():
            server.errlog = Path(self._dir.name) / f"{name}.stderr"
            server.task = asyncio.run_coroutine_threadsafe(self._serve(server), self._loop)

    def wait_ready(self, timeout: float | None = None) -> None:
        """Block until every server is connected or has failed (a server still starting
        after its ``startup_timeout_s`` is given up on)."""
        self.start()
        for server in self.servers.values():
            limit = server.config.startup_timeout_s if timeout is None else timeout
            if not server.ready.wait(limit):
                server.failure = Failure(
                    f"the MCP server {server.config.name!r} did not start within "
                    f"{limit:g} s ({server.config.where()}){self._stderr_tail(server)}",
                    "check the command or URL in config.toml, or raise startup_timeout_s")
                server.ready.set()
                if server.task is not None:
                    server.task.cancel()

    async def ready(self) -> None:
        """:meth:`wait_ready`, from a loop."""
        await asyncio.to_thread(self.wait_ready)

    def close(self) -> None:
        """Disconnect (a started program is stopped) and end the thread."""
        with self._lock:
            if self.closed:
                return
            self.closed = True
            loop, thread = self._loop, self._thread
        if loop is None or thread is None:
            return
        for server in self.servers.values():
            if server.stop is not None:
                loop.call_soon_threadsafe(server.stop.set)
        for server in self.servers.values():
            if server.task is not None:
                with contextlib.suppress(BaseException):
                    server.task.result(timeout=10)
        loop.call_soon_threadsafe(loop.stop)
        thread.join(timeout=10)
        with contextlib.suppress(Exception):
            loop.close()
        if self._dir is not None:
            with contextlib.suppress(Exception):
                self._dir.cleanup()

    # -- on the hub's loop --
    def _client(self, cfg: McpServerConfig, errlog: Any) -> tuple[Any, Any]:
        """The SDK's client for ``cfg`` and the HTTP client it uses (None for stdio)."""
        from mcp import Client, StdioServerParameters
        from mcp.client.stdio import stdio_client

        if cfg.command is not None:
            params = StdioServerParameters(
                command=cfg.command[0], args=cfg.command[1:],
                env={k: v.get_secret_value() for k, v in cfg.env.items()} or None,
                cwd=cfg.cwd)
            return Client(stdio_client(params, errlog=errlog)), None
        from mcp.client.streamable_http import streamable_http_client
        from mcp.shared._httpx_utils import create_mcp_http_client

        http = create_mcp_http_client(
            headers={k: v.get_secret_value() for k, v in cfg.headers.items()} or None)
        return Client(streamable_http_client(cfg.url or "", http_client=http)), http

    async def _serve(self, server: _Server) -> None:
        cfg = server.config
        server.stop = asyncio.Event()
        errlog = None
        http = None
        try:
            if cfg.command is not None and server.errlog is not None:
                errlog = server.errlog.open("w", encoding="utf-8", errors="replace")
            client, http = self._client(cfg, errlog)
            async with contextlib.AsyncExitStack() as stack:
                if http is not None:
                    await stack.enter_async_context(http)
                await stack.enter_async_context(client)
                server.tools = await self._list(cfg.name, client)
                server.client = client
                server.ready.set()
                await server.stop.wait()
        except ImportError:
            server.failure = Failure(
                "the MCP SDK is not installed, so the MCP servers of config.toml cannot be "
                "used", "install Loom with its mcp extra: pip install 'loom-lsp[mcp]'")
        except (Exception, asyncio.CancelledError) as err:
            if server.client is None and server.failure is None:
                server.failure = Failure(
                    f"the MCP server {cfg.name!r} did not start ({cfg.where()}): "
                    f"{describe(err)}{self._stderr_tail(server)}",
                    "check [mcp.servers." + cfg.name + "] in config.toml (run the command "
                    "yourself to see it start); Loom's own commands still work")
            elif server.failure is None:
                server.failure = Failure(f"the MCP server {cfg.name!r} stopped: "
                                         f"{describe(err)}", "its tools are unavailable "
                                         "until the collaborator is started again")
            if isinstance(err, asyncio.CancelledError):
                raise
        finally:
            server.client = None
            if server.failure is None and not self.closed:
                server.failure = Failure(f"the MCP server {cfg.name!r} closed the connection",
                                         "its tools are unavailable until the collaborator "
                                         "is started again")
            server.ready.set()
            if errlog is not None:
                errlog.close()

    @staticmethod
    async def _list(name: str, client: Any) -> list[ToolSpec]:
        tools: list[ToolSpec] = []
        cursor = None
        for _ in range(50):
            page = await client.list_tools(cursor=cursor)
            tools += [ToolSpec(name, t.name, t.description or "", dict(t.input_schema or {}))
                      for t in page.tools]
            cursor = page.next_cursor
            if not cursor:
                break
        return tools

    def _stderr_tail(self, server: _Server) -> str:
        if server.errlog is None:
            return ""
        with contextlib.suppress(OSError):
            lines = [x for x in server.errlog.read_text(errors="replace").splitlines()
                     if x.strip()]
            if lines:
                return f"; its last words: {redact(lines[-1].strip())[:200]}"
        return ""

    # -- calls --
    def failure(self, name: str) -> Failure | None:
        server = self.servers.get(name)
        if server is None:
            return Failure(f"no MCP server {name!r} is configured", code="INVALID_SYNTAX")
        if not server.ready.is_set():
            return Failure(f"the MCP server {name!r} is still starting")
        if server.failure is not None:
            return server.failure
        if server.client is None:
            return Failure(f"the MCP server {name!r} is not connected")
        return None

    async def call(self, name: str, tool: str, args: dict[str, Any],
                   timeout: float | None = None) -> Reply | Failure:
        """Call ``tool`` of server ``name``: its reply, or why there is none."""
        failed = self.failure(name)
        if failed is not None:
            return failed
        server = self.servers[name]
        limit = timeout or server.config.timeout_s
        assert self._loop is not None
        future = asyncio.run_coroutine_threadsafe(
            server.client.call_tool(tool, args, read_timeout_seconds=limit), self._loop)
        try:
            result = await asyncio.wait_for(asyncio.wrap_future(future), limit + 2)
        except TimeoutError:
            future.cancel()
            return Failure(f"{name}.{tool} did not answer within {limit:g} s",
                           f"try again, or with less to do; timeout_s in [mcp.servers.{name}] "
                           "sets the limit")
        except asyncio.CancelledError:
            future.cancel()
            raise
        except Exception as err:
            again = self.failure(name)
            if again is not None:
                return again
            text = describe(err)
            if "timed out" in text.lower() or "timeout" in type(err).__name__.lower():
                return Failure(f"{name}.{tool} did not answer within {limit:g} s",
                               f"timeout_s in [mcp.servers.{name}] sets the limit")
            return Failure(f"{name}.{tool} failed: {text}")
        return self._reply(result)

    def _reply(self, result: Any) -> Reply:
        texts: list[str] = []
        images: list[ImagePart] = []
        notes: list[str] = []
        for block in result.content or []:
            kind = getattr(block, "type", "")
            if kind == "text":
                texts.append(block.text)
            elif kind == "image":
                part, note = self._image(block.data, block.mime_type)
                if part is not None:
                    images.append(part)
                else:
                    notes.append(note)
            elif kind == "audio":
                notes.append(f"[audio ({block.mime_type}) returned: not shown]")
            elif kind == "resource_link":
                texts.append(f"[resource {block.uri}" +
                             (f" — {block.description}]" if block.description else "]"))
            elif kind == "resource":
                res = block.resource
                text = getattr(res, "text", None)
                texts.append(text if text is not None else
                             f"[resource {res.uri} ({res.mime_type or 'binary'}): not shown]")
        if not texts and result.structured_content is not None:
            import json

            texts.append(json.dumps(result.structured_content, ensure_ascii=False, indent=1))
        # (a secret a tool echoes never reaches the record, the trace or a front end)
        return Reply(redact("\n".join(texts)), images, bool(result.is_error), notes)

    def _image(self, data: str, mime: str) -> tuple[ImagePart | None, str]:
        try:
            raw = base64.b64decode(data, validate=False)
        except (ValueError, TypeError):
            return None, f"[an image ({mime}) that could not be decoded]"
        if mime not in MEDIA_TYPES:
            return None, f"[an image ({mime}, {thousands(len(raw))} bytes): a type models " \
                         "are not sent]"
        if len(raw) > IMAGE_MAX_BYTES:
            return None, f"[an image ({mime}, {thousands(len(raw))} bytes): too large to " \
                         "send to the model]"
        assert self._dir is not None
        with self._lock:
            self._images += 1
            path = Path(self._dir.name) / f"image-{self._images}{_EXT.get(mime, '')}"
        path.write_bytes(raw)
        return ImagePart(source=str(path), media_type=mime, size=len(raw)), ""

    def tools(self) -> list[ToolSpec]:
        return [t for s in self.servers.values() if s.failure is None for t in s.tools]
