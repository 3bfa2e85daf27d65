"""A scriptable fake of the OpenAI and Anthropic HTTP APIs for tests and benchmarks.

Real SDK clients talk to it over 127.0.0.1. Each endpoint has a queue of scripted
replies; when the queue is empty a default responder answers (by default a realistic
streamed or JSON reply built from the request: ``n``, ``stream``, ``logprobs``). Every
request is recorded for assertions.

    with FakeProvider() as fake:
        fake.script(OPENAI_COMPLETIONS, error_reply(429), openai_completion_stream(["Hi"]))
        client = openai.AsyncOpenAI(base_url=fake.openai_base_url, api_key="sk-test")
        ...
        assert len(fake.requests_to(OPENAI_COMPLETIONS)) == 2

A reply is a :class:`Reply` (status, headers, a full body or a list of SSE frames, a
delay before answering and between frames, a connection dropped mid-stream) or a
callable ``(RecordedRequest) -> Reply``. Builders: ``json_reply``, ``sse_reply``,
``error_reply`` (OpenAI or Anthropic error shape), ``malformed_reply``, ``delay_reply``,
``openai_completion_stream`` (n choices interleaved, optional logprobs),
``openai_chat_stream``, ``anthropic_stream`` (the real Messages event sequence), and
``auto_openai`` / ``auto_anthropic`` (the defaults).

Under tests/e2e the ``fake`` fixture (conftest.py) is a started one; ``chat_profile`` is a
model profile for its chat endpoint (the collaborator's model, a judge).
"""

from __future__ import annotations

import json
import math
import re
import socket
import threading
import time
from collections import defaultdict, deque
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from loom.llm.config import ModelProfile

OPENAI_COMPLETIONS = "/v1/completions"
OPENAI_CHAT = "/v1/chat/completions"
ANTHROPIC_MESSAGES = "/v1/messages"
DEFAULT_TEXT = "The quick brown fox jumps over the lazy dog."


@dataclass
class Reply:
    status: int = 200
    body: bytes | None = None
    events: list[bytes] | None = None  # SSE frames, each already ending in a blank line
    headers: dict[str, str] = field(default_factory=dict)
    content_type: str = "application/json"
    delay_s: float = 0.0  # before the status line (for timeouts)
    event_delay_s: float = 0.0  # between SSE frames (for cancellation)
    drop_after: int | None = None  # close the connection after this many frames


@dataclass
class RecordedRequest:
    method: str
    path: str
    headers: dict[str, str]
    body: bytes

    @property
    def json(self) -> Any:
        try:
            return json.loads(self.body or b"null")
        except ValueError:
            return None


Responder = Reply | Callable[[RecordedRequest], Reply]


# -- reply builders -------------------------------------------------------------------


def json_reply(
    body: Any, status: int = 200, headers: dict[str, str] | None = None, delay_s: float = 0.0
) -> Reply:
    return Reply(
        status=status, body=json.dumps(body).encode(), headers=dict(headers or {}), delay_s=delay_s
    )


def sse_frame(data: Any, event: str | None = None) -> bytes:
    text = data if isinstance(data, str) else json.dumps(data)
    head = f"event: {event}\n" if event else ""
    return f"{head}data: {text}\n\n".encode()


def sse_reply(
    events: list[Any],
    *,
    done: bool = True,
    event_delay_s: float = 0.0,
    delay_s: float = 0.0,
    drop_after: int | None = None,
) -> Reply:
    """A ``text/event-stream`` reply. Items: a dict (``data:`` JSON), a str (raw
    ``data:`` text, e.g. malformed), or ``(event_name, data)``. ``done`` appends
    ``data: [DONE]`` (OpenAI style)."""
    frames = []
    for item in events:
        if isinstance(item, tuple):
            frames.append(sse_frame(item[1], event=item[0]))
        else:
            frames.append(sse_frame(item))
    if done:
        frames.append(b"data: [DONE]\n\n")
    return Reply(
        events=frames,
        content_type="text/event-stream",
        event_delay_s=event_delay_s,
        delay_s=delay_s,
        drop_after=drop_after,
    )


_ERROR_TYPES = {
    400: ("invalid_request_error", "invalid_request_error"),
    401: ("authentication_error", "invalid_api_key"),
    403: ("permission_error", "permission_denied"),
    404: ("not_found_error", "not_found"),
    429: ("rate_limit_error", "rate_limit_exceeded"),
    500: ("api_error", "server_error"),
    503: ("overloaded_error", "server_error"),
    529: ("overloaded_error", "server_error"),
}


def error_reply(
    status: int,
    message: str | None = None,
    *,
    flavor: str = "openai",
    headers: dict[str, str] | None = None,
) -> Reply:
    """An error in the provider's own JSON shape (``flavor``: "openai" or "anthropic")."""
    anthropic_type, openai_code = _ERROR_TYPES.get(status, ("api_error", "server_error"))
    message = message or f"fake error {status}"
    if flavor == "anthropic":
        body = {"type": "error", "error": {"type": anthropic_type, "message": message}}
    else:
        body = {
            "error": {"message": message, "type": openai_code, "param": None, "code": openai_code}
        }
    return json_reply(body, status=status, headers=headers)


def malformed_reply(
    text: str = "<html>not json{", *, status: int = 200, content_type: str = "application/json"
) -> Reply:
    return Reply(status=status, body=text.encode(), content_type=content_type)


def delay_reply(seconds: float, then: Reply | None = None) -> Reply:
    """``then`` (default: a small JSON body) after sleeping ``seconds`` first."""
    reply = then or json_reply({"ok": True})
    reply.delay_s = seconds
    return reply


def pieces(text: str) -> list[str]:
    """Split text into token-like pieces (" quick", " brown", …)."""
    return re.findall(r"\s*\S+", text) or [text]


def openai_completion_chunks(
    texts: list[str],
    *,
    model: str = "fake-base",
    logprobs: int | None = None,
    finish_reason: str = "length",
    usage: bool = True,
    prompt_tokens: int = 5,
) -> list[dict[str, Any]]:
    """Completions-endpoint stream chunks for len(texts) choices, pieces interleaved."""
    split = [pieces(t) for t in texts]
    chunks: list[dict[str, Any]] = []
    offsets = [0] * len(texts)

    def chunk(choices: list[dict[str, Any]], **extra: Any) -> dict[str, Any]:
        return {
            "id": "cmpl-fake",
            "object": "text_completion",
            "created": 1700000000,
            "model": model,
            "choices": choices,
            **extra,
        }

    for step in range(max(len(p) for p in split)):
        for index, parts in enumerate(split):
            if step >= len(parts):
                continue
            piece = parts[step]
            lp = None
            if logprobs is not None:
                lp = {
                    "tokens": [piece],
                    "token_logprobs": [-0.25 - step / 10],
                    "top_logprobs": [{piece: -0.25 - step / 10, " alt": -2.0}][: logprobs or 1],
                    "text_offset": [offsets[index]],
                }
            offsets[index] += len(piece)
            chunks.append(
                chunk([{"text": piece, "index": index, "logprobs": lp, "finish_reason": None}])
            )
    for index in range(len(texts)):
        chunks.append(
            chunk([{"text": "", "index": index, "logprobs": None, "finish_reason": finish_reason}])
        )
    if usage:
        total = sum(len(p) for p in split)
        chunks.append(
            chunk(
                [],
                usage={
                    "prompt_tokens": prompt_tokens,
                    "completion_tokens": total,
                    "total_tokens": prompt_tokens + total,
                },
            )
        )
    return chunks


def openai_completion_stream(texts: list[str], **kw: Any) -> Reply:
    event_delay_s = kw.pop("event_delay_s", 0.0)
    return sse_reply(openai_completion_chunks(texts, **kw), event_delay_s=event_delay_s)


#: One generated token for :func:`openai_logprob_stream`: its text, its logprob, and the
#: top alternatives at its place (``(text, logprob)``, the token itself among them or not).
LogprobToken = tuple[str, float, list[tuple[str, float]]]


def openai_logprob_stream(choices: list[list[LogprobToken]], *, model: str = "fake-base",
                          event_delay_s: float = 0.0) -> Reply:
    """A completions stream (one chunk per token, choices interleaved) whose every token
    carries the logprobs a real server sends with ``logprobs: k``."""
    chunks: list[dict[str, Any]] = []
    offsets = [0] * len(choices)
    for step in range(max((len(c) for c in choices), default=0)):
        for index, tokens in enumerate(choices):
            if step >= len(tokens):
                continue
            text, lp, alts = tokens[step]
            chunks.append({
                "id": "cmpl-fake", "object": "text_completion", "created": 1700000000,
                "model": model, "choices": [{
                    "text": text, "index": index, "finish_reason": None,
                    "logprobs": {"tokens": [text], "token_logprobs": [lp],
                                 "top_logprobs": [dict(alts)],
                                 "text_offset": [offsets[index]]}}]})
            offsets[index] += len(text)
    for index in range(len(choices)):
        chunks.append({"id": "cmpl-fake", "object": "text_completion", "created": 1700000000,
                       "model": model, "choices": [{"text": "", "index": index,
                                                    "logprobs": None,
                                                    "finish_reason": "length"}]})
    return sse_reply(chunks, event_delay_s=event_delay_s)


def openai_completion_json(texts: list[str], *, model: str = "fake-base") -> Reply:
    return json_reply(
        {
            "id": "cmpl-fake",
            "object": "text_completion",
            "created": 1700000000,
            "model": model,
            "choices": [
                {"text": t, "index": i, "logprobs": None, "finish_reason": "length"}
                for i, t in enumerate(texts)
            ],
            "usage": {"prompt_tokens": 5, "completion_tokens": 10, "total_tokens": 15},
        }
    )


def openai_chat_chunks(
    text: str, *, model: str = "fake-chat", usage: bool = True
) -> list[dict[str, Any]]:
    def chunk(choices: list[dict[str, Any]], **extra: Any) -> dict[str, Any]:
        return {
            "id": "chatcmpl-fake",
            "object": "chat.completion.chunk",
            "created": 1700000000,
            "model": model,
            "choices": choices,
            **extra,
        }

    chunks = [
        chunk([{"index": 0, "delta": {"role": "assistant", "content": ""}, "finish_reason": None}])
    ]
    parts = pieces(text)
    chunks += [chunk([{"index": 0, "delta": {"content": p}, "finish_reason": None}]) for p in parts]
    chunks.append(chunk([{"index": 0, "delta": {}, "finish_reason": "stop"}]))
    if usage:
        chunks.append(
            chunk(
                [],
                usage={
                    "prompt_tokens": 7,
                    "completion_tokens": len(parts),
                    "total_tokens": 7 + len(parts),
                },
            )
        )
    return chunks


def openai_chat_stream(text: str, **kw: Any) -> Reply:
    event_delay_s = kw.pop("event_delay_s", 0.0)
    return sse_reply(openai_chat_chunks(text, **kw), event_delay_s=event_delay_s)


def openai_chat_json(text: str, *, model: str = "fake-chat") -> Reply:
    return json_reply(
        {
            "id": "chatcmpl-fake",
            "object": "chat.completion",
            "created": 1700000000,
            "model": model,
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": text},
                    "finish_reason": "stop",
                }
            ],
            "usage": {"prompt_tokens": 7, "completion_tokens": 3, "total_tokens": 10},
        }
    )


def anthropic_events(
    text: str, *, model: str = "fake-claude", stop_reason: str = "end_turn", input_tokens: int = 11
) -> list[tuple[str, dict[str, Any]]]:
    """The real Messages streaming sequence for one text block."""
    parts = pieces(text)
    events: list[tuple[str, dict[str, Any]]] = [
        (
            "message_start",
            {
                "type": "message_start",
                "message": {
                    "id": "msg_fake",
                    "type": "message",
                    "role": "assistant",
                    "content": [],
                    "model": model,
                    "stop_reason": None,
                    "stop_sequence": None,
                    "usage": {"input_tokens": input_tokens, "output_tokens": 1},
                },
            },
        ),
        (
            "content_block_start",
            {
                "type": "content_block_start",
                "index": 0,
                "content_block": {"type": "text", "text": ""},
            },
        ),
        ("ping", {"type": "ping"}),
    ]
    events += [
        (
            "content_block_delta",
            {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": p}},
        )
        for p in parts
    ]
    events += [
        ("content_block_stop", {"type": "content_block_stop", "index": 0}),
        (
            "message_delta",
            {
                "type": "message_delta",
                "delta": {"stop_reason": stop_reason, "stop_sequence": None},
                "usage": {"output_tokens": len(parts)},
            },
        ),
        ("message_stop", {"type": "message_stop"}),
    ]
    return events


def anthropic_stream(text: str, *, event_delay_s: float = 0.0, **kw: Any) -> Reply:
    return sse_reply(anthropic_events(text, **kw), done=False, event_delay_s=event_delay_s)


def anthropic_json(text: str, *, model: str = "fake-claude") -> Reply:
    return json_reply(
        {
            "id": "msg_fake",
            "type": "message",
            "role": "assistant",
            "model": model,
            "content": [{"type": "text", "text": text}],
            "stop_reason": "end_turn",
            "stop_sequence": None,
            "usage": {"input_tokens": 11, "output_tokens": 9},
        }
    )


def auto_openai(text: str = DEFAULT_TEXT) -> Callable[[RecordedRequest], Reply]:
    """Answer any completions/chat request from its own parameters."""

    def respond(request: RecordedRequest) -> Reply:
        body = request.json or {}
        model = body.get("model", "fake")
        if request.path == OPENAI_CHAT:
            if body.get("stream"):
                return openai_chat_stream(text, model=model)
            return openai_chat_json(text, model=model)
        n = int(body.get("n") or 1)
        texts = [text if i == 0 else f"{text} ({i})" for i in range(n)]
        if body.get("stream"):
            return openai_completion_stream(texts, model=model, logprobs=body.get("logprobs"))
        return openai_completion_json(texts, model=model)

    return respond


def openai_echo(unlikely: tuple[str, ...] = ("fjord",), choice: str = " the"
                ) -> Callable[[RecordedRequest], Reply]:
    """Legacy completions with ``echo`` and ``logprobs`` (OpenAI's completion models,
    vLLM): the prompt's words as tokens with ``text_offset``, the first one's probability
    null, then one generated token. A word holding one of ``unlikely`` has p = 0.0002, the
    rest 0.5; ``choice`` (p = 0.3) is the model's own first choice at each of them. A
    request without ``echo`` is refused, as llama-server refuses ``echo``."""

    def respond(req: RecordedRequest) -> Reply:
        body = req.json or {}
        if not body.get("echo"):
            return error_reply(400, "only echo here")
        prompt = body["prompt"]
        words = [(m.group(), m.start()) for m in re.finditer(r"\s*\S+|\s+", prompt)]

        def lp(word: str) -> float:
            return math.log(0.0002) if any(u in word for u in unlikely) else math.log(0.5)

        tokens = [w for w, _ in words] + [" more"]
        offsets = [o for _, o in words] + [len(prompt)]
        values = [None, *(lp(w) for w, _ in words[1:]), -1.0]
        tops = [None, *({w: lp(w), choice: math.log(0.3)} for w, _ in words[1:]),
                {" more": -1.0}]
        return json_reply({"id": "cmpl-echo", "object": "text_completion", "created": 1,
                           "model": body.get("model", "fake"), "choices": [{
                               "index": 0, "text": prompt + " more", "finish_reason": "length",
                               "logprobs": {"tokens": tokens, "token_logprobs": values,
                                            "top_logprobs": tops, "text_offset": offsets}}]})

    return respond


def auto_anthropic(text: str = DEFAULT_TEXT) -> Callable[[RecordedRequest], Reply]:
    def respond(request: RecordedRequest) -> Reply:
        body = request.json or {}
        model = body.get("model", "fake-claude")
        if body.get("stream"):
            return anthropic_stream(text, model=model)
        return anthropic_json(text, model=model)

    return respond


# -- the server -----------------------------------------------------------------------


class FakeProvider:
    """A threaded HTTP server on 127.0.0.1 speaking the scripted replies."""

    def __init__(self, text: str = DEFAULT_TEXT, port: int = 0) -> None:
        self._lock = threading.Lock()
        self._queues: dict[str, deque[Responder]] = defaultdict(deque)
        self._defaults: dict[str, Responder] = {
            OPENAI_COMPLETIONS: auto_openai(text),
            OPENAI_CHAT: auto_openai(text),
            ANTHROPIC_MESSAGES: auto_anthropic(text),
        }
        self.requests: list[RecordedRequest] = []
        self._stopping = threading.Event()
        self._server = _QuietServer(("127.0.0.1", port), _handler_for(self))
        self._server.daemon_threads = True
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}"

    @property
    def openai_base_url(self) -> str:
        return f"{self.url}/v1"

    @property
    def anthropic_base_url(self) -> str:
        return self.url

    def start(self) -> FakeProvider:
        self._thread = threading.Thread(
            target=self._server.serve_forever, daemon=True, kwargs={"poll_interval": 0.05}
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stopping.set()
        self._server.shutdown()
        self._server.server_close()

    def __enter__(self) -> FakeProvider:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def script(self, path: str, *replies: Responder) -> None:
        """Queue replies for ``path``; each request takes the next one."""
        with self._lock:
            self._queues[path].extend(replies)

    def set_default(self, path: str, reply: Responder) -> None:
        """What ``path`` answers once its queue is empty (a Reply is reused every time)."""
        with self._lock:
            self._defaults[path] = reply

    def reset(self) -> None:
        with self._lock:
            self._queues.clear()
            self.requests.clear()

    def requests_to(self, path: str) -> list[RecordedRequest]:
        with self._lock:
            return [r for r in self.requests if r.path == path]

    def pending(self, path: str) -> int:
        with self._lock:
            return len(self._queues[path])

    def _take(self, request: RecordedRequest) -> Reply:
        with self._lock:
            self.requests.append(request)
            queue = self._queues[request.path]
            responder = queue.popleft() if queue else self._defaults.get(request.path)
        if responder is None:
            return json_reply({"error": {"message": f"no reply for {request.path}"}}, 404)
        if isinstance(responder, Reply):
            return responder
        return responder(request)

    def _sleep(self, seconds: float) -> None:
        if seconds > 0:
            self._stopping.wait(seconds)


class _QuietServer(ThreadingHTTPServer):
    """Clients dropping connections (timeouts, cancellation) are expected here."""

    def handle_error(self, request: Any, client_address: Any) -> None:
        import sys

        if not isinstance(sys.exc_info()[1], ConnectionError | OSError):
            super().handle_error(request, client_address)


def _handler_for(fake: FakeProvider) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def setup(self) -> None:
            super().setup()
            self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

        def log_message(self, format: str, *args: Any) -> None:
            pass

        def do_GET(self) -> None:
            self._handle()

        def do_POST(self) -> None:
            self._handle()

        def _handle(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(length) if length else b""
            request = RecordedRequest(
                method=self.command,
                path=self.path.split("?", 1)[0],
                headers={k.lower(): v for k, v in self.headers.items()},
                body=body,
            )
            reply = fake._take(request)
            try:
                self._send(reply)
            except (BrokenPipeError, ConnectionResetError):
                self.close_connection = True

        def _send(self, reply: Reply) -> None:
            fake._sleep(reply.delay_s)
            self.send_response(reply.status)
            self.send_header("Content-Type", reply.content_type)
            for name, value in reply.headers.items():
                self.send_header(name, value)
            if reply.events is None:
                data = reply.body or b""
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)
                return
            self.send_header("Transfer-Encoding", "chunked")
            self.send_header("Cache-Control", "no-cache")
            self.end_headers()
            frames = reply.events
            if reply.drop_after is not None:
                frames = frames[: reply.drop_after]
            if reply.event_delay_s <= 0:
                self.wfile.write(b"".join(_chunk(f) for f in frames))
            else:
                for frame in frames:
                    self.wfile.write(_chunk(frame))
                    fake._sleep(reply.event_delay_s)
                    if fake._stopping.is_set():
                        break
            if reply.drop_after is not None:
                self.close_connection = True
                return
            self.wfile.write(b"0\r\n\r\n")

    return Handler


def _chunk(data: bytes) -> bytes:
    return b"%x\r\n%s\r\n" % (len(data), data)


def chat_profile(server: FakeProvider, name: str = "fake-collaborator",
                 **kw: Any) -> ModelProfile:
    """A profile for ``server``'s chat endpoint (model ``fake-chat``), quick to give up."""
    from loom.llm.config import ModelProfile

    return ModelProfile(name=name, provider="openai-compatible",
                        base_url=server.openai_base_url, model="fake-chat", timeout_s=5,
                        backoff_base_s=0.01, backoff_max_s=0.05, max_attempts=2, **kw)


def wait_for(predicate: Callable[[], bool], timeout_s: float = 2.0) -> bool:
    """Poll ``predicate`` until true or ``timeout_s`` passes (for threaded assertions)."""
    end = time.monotonic() + timeout_s
    while time.monotonic() < end:
        if predicate():
            return True
        time.sleep(0.01)
    return predicate()


#: llama.cpp's fill-in-the-middle endpoint (at the server's root, beside ``/v1``).
LLAMA_INFILL = "/infill"


def llama_infill_stream(text: str, *, logprob: float = -0.5, **kw: Any) -> Reply:
    """llama.cpp's native stream for ``/infill``: a chunk per piece with its token's
    probability and one alternative, then the ``stop`` chunk."""
    chunks: list[Any] = [{
        "index": 0, "content": piece, "stop": False,
        "completion_probabilities": [{"token": piece, "logprob": logprob, "top_logprobs": [
            {"token": piece, "logprob": logprob}, {"token": " else", "logprob": -3.0}]}]}
        for piece in pieces(text)]
    chunks.append({"index": 0, "content": "", "stop": True, "stop_type": "eos",
                   "tokens_predicted": len(pieces(text)), "timings": {"prompt_n": 12}})
    return sse_reply(chunks, done=False, **kw)


def openai_chat_choices_stream(texts: list[str], *, model: str = "fake-chat") -> Reply:
    """A chat completions stream of ``len(texts)`` choices (a request's ``n``), their
    pieces interleaved by index as a server decoding them together sends them."""
    def chunk(choices: list[dict[str, Any]]) -> dict[str, Any]:
        return {"id": "chatcmpl-fake", "object": "chat.completion.chunk",
                "created": 1700000000, "model": model, "choices": choices}

    split = [pieces(t) for t in texts]
    chunks = [chunk([{"index": i, "delta": {"role": "assistant", "content": ""},
                      "finish_reason": None}]) for i in range(len(texts))]
    for step in range(max(len(p) for p in split)):
        chunks += [chunk([{"index": i, "delta": {"content": p[step]}, "finish_reason": None}])
                   for i, p in enumerate(split) if step < len(p)]
    chunks += [chunk([{"index": i, "delta": {}, "finish_reason": "stop"}])
               for i in range(len(texts))]
    return sse_reply(chunks)
