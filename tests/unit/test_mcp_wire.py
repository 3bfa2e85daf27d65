"""``loom mcp``'s stdio lines checked before the SDK reads them: every request whose id
can be read gets a JSON-RPC error instead of silence (issue 44 item 24)."""

from __future__ import annotations

import json

import pytest

from loom.mcp_server.wire import check

CASES = [
    # (line, the answers' (id, code)) — the three the issue names first
    (b'{"jsonrpc":"2.0","id":2,"method":"tools/call","params":"garbage"}', [(2, -32602)]),
    (b'{"jsonrpc":"2.0","id":4,"method":"tools/call",', [(None, -32700)]),
    (b"\xff\xfe not utf-8", [(None, -32700)]),
    (b'{"jsonrpc":"2.0","id":5,"method":"tools/list","params":[1]}', [(5, -32602)]),
    (b'{"jsonrpc":"2.0","id":"s","method":"tools/list","params":7}', [("s", -32602)]),
    (b"[1, 2]", [(None, -32600), (None, -32600)]),
    (b'[{"jsonrpc":"2.0","id":3,"method":"ping"},{"jsonrpc":"2.0","method":"n"}]',
     [(3, -32600)]),
    (b"[]", [(None, -32600)]),
    (b'"just a string"', [(None, -32600)]),
    (b'{"jsonrpc":"2.0","id":{"a":1},"method":"tools/list"}', [(None, -32600)]),
    (b'{"jsonrpc":"2.0","id":true,"method":"tools/list"}', [(None, -32600)]),
    (b'{"jsonrpc":"1.0","id":6,"method":"tools/list"}', [(6, -32600)]),
    (b'{"id":7,"method":"tools/list"}', [(7, -32600)]),
    (b'{"jsonrpc":"2.0","id":8,"method":42}', [(8, -32600)]),
    (b"[" * 100_000, [(None, -32700)]),
]


@pytest.mark.parametrize(("line", "answers"), CASES, ids=[c[0][:40].decode("utf-8", "replace")
                                                         for c in CASES])
def test_a_malformed_request_is_answered_with_its_id(line: bytes,
                                                     answers: list[tuple[object, int]]) -> None:
    checked = check(line)
    assert checked.line is None
    assert [(e["id"], e["error"]["code"]) for e in checked.errors] == answers
    assert all(e["jsonrpc"] == "2.0" and e["error"]["message"] for e in checked.errors)


def test_a_lone_surrogate_is_replaced_and_the_request_goes_on() -> None:
    line = (b'{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"loom",'
            b'"arguments":{"commands":"\\ud800 \\u2192 tree"}}}')
    checked = check(line)
    assert not checked.errors and checked.line is not None
    assert json.loads(checked.line)["params"]["arguments"]["commands"] == "\ufffd → tree"


def test_well_formed_lines_pass_untouched_and_notifications_are_never_answered() -> None:
    good = b'{"jsonrpc":"2.0","id":1,"method":"tools/list"}'
    assert check(good).line == good.decode()
    pair = b'{"jsonrpc":"2.0","id":1,"method":"x","params":{"t":"\\ud83d\\ude00"}}'
    assert check(pair).line == pair.decode()  # a surrogate pair is a character, kept
    assert check(b"   \n") == check(b"")
    for note in (b'{"jsonrpc":"2.0","method":"notifications/x","params":"garbage"}',
                 b'{"method":"notifications/x"}'):
        assert check(note).line is None and not check(note).errors
    response = b'{"jsonrpc":"2.0","id":1,"result":{}}'
    assert check(response).line == response.decode()
