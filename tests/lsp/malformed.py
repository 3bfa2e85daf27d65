"""The malformed-traffic set: every way a client can send something wrong, and what the
server must answer. Used by ``tests/lsp/test_answered.py`` (which requires every case to
pass) and ``bench/bench_answered.py`` (which prints the report and the answer times).

Each case sends its frames and says what must come back:
- a JSON-RPC error with a code (``-32700`` parse error, ``-32600`` invalid request,
  ``-32601`` method not found, ``-32602`` invalid params, ``-32800`` cancelled, ``-32002``
  not initialized), with the request's id or with id null;
- a Loom answer ``{ok: false, error: "✗ CODE: …"}`` for Loom's own requests and commands;
- any result;
- nothing at all (notifications, responses).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tests.lsp.conftest import demo_uri, make_demo, sql
from tests.lsp.raw import RawClient, encode, frame

# What a case expects for one request id (None: an error with id null).
RESULT = "result"  # any result
LOOM_FAILURE = "loom failure"  # {ok: false, error: "✗ …"}
SILENT = "silent"


@dataclass
class Expect:
    request: Any  # the request's id; None for "an error with id null"
    want: int | str  # a JSON-RPC error code, RESULT or LOOM_FAILURE


@dataclass
class Env:
    uri: str  # the demo's path document
    tree: str
    node: str
    root: Path  # a folder for files


@dataclass
class Case:
    name: str
    group: str
    send: Callable[[RawClient, Env], list[Expect] | Awaitable[list[Expect]]]
    batch: bool = False  # the answer is a batch (a JSON array)


@dataclass
class Outcome:
    case: Case
    answered: bool
    correct: bool
    got: list[Any] = field(default_factory=list)
    seconds: float = 0.0

    @property
    def line(self) -> str:
        mark = "ok" if self.answered and self.correct else (
            "NO ANSWER" if not self.answered else "WRONG ANSWER")
        return f"{mark:<12} {self.case.group:<14} {self.case.name}"


def _req(method: str, params: Any = None, *, omit: bool = False
         ) -> Callable[[RawClient, Env], list[Expect]]:
    """A request with the given params; the expectation is filled in by ``case``."""
    def send(c: RawClient, _env: Env) -> list[Expect]:
        return [Expect(c.request(method, params, omit_params=omit), 0)]
    return send


def _hover(position: Any) -> Callable[[RawClient, Env], list[Expect]]:
    def send(c: RawClient, env: Env) -> list[Expect]:
        return [Expect(c.request("textDocument/hover", {
            "textDocument": {"uri": env.uri}, "position": position}), -32602)]
    return send


def _cmd(command: str, args: Any) -> Callable[[RawClient, Env], list[Expect]]:
    def send(c: RawClient, env: Env) -> list[Expect]:
        resolved = _fill(args, env)
        params = {"command": command, "arguments": resolved}
        return [Expect(c.request("workspace/executeCommand", params), LOOM_FAILURE)]
    return send


def _loom(method: str, params: Any, want: int | str = LOOM_FAILURE
          ) -> Callable[[RawClient, Env], list[Expect]]:
    def send(c: RawClient, env: Env) -> list[Expect]:
        return [Expect(c.request(method, _fill(params, env)), want)]
    return send


def _fill(value: Any, env: Env) -> Any:
    """``"$uri"``, ``"$tree"``, ``"$node"`` in a template become the environment's."""
    if isinstance(value, str) and value in ("$uri", "$tree", "$node"):
        return getattr(env, value[1:])
    if isinstance(value, dict):
        return {k: _fill(v, env) for k, v in value.items()}
    if isinstance(value, list):
        return [_fill(v, env) for v in value]
    return value


def _raw(data: bytes, *expects: Expect) -> Callable[[RawClient, Env], list[Expect]]:
    def send(c: RawClient, _env: Env) -> list[Expect]:
        c.send_bytes(data)
        return list(expects)
    return send


def _with_id(message: dict[str, Any], want: int) -> Callable[[RawClient, Env], list[Expect]]:
    """A message with a fresh id that must be answered with error ``want`` by that id."""
    def send(c: RawClient, _env: Env) -> list[Expect]:
        msg_id = c.new_id()
        c.send({**message, "id": msg_id})
        return [Expect(msg_id, want)]
    return send


def _silent(message: dict[str, Any]) -> Callable[[RawClient, Env], list[Expect]]:
    def send(c: RawClient, env: Env) -> list[Expect]:
        c.send(_fill(message, env))
        return []
    return send


def _batch(*messages: Any) -> Callable[[RawClient, Env], list[Expect]]:
    def send(c: RawClient, env: Env) -> list[Expect]:
        body = [_fill(m, env) for m in messages]
        ids = []
        for m in body:
            if isinstance(m, dict) and "id" in m:
                m["id"] = c.new_id()
                ids.append(m["id"])
        c.send(body)
        return [Expect(i, -32600) for i in ids] or [Expect(None, -32600)] * len(body)
    return send


def _policy(how: str, methods: tuple[str, ...],
            then: Callable[[RawClient, Env], list[Expect]]
            ) -> Callable[[RawClient, Env], list[Expect]]:
    """Run ``then`` while the client answers ``methods`` the way ``how`` says."""
    def send(c: RawClient, env: Env) -> list[Expect]:
        for method in methods:
            c.policy[method] = how
        return then(c, env)
    return send


def _cancelled(c: RawClient, env: Env) -> list[Expect]:
    """A request waiting for the client, cancelled by the client: -32800. The server
    waits long for the editor meanwhile, so the cancel, not the bound, ends the wait."""
    c.notify("workspace/didChangeConfiguration", {"settings": {"clientTimeout": 60}})
    c.policy["window/showDocument"] = "never"

    def asked() -> int:
        return sum(r["method"] == "window/showDocument" for r in c.server_requests)
    before = asked()
    msg_id = c.request("workspace/executeCommand",
                       {"command": "loom.open", "arguments": [{"tree": env.tree}]})

    async def cancel_when_waiting() -> None:
        while asked() == before:
            await asyncio.sleep(0.02)
        c.notify("$/cancelRequest", {"id": msg_id})
        await c.answer(msg_id)
        c.notify("workspace/didChangeConfiguration", {"settings": {"clientTimeout": 1}})
    asyncio.get_running_loop().create_task(cancel_when_waiting())
    return [Expect(msg_id, -32800)]


HOVER_OK = {"textDocument": {"uri": "$uri"}, "position": {"line": 0, "character": 1}}
JRPC = {"jsonrpc": "2.0"}


def cases() -> list[Case]:
    """The set, in the order it runs on one initialized server."""
    c: list[Case] = []

    def add(group: str, name: str, send: Callable[..., Any], batch: bool = False) -> None:
        c.append(Case(name, group, send, batch))

    # ── garbage frames ──
    add("garbage", "malformed JSON", _raw(frame(b'{"jsonrpc": "2.0", "id": '),
                                          Expect(None, -32700)))
    add("garbage", "JSON with trailing garbage",
        _raw(frame(b'{"jsonrpc": "2.0", "method": "x"} tail'), Expect(None, -32700)))
    add("garbage", "invalid UTF-8",
        _raw(frame(b'{"jsonrpc": "2.0", "id": 1, "method": "\xff\xfe"}'), Expect(None, -32700)))
    add("garbage", "JSON nested 100,000 deep", _raw(frame(b"[" * 100_000 + b"]" * 100_000),
                                                    Expect(None, -32700)))
    add("garbage", "a JSON string", _raw(encode("hello"), Expect(None, -32600)))
    add("garbage", "a JSON number", _raw(encode(42), Expect(None, -32600)))
    add("garbage", "JSON null", _raw(encode(None), Expect(None, -32600)))
    add("garbage", "an empty object", _raw(encode({}), Expect(None, -32600)))
    add("garbage", "an empty batch", _raw(encode([]), Expect(None, -32600)))
    add("garbage", "a batch of two requests",
        _batch({**JRPC, "id": 0, "method": "textDocument/hover", "params": HOVER_OK},
               {**JRPC, "id": 0, "method": "loom/trees", "params": {}}), batch=True)
    add("garbage", "a batch of numbers", _batch(1, 2), batch=True)
    add("garbage", "jsonrpc 1.0", _with_id({"jsonrpc": "1.0", "method": "loom/trees",
                                            "params": {}}, -32600))
    add("garbage", "no jsonrpc member", _with_id({"method": "loom/trees", "params": {}},
                                                 -32600))
    add("garbage", "method is a number", _with_id({**JRPC, "method": 7, "params": {}}, -32600))
    add("garbage", "id is an object", _raw(encode({**JRPC, "id": {"a": 1},
                                                   "method": "loom/trees"}),
                                           Expect(None, -32600)))
    add("garbage", "id is a boolean", _raw(encode({**JRPC, "id": True, "method": "loom/trees"}),
                                           Expect(None, -32600)))
    add("garbage", "params is a string", _with_id({**JRPC, "method": "textDocument/hover",
                                                   "params": "x"}, -32600))
    add("garbage", "an id and nothing else", _with_id(dict(JRPC), -32600))

    # ── standard requests with invalid params ──
    add("standard", "hover: line is a word", _hover({"line": "abc", "character": 0}))
    add("standard", "hover: line is a numeric string", _hover({"line": "3", "character": 0}))
    add("standard", "hover: negative line", _hover({"line": -1, "character": 0}))
    add("standard", "hover: fractional character", _hover({"line": 0, "character": 1.5}))
    add("standard", "hover: line beyond uinteger", _hover({"line": 2**40, "character": 0}))
    add("standard", "hover: position is a string", _hover("0:0"))
    add("standard", "hover: position missing", _loom("textDocument/hover",
                                                     {"textDocument": {"uri": "$uri"}}, -32602))
    add("standard", "hover: params missing", lambda cl, e: [
        Expect(cl.request("textDocument/hover", omit_params=True), -32602)])
    add("standard", "hover: params null", _loom("textDocument/hover", None, -32602))
    add("standard", "completion: negative character", _loom("textDocument/completion", {
        "textDocument": {"uri": "$uri"}, "position": {"line": 0, "character": -5}}, -32602))
    add("standard", "completion: textDocument missing", _loom(
        "textDocument/completion", {"position": {"line": 0, "character": 0}}, -32602))
    add("standard", "definition: position null", _loom("textDocument/definition", {
        "textDocument": {"uri": "$uri"}, "position": None}, -32602))
    add("standard", "references: context missing", _loom("textDocument/references", {
        "textDocument": {"uri": "$uri"}, "position": {"line": 0, "character": 0}}, -32602))
    add("standard", "references: includeDeclaration a string", _loom(
        "textDocument/references", {"textDocument": {"uri": "$uri"},
                                    "position": {"line": 0, "character": 0},
                                    "context": {"includeDeclaration": "yes"}}, -32602))
    add("standard", "documentLink: uri is a number", _loom(
        "textDocument/documentLink", {"textDocument": {"uri": 5}}, -32602))
    add("standard", "codeLens: params an array", _loom("textDocument/codeLens", [], -32602))
    add("standard", "semanticTokens: textDocument a string", _loom(
        "textDocument/semanticTokens/full", {"textDocument": "$uri"}, -32602))
    add("standard", "inlayHint: range end missing", _loom("textDocument/inlayHint", {
        "textDocument": {"uri": "$uri"}, "range": {"start": {"line": 0, "character": 0}}},
        -32602))
    add("standard", "textDocumentContent: uri missing", _loom(
        "workspace/textDocumentContent", {}, -32602))
    add("standard", "textDocumentContent: no such document", _loom(
        "workspace/textDocumentContent", {"uri": "loom://path/NOPE/zzzz"}, -32803))
    add("standard", "executeCommand: command missing", _loom(
        "workspace/executeCommand", {"arguments": []}, -32602))
    add("standard", "executeCommand: unknown command", _loom(
        "workspace/executeCommand", {"command": "loom.nope", "arguments": []}, -32602))
    add("standard", "executeCommand: arguments an object", _loom(
        "workspace/executeCommand", {"command": "loom.commit", "arguments": {"uri": "x"}},
        -32602))
    add("standard", "hover far past the end (valid)", _loom("textDocument/hover", {
        "textDocument": {"uri": "$uri"}, "position": {"line": 10**6, "character": 10**6}},
        RESULT))

    # ── Loom's requests with bad params: a ✗ answer ──
    add("loom request", "loom/read: uri a number", _loom("loom/read", {"uri": 5}))
    add("loom request", "loom/read: params an array", _loom("loom/read", [1, 2]))
    add("loom request", "loom/read: params missing", lambda cl, e: [
        Expect(cl.request("loom/read", omit_params=True), LOOM_FAILURE)])
    add("loom request", "loom/read: a bad uri", _loom("loom/read", {"uri": "loom://what"}))
    add("loom request", "loom/save: text missing", _loom("loom/save", {"uri": "$uri"}))
    add("loom request", "loom/save: text a number", _loom("loom/save", {"uri": "$uri",
                                                                         "text": 7}))
    add("loom request", "loom/save: unknown reason", _loom("loom/save", {
        "uri": "$uri", "text": "x", "reason": "whenever"}))
    add("loom request", "loom/trees: params an array (valid)", _loom("loom/trees", [], RESULT))
    add("loom request", "loom/nodeInfo: negative line", _loom("loom/nodeInfo", {
        "tree": "$tree", "uri": "$uri", "line": -1, "character": 0}))
    add("loom request", "loom/nodeInfo: tree an object", _loom("loom/nodeInfo",
                                                               {"tree": {"a": 1}}))
    add("loom request", "loom/nodeInfo: no such tree", _loom("loom/nodeInfo", {"tree": "nope"}))
    add("loom request", "loom/nodeInfo: a type_name key", _loom("loom/nodeInfo",
                                                                {"type_name": 3}))
    add("loom request", "loom/newTree: unknown mode", _loom("loom/newTree", {"title": "t",
                                                                             "mode": "tabs"}))
    add("loom request", "loom/newTree: title a number", _loom("loom/newTree", {"title": 5}))
    add("loom request", "loom/import: content a number", _loom("loom/import", {"content": 5}))
    add("loom request", "loom/import: a path outside the workspace", _loom(
        "loom/import", {"path": "/etc/passwd"}))
    add("loom request", "loom/export: unknown format", _loom("loom/export", {
        "tree": "$tree", "format": "pdf"}))
    add("loom request", "loom/export: tree an array", _loom("loom/export", {"tree": ["x"]}))
    add("loom request", "loom/export: no such tree", _loom("loom/export", {"tree": "nope"}))
    add("loom request", "loom/status: uri a number", _loom("loom/status", {"uri": 5}))

    # ── Loom's commands with bad arguments: a ✗ answer ──
    add("loom command", "continue: n a word", _cmd("loom.continue", [{"uri": "$uri",
                                                                      "n": "many"}]))
    add("loom command", "continue: n too large", _cmd("loom.continue", [{"uri": "$uri",
                                                                         "n": 99}]))
    add("loom command", "branch: uri a number", _cmd("loom.branch", [{"uri": 5}]))
    add("loom command", "cycleSibling: delta a word", _cmd("loom.cycleSibling", [{
        "uri": "$uri", "delta": "x"}]))
    add("loom command", "annotate: node an object", _cmd("loom.annotate", [{
        "uri": "$uri", "node": {}}]))
    add("loom command", "run: negative line", _cmd("loom.run", [{"uri": "$uri", "line": -1}]))
    add("loom command", "run: line a word", _cmd("loom.run", [{"uri": "$uri",
                                                               "line": "first"}]))
    add("loom command", "commit: no arguments", _cmd("loom.commit", []))
    add("loom command", "open: tree a number", _cmd("loom.open", [{"tree": 5}]))
    add("loom command", "open: no tree", _cmd("loom.open", [{}]))
    add("loom command", "askCollaborator: uri a number", _cmd("loom.askCollaborator",
                                                              [{"uri": 5}]))
    add("loom command", "stopCollaborator: argument a string", _cmd("loom.stopCollaborator",
                                                                    ["x"]))
    add("loom command", "cancel: three arguments", _cmd("loom.cancel", [1, 2, 3]))
    add("loom command", "explore: options a number", _cmd("loom.explore", [{
        "uri": "$uri", "options": 5}]))
    add("loom command", "explore: options not an exploration's", _cmd("loom.explore", [{
        "uri": "$uri", "options": "depth:many"}]))
    add("loom command", "stopExploring: tree a number", _cmd("loom.stopExploring",
                                                             [{"tree": 5}]))

    # ── the client answers the server's requests badly ──
    open_tree = _cmd("loom.open", [{"tree": "$tree"}])
    for how in ("null", "error", "never"):
        add("client answers", f"open: showDocument answered {how}", _policy(
            how, ("window/showDocument",), _expect(open_tree, RESULT)))
    annotate = _cmd("loom.annotate", [{"uri": "$uri", "node": "$node"}])
    for how in ("null", "error", "never"):
        add("client answers", f"annotate without text: applyEdit answered {how}",
            _policy(how, ("workspace/applyEdit", "window/showDocument"),
                    _expect(annotate, RESULT)))
    add("client answers", "a response to no request", _silent({**JRPC, "id": "nobody",
                                                               "result": 1}))
    add("client answers", "an error response to no request", _silent({
        **JRPC, "id": "nobody", "error": {"code": 1, "message": "x"}}))
    add("cancel", "a request cancelled while it waits for the client", _cancelled)

    # ── unknown methods ──
    add("unknown", "request loom/nope", _loom("loom/nope", {}, -32601))
    add("unknown", "request textDocument/nope", _loom("textDocument/nope", {}, -32601))
    add("unknown", "request $/nope", _loom("$/nope", {}, -32601))
    add("unknown", "notification loom/nope", _silent({**JRPC, "method": "loom/nope",
                                                      "params": {}}))
    add("unknown", "notification $/nope", _silent({**JRPC, "method": "$/nope"}))

    # ── notifications with bad params: never answered ──
    for name, method, params in [
            ("didChange: params a string", "textDocument/didChange", "x"),
            ("didChange: range a string", "textDocument/didChange", {
                "textDocument": {"uri": "$uri", "version": 9},
                "contentChanges": [{"range": "0:0-0:1", "text": "x"}]}),
            ("didOpen: textDocument missing", "textDocument/didOpen", {}),
            ("didSave: uri a number", "textDocument/didSave", {"textDocument": {"uri": 5}}),
            ("didClose: params null", "textDocument/didClose", None),
            ("cancelRequest: id an object", "$/cancelRequest", {"id": {}}),
            ("cancelRequest: unknown id", "$/cancelRequest", {"id": 123456}),
            ("didChangeConfiguration: settings a number",
             "workspace/didChangeConfiguration", {"settings": 5}),
            ("didChangeWatchedFiles: changes a string",
             "workspace/didChangeWatchedFiles", {"changes": "x"})]:
        add("notification", name, _silent({**JRPC, "method": method, "params": params}))
    return c


def _expect(send: Callable[[RawClient, Env], list[Expect]], want: int | str
            ) -> Callable[[RawClient, Env], list[Expect]]:
    def run(c: RawClient, env: Env) -> list[Expect]:
        return [Expect(e.request, want) for e in send(c, env)]
    return run


def _matches(answer: Any, want: int | str) -> bool:
    if want == RESULT:
        return isinstance(answer, dict) and "result" in answer
    if want == LOOM_FAILURE:
        result = answer.get("result") if isinstance(answer, dict) else None
        return (isinstance(result, dict) and result.get("ok") is False
                and str(result.get("error", "")).startswith("✗ ")
                and "Error" not in str(result.get("error")))  # no Python exception names
    error = answer.get("error") if isinstance(answer, dict) else None
    return isinstance(error, dict) and error.get("code") == want


async def run_case(client: RawClient, env: Env, case: Case, timeout: float) -> Outcome:
    """Send one case and wait (at most ``timeout``) for what it expects."""
    nulls, batches = len(client.null_id), len(client.batches)
    answered_before = set(client.answers)
    started = time.perf_counter()
    sent = case.send(client, env)
    expects = await sent if asyncio.iscoroutine(sent) else sent
    assert isinstance(expects, list)
    # The client answers the server's requests "ok" again once the case is sent.
    got: list[Any] = []
    answered = correct = True
    if case.batch:
        deadline = time.perf_counter() + timeout
        while len(client.batches) == batches and time.perf_counter() < deadline:
            await asyncio.sleep(0.02)
        answered = len(client.batches) > batches
        reply = client.batches[batches] if answered else []
        got = [reply]
        codes = [(r.get("id"), (r.get("error") or {}).get("code")) for r in reply]
        correct = answered and sorted(codes, key=str) == sorted(
            [(e.request, e.want) for e in expects], key=str)
    else:
        for e in expects:
            if e.request is None:
                continue
            answer = await client.answer(e.request, timeout)
            got.append(answer)
            answered = answered and answer is not None
            correct = correct and answer is not None and _matches(answer, e.want)
        need_null = [e for e in expects if e.request is None]
        if need_null:
            deadline = time.perf_counter() + timeout
            while (len(client.null_id) < nulls + len(need_null)
                   and time.perf_counter() < deadline):
                await asyncio.sleep(0.02)
            new = client.null_id[nulls:nulls + len(need_null)]
            got += new
            answered = answered and len(new) == len(need_null)
            correct = correct and answered and all(
                n.get("error", {}).get("code") == e.want for n, e in zip(new, need_null,
                                                                          strict=True))
        if not expects:  # nothing may come back
            await client.settle(0.2)
            extra = [client.answers[k] for k in set(client.answers) - answered_before]
            extra += client.null_id[nulls:]
            got = extra
            correct = not extra and len(client.batches) == batches
    seconds = time.perf_counter() - started
    client.policy.clear()
    return Outcome(case, answered, correct, got, seconds)


def environment(db: Path) -> Env:
    uri = demo_uri(db)
    tree, node = uri.removeprefix("loom://path/").split("/")
    return Env(uri=uri, tree=tree, node=node, root=db.parent)


async def run_set(db: Path, timeout: float = 10.0) -> list[Outcome]:
    """The whole set on one server: initialize, every case, then a check that the server
    still works and its copy of the buffer is intact."""
    env = environment(db)
    client = await RawClient.start(db)
    try:
        await client.initialize(db, clientTimeout=1.0)
        text = (await client.answer(client.request("loom/read", {"uri": env.uri})) or {})
        client.notify("textDocument/didOpen", {"textDocument": {
            "uri": env.uri, "languageId": "loom", "version": 1,
            "text": text.get("result", {}).get("text", "")}})
        out = [await run_case(client, env, case, timeout) for case in cases()]
        out.append(await _still_works(client, env, timeout))
        return out
    finally:
        await client.close()


async def _still_works(client: RawClient, env: Env, timeout: float) -> Outcome:
    case = Case("the server still answers a good hover and loom/read", "afterwards",
                lambda c, e: [])
    started = time.perf_counter()
    hover = await client.answer(client.request("textDocument/hover", {
        "textDocument": {"uri": env.uri}, "position": {"line": 0, "character": 2}}), timeout)
    read = await client.answer(client.request("loom/read", {"uri": env.uri}), timeout)
    ok = bool(hover and hover.get("result") and read and read.get("result", {}).get("text"))
    return Outcome(case, hover is not None and read is not None, ok, [hover, read],
                   time.perf_counter() - started)


# ── the lifecycle: before initialize, shutdown with requests in flight, after shutdown ──
async def run_lifecycle(db: Path, timeout: float = 10.0) -> list[Outcome]:
    env = environment(db)
    client = await RawClient.start(db)
    out: list[Outcome] = []

    async def expect(name: str, group: str, msg_id: Any, want: int | str) -> None:
        started = time.perf_counter()
        answer = await client.answer(msg_id, timeout)
        out.append(Outcome(Case(name, group, lambda c, e: []), answer is not None,
                           answer is not None and _matches(answer, want), [answer],
                           time.perf_counter() - started))

    async def silent(name: str, group: str) -> None:
        before, nulls = set(client.answers), len(client.null_id)
        await client.settle(0.2)
        extra = [client.answers[k] for k in set(client.answers) - before]
        extra += client.null_id[nulls:]
        out.append(Outcome(Case(name, group, lambda c, e: []), True, not extra, extra))

    try:
        await expect("hover before initialize", "lifecycle", client.request(
            "textDocument/hover", {"textDocument": {"uri": env.uri},
                                   "position": {"line": 0, "character": 0}}), -32002)
        await expect("loom/read before initialize", "lifecycle",
                     client.request("loom/read", {"uri": env.uri}), -32002)
        client.notify("textDocument/didOpen", {"textDocument": {
            "uri": env.uri, "languageId": "loom", "version": 1, "text": "x"}})
        await silent("a notification before initialize", "lifecycle")
        await client.initialize(db, clientTimeout=30.0)
        # Two requests in flight, each waiting for the client, when shutdown comes.
        client.policy["window/showDocument"] = "never"
        client.policy["workspace/applyEdit"] = "never"
        client.notify("textDocument/didOpen", {"textDocument": {
            "uri": env.uri, "languageId": "loom", "version": 1,
            "text": ((await client.answer(client.request("loom/read", {"uri": env.uri})))
                     or {}).get("result", {}).get("text", "")}})
        waiting = [client.request("workspace/executeCommand", {
            "command": "loom.open", "arguments": [{"tree": env.tree}]}),
            client.request("workspace/executeCommand", {
                "command": "loom.annotate", "arguments": [{"uri": env.uri,
                                                           "node": env.node}]})]
        await client.settle(0.3)
        shutdown = client.request("shutdown", None)
        await expect("shutdown with requests in flight", "lifecycle", shutdown, RESULT)
        for i, msg_id in enumerate(waiting):
            started = time.perf_counter()
            answer = await client.answer(msg_id, timeout)
            good = answer is not None and ("result" in answer or _matches(answer, -32800))
            out.append(Outcome(Case(f"in-flight request {i + 1} answered at shutdown",
                                    "lifecycle", lambda c, e: []),
                               answer is not None, good, [answer],
                               time.perf_counter() - started))
        await expect("hover after shutdown", "after shutdown", client.request(
            "textDocument/hover", {"textDocument": {"uri": env.uri},
                                   "position": {"line": 0, "character": 0}}), -32600)
        await expect("loom/read after shutdown", "after shutdown",
                     client.request("loom/read", {"uri": env.uri}), -32600)
        await expect("a command after shutdown", "after shutdown", client.request(
            "workspace/executeCommand", {"command": "loom.commit",
                                         "arguments": [{"uri": env.uri}]}), -32600)
        await expect("a second shutdown", "after shutdown", client.request("shutdown"),
                     -32600)
        client.notify("textDocument/didChange", {
            "textDocument": {"uri": env.uri, "version": 2},
            "contentChanges": [{"text": "gone"}]})
        await silent("a notification after shutdown", "after shutdown")
        client.notify("exit")
        started = time.perf_counter()
        code = await client.exit_code(timeout)
        out.append(Outcome(Case("exit ends the process with code 0", "after shutdown",
                                lambda c, e: []), code is not None, code == 0, [code],
                           time.perf_counter() - started))
        return out
    finally:
        await client.close()


def fresh_db(folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    db = folder / "loom.db"
    make_demo(db)
    sql(db, "SELECT 1")
    return db
