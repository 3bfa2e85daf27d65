"""The stdio wire under the SDK: every line read and checked before the SDK sees it, so
every request whose id can be read is answered.

The SDK's stdio reader drops a line it cannot validate (broken JSON, ``params`` that are
not an object, a lone UTF-16 surrogate that pydantic refuses), and the client waits
forever. Here, as the language server does (``lsp/rpc.py``):

- ``-32700`` parse error (id null): not UTF-8, not JSON;
- ``-32600`` invalid request: not a message object, a batch (MCP has none since
  2025-06-18), an id that is not an integer or a string, no ``jsonrpc: "2.0"``;
- ``-32602`` invalid params: ``params`` that are not an object.

A lone surrogate (which JSON lets a client send and no database or UTF-8 stream can hold)
is replaced with U+FFFD and the message goes on. Notifications are never answered.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import logging
import os
import re
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from typing import Any, BinaryIO

log = logging.getLogger(__name__)

PARSE_ERROR = -32700
INVALID_REQUEST = -32600
INVALID_PARAMS = -32602

_ESCAPED_SURROGATE = re.compile(r"\\u[dD][89a-fA-F]")
_SURROGATE = re.compile("[\ud800-\udfff]")


@dataclass(frozen=True)
class Checked:
    """One line's fate: ``line`` to hand to the SDK, or ``errors`` to answer at once
    (or neither: a blank line, or a notification that is dropped)."""

    line: str | None = None
    errors: tuple[dict[str, Any], ...] = ()


def _answer(msg_id: Any, code: int, message: str) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": msg_id, "error": {"code": code, "message": message}}


def _error(msg_id: Any, code: int, message: str) -> Checked:
    return Checked(errors=(_answer(msg_id, code, message),))


def _kind(value: Any) -> str:
    return {dict: "an object", list: "an array", str: "a string", bool: "a boolean",
            type(None): "null"}.get(type(value), "a number")


def _valid_id(value: Any) -> bool:
    return isinstance(value, str) or (isinstance(value, int) and not isinstance(value, bool))


def _repair(value: Any) -> tuple[Any, int]:
    """``value`` with each lone surrogate in its strings (keys too) replaced by U+FFFD."""
    if isinstance(value, str):
        return _SURROGATE.subn("\ufffd", value)
    if isinstance(value, list):
        pairs = [_repair(v) for v in value]
        return [v for v, _ in pairs], sum(n for _, n in pairs)
    if isinstance(value, dict):
        out, total = {}, 0
        for key, item in value.items():
            (k, a), (v, b) = _repair(key), _repair(item)
            out[k] = v
            total += a + b
        return out, total
    return value, 0


def check(raw: bytes) -> Checked:
    """What to do with one line the client sent."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as err:
        return _error(None, PARSE_ERROR, f"Parse error: the message is not UTF-8 "
                                         f"(byte {err.start})")
    if not text.strip():
        return Checked()
    try:
        data = json.loads(text)
    except RecursionError:
        return _error(None, PARSE_ERROR, "Parse error: the message is nested too deeply")
    except ValueError as err:
        return _error(None, PARSE_ERROR, f"Parse error: {err}")
    repaired = 0
    if _ESCAPED_SURROGATE.search(text):
        data, repaired = _repair(data)
    if isinstance(data, list):
        return _batch(data)
    if not isinstance(data, dict):
        return _error(None, INVALID_REQUEST,
                      f"Invalid request: a message is a JSON object, not {_kind(data)}")
    has_id, msg_id = "id" in data, data.get("id")
    is_request = has_id and "method" in data
    if has_id and not _valid_id(msg_id) and "method" in data:
        return _error(None, INVALID_REQUEST, "Invalid request: id must be an integer or a "
                                             f"string, not {_kind(msg_id)}")
    if data.get("jsonrpc") != "2.0":
        if is_request:
            return _error(msg_id, INVALID_REQUEST, 'Invalid request: jsonrpc must be "2.0"')
        log.warning("loom mcp: dropped a message without jsonrpc 2.0")
        return Checked()
    if "method" in data and not isinstance(data["method"], str):
        if has_id:
            return _error(msg_id, INVALID_REQUEST, "Invalid request: method must be a string")
        return Checked()
    params = data.get("params")
    if "method" in data and params is not None and not isinstance(params, dict):
        if is_request:
            return _error(msg_id, INVALID_PARAMS, f"Invalid params for {data['method']}: "
                                                  f"params must be an object, not "
                                                  f"{_kind(params)}")
        log.warning("loom mcp: dropped %s: params are %s", data["method"], _kind(params))
        return Checked()
    if repaired:
        log.warning("loom mcp: replaced %d lone UTF-16 surrogate(s) in %s with U+FFFD",
                    repaired, data.get("method"))
        return Checked(line=json.dumps(data, ensure_ascii=False))
    return Checked(line=text)


def _batch(items: list[Any]) -> Checked:
    why = "Invalid request: MCP has no batches; send each message on its own line"
    if not items:
        return _error(None, INVALID_REQUEST, why)
    # one answer per request in it, each on its own line; notifications get none
    return Checked(errors=tuple(
        _answer(item.get("id") if isinstance(item, dict) and _valid_id(item.get("id"))
                else None, INVALID_REQUEST, why)
        for item in items
        if not (isinstance(item, dict) and "method" in item and "id" not in item)))


@contextlib.contextmanager
def claimed_stdin() -> Iterator[BinaryIO]:
    """The client's wire on a private descriptor while fd 0 reads the null device, so a
    child process or a stray read gets EOF and not the client's messages (as the SDK's own
    stdio transport does); fd 0 restored at the end."""
    private = fcntl.fcntl(0, fcntl.F_DUPFD_CLOEXEC, 3)
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)
    try:
        # never closed: a worker thread may still block reading it after the end
        yield os.fdopen(private, "rb", closefd=False)
    finally:
        os.dup2(private, 0)


async def lines(stdin: Any, answer: Any) -> AsyncIterator[str]:
    """The lines of ``stdin`` (an anyio binary file) the SDK may read; every other line's
    answers go to ``answer`` (an async callable taking a JSON-RPC error dict)."""
    async for raw in stdin:
        checked = check(raw)
        for err in checked.errors:
            await answer(err)
        if checked.line is not None:
            yield checked.line
