"""``loom serve --tcp``: the language server on a socket, for one editor that proves it
holds the token.

A socket is open to every program on the machine (and, bound beyond loopback, to the
network), and the server can read and write the user's trees and files, so:

- it binds 127.0.0.1 unless a host is given; a host that is not loopback is warned about
  loudly (the token is then the only protection, and the traffic is not encrypted);
- every connection must present the token before anything else is processed: its first
  message is ``initialize`` with ``initializationOptions.token`` (or ``…loom.token``).
  Anything else first (no token, a wrong one, another method, malformed or slow traffic)
  is answered with a JSON-RPC error and the connection is closed; the server itself is
  not touched, so a refused client cannot disturb the editor that is connected;
- the token is generated at each start (printed on stderr) or read from ``--token-file``,
  which must be a regular file only its owner can read or write.

The token is removed from the message before the language server sees it, so it is not in
its settings or logs. One editor is served at a time, as with pygls' own TCP server: when
its connection ends, the server stops.
"""

from __future__ import annotations

import asyncio
import contextlib
import hmac
import ipaddress
import json
import logging
import os
import re
import secrets
import socket
import stat
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pygls.server import JsonRPCServer

from loom.errors import LoomError
from loom.lsp.rpc import read_loop

log = logging.getLogger(__name__)

FIRST_MESSAGE_TIMEOUT_S = 10.0
MAX_FIRST_MESSAGE = 4 * 1024 * 1024  # an initialize is tens of KB; this is ample
MAX_HEADER_LINE = 1024
UNAUTHORIZED = -32001  # JSON-RPC: in the range reserved for implementation-defined errors
TOKEN_HINT = ('send the token as initializationOptions.token in "initialize": the one '
              "loom serve printed at start, or the contents of its --token-file")
_CONTENT_LENGTH = re.compile(rb"^Content-Length: *(\d+)\r\n$", re.IGNORECASE)


# ── address and token ────────────────────────────────────────────────────────


def parse_address(text: str) -> tuple[str, int]:
    """``PORT``, ``HOST:PORT`` or ``[IPv6]:PORT`` → (host, port); the host defaults to
    127.0.0.1."""
    host, sep, port = text.strip().rpartition(":")
    if not sep:
        host, port = "", text.strip()
    host = host.strip()
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    if not port.isdigit() or not 0 <= int(port) <= 65535:
        raise LoomError("INVALID_SYNTAX", f"--tcp {text!r}: {port!r} is not a port number",
                        "give [HOST:]PORT, e.g. --tcp 2087 or --tcp 127.0.0.1:2087")
    return host or "127.0.0.1", int(port)


def is_loopback(host: str) -> bool:
    """Does ``host`` name only this machine? A name counts when every address it resolves
    to is loopback; one that does not resolve does not count."""
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        pass
    try:
        infos = socket.getaddrinfo(host, None)
    except OSError:
        return False
    return bool(infos) and all(ipaddress.ip_address(i[4][0].split("%")[0]).is_loopback
                               for i in infos)


def new_token() -> str:
    """A fresh token: 256 random bits, URL-safe text."""
    return secrets.token_urlsafe(32)


def read_token_file(path: str | Path) -> str:
    """The token in ``path``, which must be a regular file of this user's that no one else
    can read or write (otherwise someone else could read the token, or replace it)."""
    p = Path(path).expanduser()
    try:
        info = p.stat()
    except FileNotFoundError:
        raise LoomError("NOT_FOUND", f"token file {p} does not exist") from None
    except OSError as err:
        raise LoomError("PERMISSION_DENIED", f"cannot read token file {p}: "
                        f"{err.strerror or err}") from None
    if not stat.S_ISREG(info.st_mode):
        raise LoomError("INVALID_SYNTAX", f"token file {p} is not a regular file")
    if hasattr(os, "getuid") and info.st_uid != os.getuid():
        raise LoomError("PERMISSION_DENIED", f"token file {p} belongs to another user",
                        "use a token file of your own")
    if info.st_mode & 0o077:
        raise LoomError("PERMISSION_DENIED",
                        f"token file {p} can be read or written by others "
                        f"(mode {stat.S_IMODE(info.st_mode):o})",
                        f"make it private: chmod 600 {p}")
    try:
        token = p.read_text(encoding="utf-8").strip()
    except (OSError, UnicodeDecodeError) as err:
        raise LoomError("PERMISSION_DENIED", f"cannot read token file {p}: {err}") from None
    if len(token) < 16:
        raise LoomError("INVALID_SYNTAX", f"token file {p} holds "
                        + ("no token" if not token else "a token shorter than 16 characters"),
                        "put a long random token in it, e.g. "
                        "python -c 'import secrets; print(secrets.token_urlsafe(32))'")
    return token


def announce(host: str, port: int, token: str | None, token_file: str | None, *,
             prog: str = "loom serve", url: str = "",
             sending: str = "an editor sends it as initializationOptions.token in "
                            "initialize; any other connection is refused") -> None:
    """Where the server listens and how to connect, on stderr; loudly when the host is
    reachable from other machines (``loom serve --tcp``, and ``loom mcp --http`` with its
    ``url`` path and how its clients send the token)."""
    where = f"[{host}]" if ":" in host else host
    place = f"http://{where}:{port}{url}" if url else f"{where}:{port}"
    lines = [f"{prog}: listening on {place}",
             f"{prog}: token from {token_file}" if token_file else f"{prog}: token {token}",
             f"{prog}: {sending}"]
    if not is_loopback(host):
        lines.append(f"⚠ {prog}: {host} is reachable from other machines: the token is "
                     "the only protection and the connection is not encrypted. Prefer "
                     "127.0.0.1 and an SSH tunnel.")
    sys.stderr.write("\n".join(lines) + "\n")
    sys.stderr.flush()


# ── the first message ────────────────────────────────────────────────────────


class Refused(Exception):
    """The first message does not authenticate; ``msg_id`` answers it when known."""

    def __init__(self, message: str, msg_id: Any = None) -> None:
        super().__init__(message)
        self.message = message
        self.msg_id = msg_id


async def read_frame(reader: asyncio.StreamReader) -> bytes:
    """One message's body (LSP base protocol: headers, an empty line, the body)."""
    length: int | None = None
    for _ in range(32):
        try:
            line = await reader.readuntil(b"\n")
        except asyncio.LimitOverrunError:
            raise Refused("a header line is too long") from None
        except asyncio.IncompleteReadError:
            raise Refused("the connection closed before a whole message arrived") from None
        if len(line) > MAX_HEADER_LINE:
            raise Refused("a header line is too long")
        if line in (b"\r\n", b"\n"):
            break
        match = _CONTENT_LENGTH.match(line)
        if match:
            length = int(match.group(1))
    else:
        raise Refused("too many header lines")
    if length is None:
        raise Refused("the message has no Content-Length header")
    if length > MAX_FIRST_MESSAGE:
        raise Refused(f"the first message is too large ({length:,} bytes)")
    try:
        return await reader.readexactly(length)
    except asyncio.IncompleteReadError:
        raise Refused("the connection closed before a whole message arrived") from None


def authenticate(body: bytes, token: str) -> dict[str, Any]:
    """The first message, without its token, when it is ``initialize`` with the right
    token; otherwise :class:`Refused`."""
    try:
        message = json.loads(body)
    except (ValueError, RecursionError):
        raise Refused("the first message is not JSON") from None
    if not isinstance(message, dict):
        raise Refused("the first message is not a JSON-RPC message")
    msg_id = message.get("id") if isinstance(message.get("id"), int | str) else None
    if message.get("method") != "initialize" or msg_id is None:
        raise Refused("the first message must be the initialize request, with the token",
                      msg_id)
    params = message.get("params")
    options = params.get("initializationOptions") if isinstance(params, dict) else None
    given = None
    holders = []
    if isinstance(options, dict):
        holders.append(options)
        if isinstance(options.get("loom"), dict):
            holders.append(options["loom"])
    for holder in holders:
        if isinstance(holder.get("token"), str):
            given = holder["token"]
    if given is None:
        raise Refused("this Loom server needs a token, and initialize has none", msg_id)
    if not hmac.compare_digest(given.encode("utf-8", "surrogatepass"), token.encode()):
        raise Refused("the token is not this server's", msg_id)
    for holder in holders:
        holder.pop("token", None)
    return message


def frame(message: dict[str, Any]) -> bytes:
    body = json.dumps(message).encode()
    return f"Content-Length: {len(body)}\r\n\r\n".encode() + body


async def refuse(writer: asyncio.StreamWriter, err: Refused) -> None:
    """Answer with a JSON-RPC error (``✗ PERMISSION_DENIED: …``) and close."""
    text = f"✗ PERMISSION_DENIED: {err.message}\n  hint: {TOKEN_HINT}"
    answer = {"jsonrpc": "2.0", "id": err.msg_id,
              "error": {"code": UNAUTHORIZED, "message": text}}
    with contextlib.suppress(Exception):
        writer.write(frame(answer))
        await writer.drain()
    writer.close()
    with contextlib.suppress(Exception):
        await writer.wait_closed()


class _Replay:
    """The reader the frame loop reads from: the (token-less) first message, then the socket."""

    def __init__(self, first: bytes, reader: asyncio.StreamReader) -> None:
        self._buffer = first
        self._reader = reader

    async def readline(self) -> bytes:
        if self._buffer:
            end = self._buffer.find(b"\n")
            end = len(self._buffer) if end < 0 else end + 1
            line, self._buffer = self._buffer[:end], self._buffer[end:]
            return line
        return await self._reader.readline()

    async def readexactly(self, n: int) -> bytes:
        if self._buffer:
            part, self._buffer = self._buffer[:n], self._buffer[n:]
            if len(part) == n:
                return part
            return part + await self._reader.readexactly(n - len(part))
        return await self._reader.readexactly(n)


# ── the server ───────────────────────────────────────────────────────────────


def serve_tcp(server: JsonRPCServer, host: str, port: int, token: str,
              on_listening: Callable[[str, int], None] | None = None) -> None:
    """Serve ``server`` on ``host:port`` to one authenticated editor (blocks until that
    editor's connection ends, or the server shuts down). ``on_listening`` gets the bound
    address (the real port when ``port`` is 0)."""
    # What pygls' start_tcp sets up, so that server.shutdown() stops this loop too.
    stop_event = threading.Event()
    server._stop_event = stop_event
    session: dict[str, bool] = {"active": False}

    async def connection(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        peer = writer.get_extra_info("peername")
        try:
            body = await asyncio.wait_for(read_frame(reader), FIRST_MESSAGE_TIMEOUT_S)
            message = authenticate(body, token)
            if session["active"]:
                raise Refused("another editor is connected to this server",
                              message.get("id"))
        except Refused as err:
            log.warning("refused a connection from %s: %s", peer, err.message)
            await refuse(writer, err)
            return
        except TimeoutError:
            log.warning("refused a connection from %s: no initialize in %.0f s", peer,
                        FIRST_MESSAGE_TIMEOUT_S)
            await refuse(writer, Refused("no initialize with the token arrived in time"))
            return
        session["active"] = True
        log.info("editor connected from %s", peer)
        server.protocol.set_writer(writer)  # type: ignore[arg-type]
        try:
            # Loom's own frame reader (lsp/rpc.py), as on stdio: garbage gets an answer
            await read_loop(stop_event, _Replay(frame(message), reader), server.protocol)
        finally:  # however the connection ended (a reset too), the server stops with it
            log.info("editor disconnected: stopping")
            server.shutdown()

    async def main() -> None:
        listener = await asyncio.start_server(connection, host, port)
        server._server = listener
        bound = listener.sockets[0].getsockname()
        if on_listening is not None:
            on_listening(host, int(bound[1]))
        async with listener:
            await listener.serve_forever()

    with contextlib.suppress(asyncio.CancelledError, KeyboardInterrupt):
        asyncio.run(main())
