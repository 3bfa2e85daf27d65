"""The subject model behind ``continue``: the core's ContinueRequest through a provider.

Buffer trees use the completion shape (the path's text, with the tree's system context
in front only when it has one); dialogue trees use the chat shape, n replies in parallel.
The request may name other models than the default (``model:``, ``models:a,b``): several
are asked at once, each for ``n``, and each continuation says which model made it.
The executor runs in a worker thread, so each call gets its own event loop (SDK clients
are tied to the loop they were made on).
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING

from loom.commands.context import NamedModel, PresetChoice
from loom.errors import LoomError
from loom.llm.base import (
    ChatMessage,
    Completion,
    GenerationResult,
    ModelError,
    Provider,
    Usage,
)
from loom.llm.config import (
    BUILTIN_PROFILES,
    LoomConfig,
    ModelProfile,
    load_config,
    resolve_profile,
)
from loom.llm.fill import fill_text
from loom.llm.registry import make_provider
from loom.model.sampling import Sampling

if TYPE_CHECKING:
    from loom.commands.context import ContinueRequest, FillRequest, ScoreRequest
    from loom.llm.scoring import Scored


class ProviderSubject:
    """The subject model: a default profile, and any other the request names."""

    def __init__(self, profile: ModelProfile) -> None:
        self.profile = profile
        self.name = f"{profile.provider}:{profile.model}"

    def choices(self) -> list[NamedModel]:
        """The default profile, then the config's, then the built-in ones."""
        try:
            config = load_config()
        except ModelError:  # a broken config file: the default and the built-in ones
            config = LoomConfig()
        profiles = {self.profile.name: self.profile, **config.profiles, **BUILTIN_PROFILES}
        return [NamedModel(name, f"{p.provider} {_short(p.model)}",
                            ready=p.provider == "local" or p.api_key() is not None,
                            default=name == self.profile.name)
                for name, p in profiles.items()]

    def presets(self) -> list[PresetChoice]:
        """The sampler presets of the configuration (``[presets.NAME]``)."""
        try:
            config = load_config()
        except ModelError as err:
            raise LoomError("MODEL_ERROR", err.message, err.hint) from err
        return [PresetChoice(name, p.summary(), p.sampling())
                for name, p in config.presets.items()]

    def _profile(self, name: str) -> ModelProfile:
        if name == self.profile.name:
            return self.profile
        try:
            return resolve_profile("subject", name)
        except ModelError as err:
            raise LoomError("MODEL_ERROR", err.message, err.hint) from err

    def generate(self, request: ContinueRequest,
                 on_delta: Callable[[int, str], None] | None = None) -> GenerationResult:
        profiles = [self._profile(name) for name in request.models or (self.profile.name,)]
        chat = request.prompt is None
        try:
            providers = [make_provider(p) for p in profiles]  # one each, checked, then asked
            for profile, provider in zip(profiles, providers, strict=True):
                _check_offered(profile, provider, request.sampling, chat=chat)
            return asyncio.run(self._generate(profiles, providers, request, on_delta))
        except ModelError as err:
            raise LoomError("MODEL_ERROR", err.message, err.hint) from err

    def score(self, request: ScoreRequest) -> Scored:
        """``→ score``: the request's text scored by its profile (``model:``), else the
        default one (``llm/scoring``)."""
        from loom.llm.scoring import Piece, score_text

        profile = self._profile(request.model) if request.model else self.profile
        pieces = [Piece(text, wanted) for text, wanted in request.pieces]

        async def run() -> Scored:
            cancel = asyncio.Event()
            watcher = asyncio.create_task(_bridge(request.cancel, cancel))
            try:
                return await score_text(profile, request.prefix, pieces, cancel=cancel,
                                        on_progress=request.on_progress)
            finally:
                watcher.cancel()

        try:
            return asyncio.run(run())
        except ModelError as err:
            raise LoomError("MODEL_ERROR", err.message, err.hint) from err

    def fill(self, request: FillRequest,
             on_delta: Callable[[int, str], None] | None = None) -> GenerationResult:
        """``→ fill``: ``n`` texts for the request's span from each model asked, by each
        model's strategy (``llm/fill.py``)."""
        profiles = [self._profile(name) for name in request.models or (self.profile.name,)]
        try:
            providers = [make_provider(p) for p in profiles]
            for profile, provider in zip(profiles, providers, strict=True):
                _check_offered(profile, provider, request.sampling,
                               chat=profile.fill_with == "instruct")
            return asyncio.run(self._fill(profiles, providers, request, on_delta))
        except ModelError as err:
            raise LoomError("MODEL_ERROR", err.message, err.hint) from err

    async def _fill(self, profiles: list[ModelProfile], providers: list[Provider],
                    request: FillRequest,
                    on_delta: Callable[[int, str], None] | None) -> GenerationResult:
        cancel = asyncio.Event()
        watcher = asyncio.create_task(_bridge(request.cancel, cancel))
        before = f"{request.system}\n\n{request.before}" if request.system else request.before
        n = request.sampling.count

        async def one(k: int, profile: ModelProfile) -> GenerationResult:
            shifted = None if on_delta is None else (
                lambda i, piece: on_delta(k * n + i, piece))
            try:
                return _with_profile(await fill_text(
                    providers[k], profile, before, request.after, request.replaced,
                    request.sampling, shifted, cancel), profile)
            finally:
                close = getattr(providers[k], "aclose", None)
                if close is not None:
                    with contextlib.suppress(Exception):
                        await close()

        try:
            if len(profiles) == 1:
                return await one(0, profiles[0])
            outcomes = await asyncio.gather(*(one(k, p) for k, p in enumerate(profiles)),
                                            return_exceptions=True)
            return _merged(profiles, outcomes, n)
        finally:
            watcher.cancel()

    async def _generate(self, profiles: list[ModelProfile], providers: list[Provider],
                        request: ContinueRequest,
                        on_delta: Callable[[int, str], None] | None) -> GenerationResult:
        cancel = asyncio.Event()
        watcher = asyncio.create_task(_bridge(request.cancel, cancel))
        try:
            if len(profiles) == 1:
                return await _one(profiles[0], providers[0], request, on_delta, cancel)
            n = request.sampling.count

            def shifted(k: int) -> Callable[[int, str], None] | None:
                return None if on_delta is None else (lambda i, piece: on_delta(k * n + i, piece))

            outcomes = await asyncio.gather(
                *(_one(p, providers[k], request, shifted(k), cancel)
                  for k, p in enumerate(profiles)),
                return_exceptions=True)
            return _merged(profiles, outcomes, n)
        finally:
            watcher.cancel()


async def _one(profile: ModelProfile, provider: Provider, request: ContinueRequest,
               on_delta: Callable[[int, str], None] | None,
               cancel: asyncio.Event) -> GenerationResult:
    """``request`` of one model: ``n`` completions of the prose (buffer trees), or ``n``
    replies to the conversation in parallel (dialogue trees)."""
    sampling = request.sampling  # the profile's defaults fill its gaps: call_params
    try:
        if request.prompt is not None:
            prompt = request.prompt
            if request.system:
                prompt = f"{request.system}\n\n{prompt}"
            result = await provider.complete(prompt, sampling, on_delta=on_delta,
                                             cancel=cancel)
            return _with_profile(result, profile)
        messages = [ChatMessage(role="system", content=request.system)] \
            if request.system else []
        messages += [ChatMessage(role=m["role"], content=m["content"])  # type: ignore[arg-type]
                     for m in request.messages or []]
        if not messages or (messages[-1].role == "assistant" and len(messages) == 1):
            messages.append(ChatMessage(role="user", content="Continue."))

        # (imported here: the provider modules need a model extra that may be missing)
        from loom.llm.providers.strategies import replies

        return _with_profile(await replies(provider.chat, messages, sampling, on_delta,
                                           cancel), profile)
    finally:
        close = getattr(provider, "aclose", None)
        if close is not None:
            with contextlib.suppress(Exception):  # closing must not hide the outcome
                await close()


def _with_profile(result: GenerationResult, profile: ModelProfile) -> GenerationResult:
    """The result, its parameters naming the profile that made it (``→ regenerate`` asks
    the same one)."""
    return result.model_copy(update={"params": {**result.params, "profile": profile.name}})


def _merged(profiles: list[ModelProfile], outcomes: list[GenerationResult | BaseException],
            n: int) -> GenerationResult:
    """One request's continuations from several models: model k's are numbered from
    k·n, each says which model made it; a model that failed is said, the others kept."""
    completions: list[Completion] = []
    failures: list[str] = []
    done: list[GenerationResult] = []
    for k, (profile, outcome) in enumerate(zip(profiles, outcomes, strict=True)):
        if isinstance(outcome, LoomError | ModelError):
            failures.append(f"{profile.name}: {outcome.message}")
            continue
        if isinstance(outcome, BaseException):
            raise outcome
        done.append(outcome)
        completions += [c.model_copy(update={
            "index": k * n + c.index, "model": outcome.model, "provider": outcome.provider,
            "params": outcome.params, "usage": c.usage or (outcome.usage if n == 1 else None)})
            for c in outcome.completions]
    if not done:
        first = next(o for o in outcomes if isinstance(o, BaseException))
        raise first
    usage = Usage()
    for outcome in done:
        usage = usage + outcome.usage
    return GenerationResult(
        completions=completions, model=" + ".join(o.model for o in done),
        provider=" + ".join(dict.fromkeys(o.provider for o in done)),
        params={**done[0].params, "models": [p.name for p in profiles]}, usage=usage,
        latency_ms=max(o.latency_ms for o in done),
        raw=[chunk for o in done for chunk in o.raw], failures=failures)


def _check_offered(profile: ModelProfile, provider: Provider, sampling: Sampling, *,
                   chat: bool) -> None:
    """A sampling option the profile's API lacks is the command's mistake: said before
    any model is asked."""
    refused = getattr(provider, "refused", None)
    missing = refused(sampling, chat=chat) if refused is not None else []
    if missing:
        names = ", ".join(f"{m}:" for m in missing)
        api = "chat" if chat else "completion"
        raise LoomError(
            "INVALID_SYNTAX",
            f"{names} {'is' if len(missing) == 1 else 'are'} not offered by {profile.provider}"
            f"'s {api} API ({profile.name}: {profile.model})",
            f"leave {names} out, or continue with a model that takes "
            f"{'it' if len(missing) == 1 else 'them'}: → help continue lists the models")


def _short(model: str) -> str:
    """A model's name as a person reads it (a .gguf path: its file name)."""
    return model.rsplit("/", 1)[-1]


async def _bridge(source: threading.Event | None, target: asyncio.Event) -> None:
    """A front end's threading.Event (set from another thread) to the provider's."""
    if source is None:
        return
    while not source.is_set():
        await asyncio.sleep(0.05)
    target.set()


def known_models() -> list[NamedModel]:
    """The models ``model:`` may name, the configured subject's default first."""
    try:
        default = resolve_profile("subject")
    except ModelError:  # a broken config names no default: the local model is one
        default = BUILTIN_PROFILES["local"]
    return ProviderSubject(default).choices()


def known_presets() -> list[PresetChoice]:
    """The sampler presets ``preset:`` may name (none where the config cannot be read)."""
    try:
        return ProviderSubject(BUILTIN_PROFILES["local"]).presets()
    except LoomError:
        return []


def configured_subject(name: str | None = None) -> ProviderSubject:
    """The subject model from the configuration (a hosted base model when its key is set,
    else the bundled local model)."""
    return ProviderSubject(resolve_profile("subject", name))
