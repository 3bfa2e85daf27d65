"""JSON-RPC as LSP needs it: every request answered, whatever a client sends.

pygls' reader drops what it cannot read: a frame that is not JSON, a batch, a request
whose params do not fit the method's type ("Unable to deserialize message") all vanish,
and the client waits forever. Its shutdown cancels in-flight requests while iterating the
dict their callbacks change. Here the server reads the frames itself and answers:

- ``-32700`` parse error (id null): not UTF-8, not JSON;
- ``-32600`` invalid request: not a request object, a batch (LSP has none), a request
  after ``shutdown``, a second ``initialize``;
- ``-32002`` server not initialized: a request before ``initialize``;
- ``-32601`` method not found (pygls);
- ``-32602`` invalid params: the params do not fit the method's type (positions are
  unsigned integers: ``"3"``, ``-1`` and ``1.5`` are all refused, not coerced);
- ``-32800`` request cancelled;
- ``-32803`` request failed: a standard request whose answer Loom cannot give (the message
  is Loom's ``✗ CODE: message``);
- ``-32603`` internal error, for a bug, without Python's exception text.

Notifications are never answered. Answers to the server's own requests that do not fit
their type (``null`` for ``window/showDocument``) fail the waiting request instead of
leaving it waiting; :meth:`AnsweringProtocol.request_client` also bounds the wait.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import re
import sys
import threading
import uuid
from collections.abc import Callable
from typing import Any

import cattrs
from cattrs.cols import (
    homogenous_tuple_structure_factory,
    is_mutable_sequence,
    is_sequence,
    list_structure_factory,
)
from lsprotocol import types as lsp
from pygls.exceptions import JsonRpcException
from pygls.io_ import StdinAsyncReader, StdoutWriter
from pygls.lsp.server import LanguageServer
from pygls.protocol import (
    JsonRPCNotification,
    JsonRPCRequestMessage,
    LanguageServerProtocol,
    default_converter,
    lsp_method,
)

from loom.errors import LoomError

log = logging.getLogger(__name__)

PARSE_ERROR = -32700
INVALID_REQUEST = -32600
INVALID_PARAMS = -32602
INTERNAL_ERROR = -32603
NOT_INITIALIZED = -32002
REQUEST_CANCELLED = -32800
REQUEST_FAILED = -32803

MAX_FRAME = 256 * 1024 * 1024  # bytes: larger bodies are skipped, not read into memory
DRAIN_S = 3.0  # at shutdown, how long requests in flight may take to finish by themselves
_HEADER = re.compile(rb"^([A-Za-z-]+)\s*:\s*(.*?)\s*$")


# ── reading params strictly ──────────────────────────────────────────────────
def _strict(what: str, ok: Callable[[Any], bool]) -> Callable[[Any, Any], Any]:
    def hook(value: Any, _type: Any) -> Any:
        if not ok(value):
            raise TypeError(f"expected {what}, got {_json_type(value)}")
        return value
    return hook


def _json_type(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return f"the number {value}"
    if isinstance(value, str):
        return "a string"
    return "an array" if isinstance(value, list) else "an object"


def _is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def loom_converter() -> cattrs.Converter:
    """pygls' converter, made strict: a JSON string is not an integer, ``1.5`` is not a
    line, an object is not an array. cattrs would coerce each silently."""
    conv = default_converter()
    conv.register_structure_hook(int, _strict("an integer", _is_int))
    number = _strict("a number", lambda v: _is_int(v) or isinstance(v, float))
    conv.register_structure_hook(float, lambda v, t: float(number(v, t)))
    conv.register_structure_hook(str, _strict("a string", lambda v: isinstance(v, str)))
    conv.register_structure_hook(bool, _strict("a boolean", lambda v: isinstance(v, bool)))

    def arrays_only(factory: Callable[..., Any]) -> Callable[..., Any]:
        def make(type_: Any, converter: Any) -> Callable[[Any, Any], Any]:
            inner = factory(type_, converter)

            def hook(value: Any, t: Any) -> Any:
                if not isinstance(value, list | tuple):
                    raise TypeError(f"expected an array, got {_json_type(value)}")
                return inner(value, t)
            return hook
        return make

    conv.register_structure_hook_factory(is_sequence, arrays_only(
        homogenous_tuple_structure_factory))
    conv.register_structure_hook_factory(is_mutable_sequence, arrays_only(
        list_structure_factory))
    return conv


_NOT_AN_OBJECT = re.compile(r"indices must be integers|not subscriptable|has no attribute 'get'")
_PARENT = "\0parent"


def _camel(path: str) -> str:
    return re.sub(r"_([a-z])", lambda m: m.group(1).upper(), path)


def describe(err: Exception) -> str:
    """A structuring failure as ``params.position.line: expected an integer, got a
    string`` (JSON names, the first problem only)."""
    if isinstance(err, cattrs.BaseValidationError):
        def fmt(exc: BaseException, type_: Any) -> str:
            if isinstance(exc, KeyError):
                return "required"
            if isinstance(exc, TypeError) and _NOT_AN_OBJECT.search(str(exc)):
                return _PARENT  # the field was read from something that is no object
            if isinstance(exc, TypeError | ValueError) and str(exc):
                return str(exc)
            return "invalid value"

        first = cattrs.transform_error(err, format_exception=fmt)[0]
        what, _, where = first.rpartition(" @ $.")
        if what == _PARENT:
            where, what = where.rpartition(".")[0], "expected an object"
        return f"{_camel(where)}: {what}" if where else first
    return "invalid value"


# ── frames ───────────────────────────────────────────────────────────────────
class FrameError(Exception):
    """A frame whose header cannot be used (answered with a parse error)."""


async def read_frame(reader: Any) -> bytes | FrameError | None:
    """The next frame's body; a :class:`FrameError` for a broken header (the reader moves
    on to the next frame); None at the end of the stream."""
    length: int | None = None
    problem: str | None = None
    saw_header = False
    while True:
        line = await reader.readline()
        if not line:
            return None
        if not line.strip():
            if not saw_header:
                continue  # blank lines between frames
            break
        saw_header = True
        match = _HEADER.match(line)
        if match is None:
            problem = "a header line is not 'Name: value'"
        elif match.group(1).lower() == b"content-length":
            try:
                length = int(match.group(2))
            except ValueError:
                problem = "Content-Length is not a number"
    if problem is None and length is None:
        problem = "the frame has no Content-Length header"
    if problem is not None:
        return FrameError(problem)
    assert length is not None
    if length < 0:
        return FrameError("Content-Length is negative")
    if length > MAX_FRAME:
        left = length
        while left:  # skip the body to find the next frame
            chunk = await _read_exactly(reader, min(left, 1 << 20))
            if not chunk:
                return None
            left -= len(chunk)
        return FrameError(f"the message is larger than {MAX_FRAME} bytes")
    body = await _read_exactly(reader, length)
    return body if len(body) == length else None


async def _read_exactly(reader: Any, n: int) -> bytes:
    try:
        return bytes(await reader.readexactly(n))
    except asyncio.IncompleteReadError as err:
        return bytes(err.partial)


async def _stdin_reader(stdin: Any, pool: Any) -> Any:
    """Frames from stdin read by the event loop itself when stdin is a pipe (an editor's
    always is): pygls' reader hands every line to a thread, and a thread waits for the
    GIL while the loop computes (semantic tokens of a long buffer, in slices), so a hover
    would wait behind them. A file or anything else is read through pygls' threads."""
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader(limit=MAX_FRAME + 1024, loop=loop)
    try:
        await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader, loop=loop),
                                     stdin)
    except (ValueError, OSError):  # not a pipe, socket or character device
        return StdinAsyncReader(stdin, pool)
    return reader


async def read_loop(stop: threading.Event, reader: Any, protocol: AnsweringProtocol) -> None:
    """Read frames until the stream ends (or ``exit``), handing each to the protocol."""
    while not stop.is_set():
        body = await read_frame(reader)
        if body is None:
            break
        if isinstance(body, FrameError):
            protocol.reply_error(None, PARSE_ERROR, f"Parse error: {body}")
            continue
        try:
            protocol.receive(body)
        except (SystemExit, KeyboardInterrupt):
            raise
        except Exception:  # one message must never stop the server
            log.exception("a message could not be handled")
        # Let the handler tasks just made start before the next frame is handled (a frame
        # already buffered is read without yielding): a didOpen's task opens the document
        # before the didChange after it arrives, as when every read took a turn.
        await asyncio.sleep(0)


# ── the protocol ─────────────────────────────────────────────────────────────
#: A JSON escape of a surrogate (a valid UTF-8 body cannot hold one otherwise); pairs are
#: joined by the JSON parser, so only a lone one is left in the parsed strings.
_ESCAPED_SURROGATE = re.compile(r"\\u[dD][89a-fA-F]")
_SURROGATE = re.compile("[\ud800-\udfff]")


def _repair_surrogates(value: Any) -> tuple[Any, int]:
    """``value`` with every lone surrogate in its strings (keys too) replaced by U+FFFD,
    and how many there were."""
    if isinstance(value, str):
        fixed, n = _SURROGATE.subn("\ufffd", value)
        return fixed, n
    if isinstance(value, list):
        total = 0
        out = []
        for item in value:
            fixed, n = _repair_surrogates(item)
            out.append(fixed)
            total += n
        return out, total
    if isinstance(value, dict):
        total = 0
        fixed_dict = {}
        for key, item in value.items():
            k, a = _repair_surrogates(key)
            v, b = _repair_surrogates(item)
            fixed_dict[k] = v
            total += a + b
        return fixed_dict, total
    return value, 0


def _valid_id(value: Any) -> bool:
    return isinstance(value, str) or _is_int(value)


class AnsweringProtocol(LanguageServerProtocol):
    """A ``LanguageServerProtocol`` that answers every request (see the module's doc)."""

    def __init__(self, server: Any, converter: Any) -> None:
        super().__init__(server, converter)
        self._open: dict[Any, str] = {}  # requests the client waits for: id → method
        self._initialize_seen = False
        self._shutdown_id: Any = None  # the shutdown request's own id, never drained

    # ── receiving ──
    def receive(self, body: bytes) -> None:
        """One frame's body from the client."""
        try:
            text = body.decode("utf-8")
        except UnicodeDecodeError as err:
            self.reply_error(None, PARSE_ERROR, f"Parse error: the message is not UTF-8 "
                             f"(byte {err.start})")
            return
        try:
            data = json.loads(text)
        except ValueError as err:
            self.reply_error(None, PARSE_ERROR, f"Parse error: {err}")
            return
        except RecursionError:
            self.reply_error(None, PARSE_ERROR, "Parse error: the message is nested too deeply")
            return
        if _ESCAPED_SURROGATE.search(text):
            data, repaired = _repair_surrogates(data)
            if repaired:
                self._surrogates_repaired(data, repaired)
        if isinstance(data, list):
            self._reject_batch(data)
            return
        self._dispatch(data)

    def _surrogates_repaired(self, data: Any, count: int) -> None:
        """Text that no database, file or UTF-8 stream can hold (a lone UTF-16 surrogate,
        which JSON lets a client send) was repaired as it came in: the editor is told
        (unrepaired, one typed in a buffer stops its crash protection and every save)."""
        method = data.get("method") if isinstance(data, dict) else None
        log.warning("replaced %d lone UTF-16 surrogate(s) in %s with U+FFFD", count, method)
        if self._initialize_seen and not self._shutdown:
            self.notify(lsp.WINDOW_SHOW_MESSAGE, lsp.ShowMessageParams(
                type=lsp.MessageType.Warning,
                message=f"Loom: {count} character(s) that cannot be stored (a lone UTF-16 "
                        "surrogate) came in and were replaced with \ufffd; the rest of the "
                        "text is kept"))

    def _reject_batch(self, items: list[Any]) -> None:
        """LSP has no batches (JSON-RPC's answer: an array with an error per request)."""
        why = "Invalid request: LSP does not support batches; send each message in its own frame"
        if not items:
            self.reply_error(None, INVALID_REQUEST, why)
            return
        out = []
        for item in items:
            if isinstance(item, dict) and "method" in item and "id" not in item:
                continue  # a notification: never answered
            msg_id = item.get("id") if isinstance(item, dict) else None
            out.append({"jsonrpc": "2.0", "id": msg_id if _valid_id(msg_id) else None,
                        "error": {"code": INVALID_REQUEST, "message": why}})
        if out:
            self._send_data(out)

    def _dispatch(self, msg: Any) -> None:
        if not isinstance(msg, dict):
            self.reply_error(None, INVALID_REQUEST, "Invalid request: a message is a JSON "
                             f"object, not {_json_type(msg)}")
            return
        has_id = "id" in msg
        msg_id = msg.get("id")
        if has_id and not (_valid_id(msg_id) or (msg_id is None and "method" not in msg)):
            self.reply_error(None, INVALID_REQUEST, "Invalid request: id must be an integer "
                             f"or a string, not {_json_type(msg_id)}")
            return
        if "method" not in msg:
            if has_id and ("result" in msg or "error" in msg):
                self._receive_response(msg)
            else:
                self.reply_error(msg_id, INVALID_REQUEST, "Invalid request: no method, and "
                                 "not a response")
            return
        method = msg["method"]
        if msg.get("jsonrpc") != "2.0" or not isinstance(method, str):
            problem = ("jsonrpc must be \"2.0\"" if msg.get("jsonrpc") != "2.0"
                       else "method must be a string")
            if has_id:
                self.reply_error(msg_id, INVALID_REQUEST, f"Invalid request: {problem}")
            else:
                log.warning("dropped a notification: %s", problem)
            return
        params = msg.get("params")
        if params is not None and not isinstance(params, dict | list):
            if has_id:
                self.reply_error(msg_id, INVALID_REQUEST, "Invalid request: params must be "
                                 f"an object or an array, not {_json_type(params)}")
            else:
                log.warning("dropped %s: params are %s", method, _json_type(params))
            return
        if has_id:
            self._receive_request(msg_id, method, msg)
        else:
            self._receive_notification(method, msg)

    def _receive_request(self, msg_id: Any, method: str, msg: dict[str, Any]) -> None:
        if method == lsp.INITIALIZE:
            if self._initialize_seen:
                self.reply_error(msg_id, INVALID_REQUEST,
                                 "Invalid request: the server is already initialized")
                return
            self._initialize_seen = True
        elif not self._initialize_seen:
            self.reply_error(msg_id, NOT_INITIALIZED, f"{method}: the server is not "
                             "initialized yet: send initialize first")
            return
        if self._shutdown:
            self.reply_error(msg_id, INVALID_REQUEST, f"Invalid request: {method} after "
                             "shutdown; only the exit notification is accepted now")
            return
        try:
            message = self._structure(method, msg, JsonRPCRequestMessage)
        except Exception as err:
            self.reply_error(msg_id, INVALID_PARAMS, f"Invalid params for {method}: "
                             f"{describe(err)}")
            return
        self._open[msg_id] = method
        self.handle_message(message)

    def _receive_notification(self, method: str, msg: dict[str, Any]) -> None:
        if method != lsp.EXIT and (self._shutdown or not self._initialize_seen):
            log.info("dropped %s: %s", method,
                     "after shutdown" if self._shutdown else "before initialize")
            return
        try:
            message = self._structure(method, msg, JsonRPCNotification)
        except Exception as err:
            log.warning("dropped %s: %s", method, describe(err))
            return
        self.handle_message(message)

    def _structure(self, method: str, msg: dict[str, Any], generic: type) -> Any:
        """The message as the method's lsprotocol type; methods without one (``loom/…``)
        keep their params as plain JSON (pygls would make named tuples of them, which
        lose keys such as ``type_name``)."""
        typed = self.get_message_type(method)
        if typed is None:
            fields = {"method": method, "jsonrpc": "2.0", "params": msg.get("params")}
            return generic(id=msg["id"], **fields) if "id" in msg else generic(**fields)
        msg = dict(msg)
        if msg.get("params") is None:
            msg.pop("params", None)
        return self._converter.structure(msg, typed)

    def _receive_response(self, msg: dict[str, Any]) -> None:
        """The client's answer to a request of ours; one that does not fit the request's
        result type fails the waiting request rather than leaving it waiting."""
        msg_id = msg["id"]
        result_type = self._result_types.pop(msg_id, None)
        if msg_id not in self._request_futures:
            log.warning("an answer to no request of ours (id %r)", msg_id)
            return
        if "error" in msg:
            error = msg["error"]
            code = error.get("code") if isinstance(error, dict) else None
            text = error.get("message") if isinstance(error, dict) else None
            self._handle_response(msg_id, None, lsp.ResponseError(
                code=code if _is_int(code) else INTERNAL_ERROR,
                message=str(text) if text is not None else "the client answered an error"))
            return
        try:
            if result_type is None:
                result = msg.get("result")
            else:
                result = self._converter.structure(
                    {"jsonrpc": "2.0", "id": msg_id, "result": msg.get("result")},
                    result_type).result
        except Exception as err:
            log.warning("the client's answer to %r does not fit: %s", msg_id, describe(err))
            self._handle_response(msg_id, None, lsp.ResponseError(
                code=INVALID_PARAMS, message=f"the client's answer does not fit: "
                                              f"{describe(err)}"))
            return
        self._handle_response(msg_id, result)

    def _handle_response(self, msg_id: Any, result: Any = None,
                         error: lsp.ResponseError | None = None) -> None:
        future = self._request_futures.get(msg_id)
        if future is not None and future.done():  # given up on (a timeout, shutdown)
            self._request_futures.pop(msg_id, None)
            return
        super()._handle_response(msg_id, result, error)

    # ── answering ──
    def reply_error(self, msg_id: Any, code: int, message: str) -> None:
        """An error answer to a request that never reached a handler."""
        self._send_data({"jsonrpc": "2.0", "id": msg_id,
                         "error": {"code": code, "message": message}})

    def _send_response(self, msg_id: Any, result: Any = None,
                       error: lsp.ResponseError | None = None) -> None:
        if msg_id not in self._open:
            # already answered (cancelled at shutdown, then finished anyway)
            log.info("dropped a second answer to request %r", msg_id)
            return
        del self._open[msg_id]
        super()._send_response(msg_id, result, error)

    def _send_handler_result(self, future: Any, *, msg_id: Any) -> None:
        """A handler's result or failure as the answer: Loom's errors are
        ``RequestFailed`` with the ``✗`` text; a bug is an internal error without Python's
        exception text (it is logged)."""
        self._request_futures.pop(msg_id, None)
        method = self._open.get(msg_id, "the request")
        if future.cancelled():
            self._send_response(msg_id, error=lsp.ResponseError(
                code=REQUEST_CANCELLED, message=f"{method} was cancelled"))
            return
        err = future.exception()
        if err is None:
            self._send_response(msg_id, result=future.result())
            return
        from loom.render.formats import error as error_text

        if isinstance(err, LoomError):
            self._send_response(msg_id, error=lsp.ResponseError(
                code=REQUEST_FAILED, message=error_text(err.code, err.message, err.hint)))
        elif isinstance(err, JsonRpcException):
            self._send_response(msg_id, error=err.to_response_error())
        else:
            log.error("%s failed", method, exc_info=err)
            self._send_response(msg_id, error=lsp.ResponseError(
                code=INTERNAL_ERROR, message=error_text(
                    "CONFLICT", f"{method} failed inside Loom",
                    "this is a bug in Loom; the server's log has the details")))

    # ── asking the client ──
    async def request_client(self, method: str, params: Any, timeout: float) -> Any:
        """Send a request to the client and wait at most ``timeout`` seconds for its
        answer (``TimeoutError`` after that); a client that answers late, or badly, never
        leaves the caller waiting."""
        msg_id = f"loom-{uuid.uuid4()}"
        future = self.send_request(method, params, msg_id=msg_id)
        try:
            return await asyncio.wait_for(asyncio.shield(asyncio.wrap_future(future)),
                                          timeout)
        except TimeoutError:
            self._request_futures.pop(msg_id, None)
            self._result_types.pop(msg_id, None)
            future.cancel()
            raise

    # ── shutdown ──
    @lsp_method(lsp.SHUTDOWN)
    def lsp_shutdown(self, *args: Any) -> Any:  # type: ignore[override]
        """Refuse new requests at once, run the server's own shutdown (which may
        :meth:`drain` where it needs to), then drain whatever is still in flight."""
        self._shutdown_id = self.msg_id
        self._shutdown = True
        if (user_handler := self.fm.features.get(lsp.SHUTDOWN)) is not None:
            yield user_handler, args, None
        yield self.drain, (), None
        return None

    async def drain(self) -> None:
        """Let the requests in flight finish (for at most ``DRAIN_S``), then cancel the
        rest: each is answered ``-32800``, and what they waited on (handler tasks, our
        requests to the client) is cancelled too."""
        me = self._shutdown_id
        loop = asyncio.get_running_loop()
        deadline = loop.time() + DRAIN_S
        while any(k != me for k in self._open) and loop.time() < deadline:
            await asyncio.sleep(0.02)
        current = asyncio.current_task()
        for msg_id in [k for k in self._open if k != me]:
            future = self._request_futures.get(msg_id)
            if future is None or not future.cancel():
                self._send_response(msg_id, error=lsp.ResponseError(
                    code=REQUEST_CANCELLED, message=f"{self._open[msg_id]} was cancelled: "
                                                    "the server is shutting down"))
        for key, future in list(self._request_futures.items()):
            if key != me and future is not current and not future.done():
                future.cancel()
        await asyncio.sleep(0)  # let the cancelled handlers' answers go out


class AnsweringServer(LanguageServer):
    """A ``LanguageServer`` whose stdio and TCP loops read frames through
    :func:`read_loop`, so garbage gets an answer instead of a log line."""

    protocol: AnsweringProtocol

    def start_io(self, stdin: Any = None, stdout: Any = None) -> None:
        self._stop_event = threading.Event()
        source = stdin or sys.stdin.buffer
        self.protocol.set_writer(StdoutWriter(stdout or sys.stdout.buffer))

        async def run() -> None:
            await read_loop(self._stop_event, await _stdin_reader(source, self.thread_pool),
                            self.protocol)

        try:
            asyncio.run(run())
        except BrokenPipeError:
            log.error("the connection to the client is lost: shutting down")
        except (KeyboardInterrupt, SystemExit):
            pass
        finally:
            self.shutdown()

    def start_tcp(self, host: str, port: int) -> None:
        self._stop_event = stop = threading.Event()

        async def connection(reader: asyncio.StreamReader,
                             writer: asyncio.StreamWriter) -> None:
            self.protocol.set_writer(writer)  # type: ignore[arg-type]
            await read_loop(stop, reader, self.protocol)
            self.shutdown()

        async def serve() -> None:
            self._server = await asyncio.start_server(connection, host, port)
            async with self._server:
                await self._server.serve_forever()

        with contextlib.suppress(asyncio.CancelledError):
            asyncio.run(serve())
