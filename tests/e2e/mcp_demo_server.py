"""An MCP server for the collaborator's tests, written with the official SDK's ``MCPServer``.

``python mcp_demo_server.py`` serves over stdio; ``python mcp_demo_server.py http PORT``
over streamable HTTP on 127.0.0.1. Every call appends ``{"tool", "args"}`` as a JSON line
to ``$LOOM_TEST_MCP_LOG``, so a test sees what really arrived.
"""

from __future__ import annotations

import json
import os
import sys
import time

from mcp.server import MCPServer
from mcp.server.mcpserver import Context, Image

# the smallest valid PNG: one transparent pixel
PIXEL = bytes.fromhex(
    "89504e470d0a1a0a0000000d49484452000000010000000108060000001f15c489"
    "0000000d4944415478da63f8ffff3f0005fe02fea7d6a4ea0000000049454e44ae426082")

srv = MCPServer("loom-demo")


def _log(tool: str, args: dict[str, object]) -> None:
    path = os.environ.get("LOOM_TEST_MCP_LOG")
    if path:
        with open(path, "a", encoding="utf-8") as fh:
            fh.write(json.dumps({"tool": tool, "args": args}) + "\n")


@srv.tool()
def echo_args(text: str, n: int = 1, loud: bool = False) -> str:
    """Repeat a text n times (louder when asked)."""
    _log("echo_args", {"text": text, "n": n, "loud": loud})
    out = text * n
    return out.upper() if loud else out


@srv.tool()
def pixel() -> Image:
    """A one-pixel PNG."""
    _log("pixel", {})
    return Image(data=PIXEL, format="png")


@srv.tool()
def fail(reason: str) -> str:
    """Always fails."""
    _log("fail", {"reason": reason})
    raise RuntimeError(reason)


@srv.tool()
def lines(count: int) -> str:
    """count numbered lines of text."""
    _log("lines", {"count": count})
    return "\n".join(f"line {i}: the quick brown fox jumps over the lazy dog" for i in
                     range(1, count + 1))


@srv.tool()
def slow(seconds: float) -> str:
    """Sleeps, then answers."""
    _log("slow", {"seconds": seconds})
    time.sleep(seconds)
    return "awake"


@srv.tool()
def whoami(ctx: Context) -> str:
    """What the request carried: the Authorization header, the TOKEN variable."""
    _log("whoami", {})
    headers = ctx.headers or {}
    return (f"authorization={headers.get('authorization', '-')} "
            f"token={os.environ.get('TOKEN', '-')}")


if __name__ == "__main__":
    if len(sys.argv) > 2 and sys.argv[1] == "http":
        srv.run("streamable-http", host="127.0.0.1", port=int(sys.argv[2]))
    else:
        srv.run()
