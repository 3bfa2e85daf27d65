"""``loom mcp`` on stdio (an MCP client starts it) or on streamable HTTP.

HTTP listens on 127.0.0.1 unless told otherwise and, as ``loom serve --tcp``, demands a
token: every request carries ``Authorization: Bearer TOKEN`` (generated at each start and
printed on stderr, or read from ``--token-file``, a file only its owner can read). A
request without it is answered 401 before the MCP layer sees it. The SDK's DNS-rebinding
protection (Host and Origin checked) stays on for loopback.
"""

from __future__ import annotations

import hmac
from typing import Any

import anyio

from loom.mcp_server.server import LoomMcpServer

PATH = "/mcp"


async def serve_stdio(mcp: LoomMcpServer) -> None:
    """The SDK's stdio server over Loom's checked lines (``wire.py``): a malformed request
    is answered with a JSON-RPC error instead of dropped."""
    import mcp_types
    from mcp.server.stdio import stdio_server
    from mcp.shared.message import SessionMessage

    from loom.mcp_server import wire

    early, answers = anyio.create_memory_object_stream[dict[str, Any]](64)

    async def answer(err: dict[str, Any]) -> None:
        await early.send(err)

    with wire.claimed_stdin() as raw:
        stdin = wire.lines(anyio.wrap_file(raw), answer)
        async with stdio_server(stdin=stdin) as (read, write), \
                anyio.create_task_group() as tasks:  # type: ignore[arg-type]

            async def send_answers() -> None:
                async for err in answers:
                    message = mcp_types.jsonrpc_message_adapter.validate_python(err)
                    await write.send(SessionMessage(message))

            tasks.start_soon(mcp.watch)
            tasks.start_soon(send_answers)
            await mcp.server.run(read, write, mcp.initialization_options())
            tasks.cancel_scope.cancel()


class TokenGate:
    """ASGI: HTTP requests without ``Authorization: Bearer <token>`` get 401."""

    def __init__(self, app: Any, token: str) -> None:
        self.app, self.token = app, token.encode()

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "http" and not self._holds_token(scope):
            body = (b'{"error": "unauthorized", "error_description": "send the token that '
                    b'loom mcp printed: Authorization: Bearer TOKEN"}')
            await send({"type": "http.response.start", "status": 401, "headers": [
                (b"content-type", b"application/json"),
                (b"www-authenticate", b'Bearer realm="loom"'),
                (b"content-length", str(len(body)).encode())]})
            await send({"type": "http.response.body", "body": body})
            return
        await self.app(scope, receive, send)

    def _holds_token(self, scope: dict[str, Any]) -> bool:
        for name, value in scope.get("headers", []):
            if name.lower() == b"authorization":
                scheme, _, given = value.partition(b" ")
                return scheme.lower() == b"bearer" and hmac.compare_digest(given.strip(),
                                                                           self.token)
        return False


def http_app(mcp: LoomMcpServer, host: str, token: str) -> Any:
    app = mcp.server.streamable_http_app(streamable_http_path=PATH, host=host)
    return TokenGate(app, token)


async def serve_http(mcp: LoomMcpServer, host: str, port: int, token: str,
                     token_file: str | None) -> None:
    import uvicorn

    config = uvicorn.Config(http_app(mcp, host, token), host=host, port=port,
                            log_level="warning", lifespan="on")
    server = uvicorn.Server(config)
    async with anyio.create_task_group() as tasks:
        tasks.start_soon(mcp.watch)

        async def announce() -> None:
            while not server.started:
                await anyio.sleep(0.05)
            bound = port
            for s in server.servers:
                for sock in s.sockets:
                    bound = sock.getsockname()[1]
            _announce(host, bound, None if token_file else token, token_file)

        tasks.start_soon(announce)
        await server.serve()
        tasks.cancel_scope.cancel()


def _announce(host: str, port: int, token: str | None, token_file: str | None) -> None:
    from loom.lsp.tcp import announce

    announce(host, port, token, token_file, prog="loom mcp", url=PATH,
             sending="clients send it as the header Authorization: Bearer TOKEN; any other "
                     "request is refused")
