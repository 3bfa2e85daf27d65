"""The JSON-RPC layer's pure parts: frames, strict params, answers to garbage (no
subprocess; ``tests/lsp/test_answered.py`` drives the real server)."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from lsprotocol import types as lsp

from loom.lsp.rpc import (
    AnsweringProtocol,
    AnsweringServer,
    FrameError,
    describe,
    loom_converter,
    read_frame,
)


def _reader(data: bytes) -> asyncio.StreamReader:
    r = asyncio.StreamReader()
    r.feed_data(data)
    r.feed_eof()
    return r


async def _frames(data: bytes) -> list[Any]:
    r, out = _reader(data), []
    while (f := await read_frame(r)) is not None:
        out.append(str(f) if isinstance(f, FrameError) else f)
    return out


async def test_frames_headers_and_breakage() -> None:
    assert await _frames(b"Content-Length: 2\r\n\r\n{}Content-Length: 1\r\n\r\n1") == [
        b"{}", b"1"]
    # header names are case-insensitive, Content-Type is allowed, blank lines between frames
    assert await _frames(b"\r\ncontent-length: 2\r\nContent-Type: x\r\n\r\n[]") == [b"[]"]
    assert await _frames(b"Content-Type: x\r\n\r\n") == [
        "the frame has no Content-Length header"]
    assert await _frames(b"Content-Length: ten\r\n\r\n") == [
        "Content-Length is not a number"]
    assert await _frames(b"Content-Length: 5\r\n\r\n{}") == []  # the stream ended early


def _structure(position: Any) -> Any:
    return loom_converter().structure({
        "jsonrpc": "2.0", "id": 1, "method": "textDocument/hover",
        "params": {"textDocument": {"uri": "loom://x"}, "position": position}},
        lsp.HoverRequest)


@pytest.mark.parametrize(("position", "message"), [
    ({"line": "3", "character": 0}, "params.position.line: expected an integer, got a string"),
    ({"line": 0, "character": 1.5}, "params.position.character: expected an integer, got the "
                                    "number 1.5"),
    ({"line": True, "character": 0}, "params.position.line: expected an integer, got a "
                                     "boolean"),
    ({"line": -1, "character": 0}, "params.position: Position.line should be in range"),
    ("0:0", "params.position: expected an object"),
    ({"character": 0}, "params.position.line: required"),
])
def test_params_are_read_strictly(position: Any, message: str) -> None:
    with pytest.raises(Exception) as info:
        _structure(position)
    assert describe(info.value).startswith(message)


def test_good_params_still_read() -> None:
    assert _structure({"line": 2, "character": 3}).params.position == lsp.Position(2, 3)
    cmd = loom_converter().structure({"jsonrpc": "2.0", "id": "a", "method":
                                      "workspace/executeCommand", "params": {
                                          "command": "loom.run",
                                          "arguments": [{"uri": "u", "line": 1}]}},
                                     lsp.ExecuteCommandRequest)
    assert cmd.params.arguments == ({"uri": "u", "line": 1},)


class _Writer:
    def __init__(self) -> None:
        self.sent: list[Any] = []

    def write(self, data: bytes) -> None:
        self.sent.append(json.loads(data.split(b"\r\n\r\n", 1)[1]))

    def close(self) -> None:
        pass


def _protocol() -> tuple[AnsweringProtocol, _Writer]:
    server = AnsweringServer("t", "0", protocol_cls=AnsweringProtocol,
                             converter_factory=loom_converter)
    writer = _Writer()
    server.protocol.set_writer(writer)
    return server.protocol, writer


@pytest.mark.parametrize(("body", "code", "msg_id"), [
    (b"{", -32700, None),
    (b'"\xff"', -32700, None),
    (b"[]", -32600, None),
    (b"7", -32600, None),
    (b'{"jsonrpc": "2.0", "id": [1], "method": "x"}', -32600, None),
    (b'{"jsonrpc": "2.0", "id": 4, "method": "x", "params": 3}', -32600, 4),
    (b'{"jsonrpc": "2.0", "id": 5, "method": "textDocument/hover", "params": {}}', -32002, 5),
])
def test_garbage_is_answered(body: bytes, code: int, msg_id: Any) -> None:
    protocol, writer = _protocol()
    protocol.receive(body)
    assert len(writer.sent) == 1
    assert writer.sent[0]["id"] == msg_id
    assert writer.sent[0]["error"]["code"] == code


def test_batches_get_an_error_per_request_and_notifications_none() -> None:
    protocol, writer = _protocol()
    protocol.receive(json.dumps([{"jsonrpc": "2.0", "id": 1, "method": "a"},
                                 {"jsonrpc": "2.0", "method": "b"}, 3]).encode())
    assert [(m["id"], m["error"]["code"]) for m in writer.sent[0]] == [(1, -32600),
                                                                       (None, -32600)]
    protocol.receive(json.dumps([{"jsonrpc": "2.0", "method": "b"}]).encode())
    assert len(writer.sent) == 1


def test_notifications_are_never_answered() -> None:
    protocol, writer = _protocol()
    for body in [b'{"jsonrpc": "2.0", "method": "textDocument/didOpen", "params": "x"}',
                 b'{"jsonrpc": "1.0", "method": "x"}',
                 b'{"jsonrpc": "2.0", "method": "textDocument/didOpen", "params": {}}']:
        protocol.receive(body)
    assert writer.sent == []
