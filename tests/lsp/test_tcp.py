"""``loom serve --tcp``: loopback by default, and a token before anything else.

The server runs as ``loom serve --tcp 127.0.0.1:0`` in a subprocess; the test talks raw
JSON-RPC to it over loopback sockets, as an attacker or an editor would.
"""

from __future__ import annotations

import json
import os
import re
import socket
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from loom.cli import main
from loom.lsp import tcp
from tests.lsp.conftest import NO_MODEL_ENV

READ_TIMEOUT_S = 60.0  # generous: a failure to answer fails the test, it is not a timing


@dataclass
class Served:
    proc: subprocess.Popen[str]
    port: int
    token: str | None
    banner: str


def _start(tmp_path: Path, *extra: str) -> Served:
    env = {**NO_MODEL_ENV, "LOOM_DB": str(tmp_path / "tcp.db")}
    proc = subprocess.Popen(
        [sys.executable, "-m", "loom.cli", "serve", "--tcp", "127.0.0.1:0", *extra],
        stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
        text=True, env=env)
    assert proc.stderr is not None
    lines = []
    while not any("any other connection is refused" in line for line in lines):
        line = proc.stderr.readline()
        if not line:
            raise AssertionError(f"the server did not start: {''.join(lines)}")
        lines.append(line)
    banner = "".join(lines)
    port = int(re.search(r"listening on 127\.0\.0\.1:(\d+)", banner).group(1))  # type: ignore[union-attr]
    found = re.search(r"loom serve: token (?!from )(\S+)", banner)
    return Served(proc, port, found.group(1) if found else None, banner)


@pytest.fixture
def served(tmp_path: Path) -> Iterator[Served]:
    s = _start(tmp_path)
    yield s
    _stop(s)


def _stop(s: Served) -> None:
    if s.proc.poll() is None:
        s.proc.kill()
    s.proc.wait(timeout=READ_TIMEOUT_S)
    if s.proc.stderr is not None:
        s.proc.stderr.close()


def _frame(message: dict[str, Any] | bytes) -> bytes:
    body = message if isinstance(message, bytes) else json.dumps(message).encode()
    return f"Content-Length: {len(body)}\r\n\r\n".encode() + body


def _read(sock: socket.socket) -> dict[str, Any] | None:
    """The next message, or None when the server closed the connection."""
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = sock.recv(65536)
        if not chunk:
            return None
        data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    length = int(re.search(rb"Content-Length: (\d+)", head).group(1))  # type: ignore[union-attr]
    while len(body) < length:
        chunk = sock.recv(65536)
        if not chunk:
            return None
        body += chunk
    return json.loads(body[:length])


def _connect(port: int) -> socket.socket:
    sock = socket.create_connection(("127.0.0.1", port), timeout=READ_TIMEOUT_S)
    sock.settimeout(READ_TIMEOUT_S)
    return sock


def _initialize(token: str | None, msg_id: int = 1, nested: bool = False) -> dict[str, Any]:
    options: dict[str, Any] = {"participant": "human"}
    if token is not None:
        if nested:
            options["loom"] = {"token": token}
        else:
            options["token"] = token
    return {"jsonrpc": "2.0", "id": msg_id, "method": "initialize",
            "params": {"processId": None, "rootUri": None, "capabilities": {},
                       "initializationOptions": options}}


def _refused(port: int, payload: bytes) -> dict[str, Any]:
    """Send ``payload`` first; the answer must be the refusal, then the connection closes."""
    with _connect(port) as sock:
        sock.sendall(payload)
        answer = _read(sock)
        assert answer is not None and "error" in answer, answer
        assert answer["error"]["code"] == tcp.UNAUTHORIZED
        assert answer["error"]["message"].startswith("✗ PERMISSION_DENIED: ")
        assert "initializationOptions.token" in answer["error"]["message"]
        assert _read(sock) is None  # closed
        return answer


def test_without_the_token_a_connection_is_refused_and_with_it_works(served: Served) -> None:
    assert served.token and len(served.token) >= 40
    port = served.port
    no_token = _refused(port, _frame(_initialize(None)))
    assert no_token["id"] == 1 and "needs a token" in no_token["error"]["message"]
    wrong = _refused(port, _frame(_initialize("not-the-token", msg_id=7)))
    assert wrong["id"] == 7 and "not this server's" in wrong["error"]["message"]
    first_other = _refused(port, _frame({"jsonrpc": "2.0", "method": "initialized",
                                         "params": {}}))
    assert first_other["id"] is None and "must be the initialize request" in \
        first_other["error"]["message"]
    _refused(port, _frame({"jsonrpc": "2.0", "id": 3, "method": "loom/trees", "params": {}}))
    _refused(port, _frame(b"{not json"))
    _refused(port, b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")  # a browser's request, say
    assert served.proc.poll() is None  # refusals left the server as it was

    with _connect(port) as sock:  # the editor, with the token (under initializationOptions.loom)
        sock.sendall(_frame(_initialize(served.token, msg_id=10, nested=True)))
        answer = _read(sock)
        assert answer is not None and answer["id"] == 10 and "result" in answer, answer
        assert answer["result"]["serverInfo"]["name"] == "loom"
        sock.sendall(_frame({"jsonrpc": "2.0", "method": "initialized", "params": {}}))
        sock.sendall(_frame({"jsonrpc": "2.0", "id": 11, "method": "shutdown"}))
        while (msg := _read(sock)) is not None and msg.get("id") != 11:
            pass  # notifications the server sends after initialized
        assert msg is not None and msg.get("result", "missing") is None
        sock.sendall(_frame({"jsonrpc": "2.0", "method": "exit"}))
    assert served.proc.wait(timeout=READ_TIMEOUT_S) == 0


def test_a_second_editor_is_refused_while_one_is_connected(served: Served) -> None:
    with _connect(served.port) as editor:
        editor.sendall(_frame(_initialize(served.token)))
        assert (_read(editor) or {}).get("result")
        answer = _refused(served.port, _frame(_initialize(served.token, msg_id=2)))
        assert "another editor is connected" in answer["error"]["message"]


def test_a_token_file_must_be_private(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                      monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LOOM_DB", str(tmp_path / "x.db"))
    path = tmp_path / "token"
    path.write_text("a-long-enough-token-for-this-test\n", encoding="utf-8")
    path.chmod(0o644)
    assert main(["serve", "--tcp", "0", "--token-file", str(path)]) == 1
    err = capsys.readouterr().err
    assert err.startswith(f"✗ PERMISSION_DENIED: token file {path} can be read or written by "
                          "others (mode 644)")
    assert f"chmod 600 {path}" in err
    path.write_text("short", encoding="utf-8")
    path.chmod(0o600)
    assert main(["serve", "--tcp", "0", "--token-file", str(path)]) == 1
    assert "a token shorter than 16 characters" in capsys.readouterr().err
    assert main(["serve", "--tcp", "0", "--token-file", str(tmp_path / "none")]) == 1
    assert "✗ NOT_FOUND: token file" in capsys.readouterr().err
    assert main(["serve", "--tcp", "host:port"]) == 1
    assert "✗ INVALID_SYNTAX: --tcp 'host:port'" in capsys.readouterr().err


def test_the_token_from_a_private_file(tmp_path: Path) -> None:
    path = tmp_path / "token"
    path.write_text("file-token-0123456789abcdef\n", encoding="utf-8")
    os.chmod(path, 0o600)
    s = _start(tmp_path, "--token-file", str(path))
    try:
        assert s.token is None and f"token from {path}" in s.banner
        assert "file-token" not in s.banner  # never printed
        _refused(s.port, _frame(_initialize("file-token-0123456789abcdeX")))
        with _connect(s.port) as sock:
            sock.sendall(_frame(_initialize("file-token-0123456789abcdef")))
            assert (_read(sock) or {}).get("result")
    finally:
        _stop(s)


def test_addresses_and_the_loud_warning(capsys: pytest.CaptureFixture[str]) -> None:
    assert tcp.parse_address("2087") == ("127.0.0.1", 2087)
    assert tcp.parse_address("0.0.0.0:2087") == ("0.0.0.0", 2087)
    assert tcp.parse_address("[::1]:2087") == ("::1", 2087)
    assert tcp.is_loopback("127.0.0.1") and tcp.is_loopback("::1")
    assert tcp.is_loopback("localhost")
    assert not tcp.is_loopback("0.0.0.0") and not tcp.is_loopback("192.168.1.5")
    tcp.announce("127.0.0.1", 2087, "t0k", None)
    quiet = capsys.readouterr().err
    assert "loom serve: token t0k" in quiet and "⚠" not in quiet
    tcp.announce("0.0.0.0", 2087, None, "/home/me/.loom-token")
    loud = capsys.readouterr().err
    assert "token from /home/me/.loom-token" in loud
    assert "⚠ loom serve: 0.0.0.0 is reachable from other machines" in loud
