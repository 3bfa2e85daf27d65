"""Pieces every provider shares: parameters, error translation, request logging, running."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Coroutine, Iterator, Mapping
from typing import Any

from loom.llm.aio import run_cancellable
from loom.llm.assemble import DeltaCallbackError
from loom.llm.base import ModelError
from loom.llm.config import ModelProfile
from loom.llm.errors import classify, make_error
from loom.model.sampling import API_NAMES, EXTRA_RESERVED, Sampling, extra_problem
from loom.redact import install_log_redaction, redact_obj

log = logging.getLogger("loom.llm")
install_log_redaction()

CONTINUE_SYSTEM = "Continue the text exactly where it stops; output only the continuation."


def call_params(profile: ModelProfile, sampling: Sampling | None) -> dict[str, Any]:
    """The effective parameters of a call, under the APIs' names: what the request chose,
    else the profile's default (the one place defaults are applied)."""
    sampling = sampling or Sampling()
    if sampling.count < 1:
        raise ModelError("bad_request", f"n must be at least 1 (got {sampling.count})",
                         "ask for n ≥ 1")
    params: dict[str, Any] = {"n": sampling.count}
    for field in Sampling.model_fields:
        name = API_NAMES.get(field, field)
        value = getattr(sampling, field)
        if name in params:
            continue
        if value is not None:
            params[name] = value
        elif name in ModelProfile.model_fields:  # what the profile sets, set or not
            params[name] = getattr(profile, name)
    return params


# Always accepted: n is made by parallel requests where an API has no n; logprobs are
# reported where an API offers them (the editor says why a node has none).
_ALWAYS = frozenset({"n", "logprobs"})


def refused(sampling: Sampling, takes: Mapping[str, str]) -> list[str]:
    """The options ``sampling`` sets that an API taking ``takes`` has no parameter for."""
    return [k for k in sampling.chosen()
            if k not in _ALWAYS and API_NAMES.get(k, k) not in takes]


def payload_of(params: Mapping[str, Any], names: Mapping[str, str]) -> dict[str, Any]:
    """The parameters an API takes (``names``: ours → its), under its names; those unset
    (None, no stop strings) left out. ``extra`` is not one: :func:`extra_of` sends it."""
    return {names[k]: v for k, v in params.items()
            if k in names and k != "extra" and v is not None and v != []}


def extra_of(params: Mapping[str, Any], payload: Mapping[str, Any]) -> dict[str, Any]:
    """``extra:``'s keys that may go into a request whose own keys are ``payload``: never
    one Loom sets (the command's check refuses them; this keeps it so for any caller)."""
    extra = params.get("extra") or {}
    return {k: v for k, v in extra.items()
            if isinstance(k, str) and k not in payload and k.lower() not in EXTRA_RESERVED
            and extra_problem({k: v}) is None}


def error_context(profile: ModelProfile) -> dict[str, Any]:
    return {
        "provider": profile.provider,
        "key_env": profile.api_key_env,
        "base_url": profile.base_url,
        "model": profile.model,
        "profile": profile.name,
    }


@contextlib.contextmanager
def sdk_errors(profile: ModelProfile) -> Iterator[None]:
    """Translate anything the SDK or transport raises into a :class:`ModelError`."""
    try:
        yield
    except (ModelError, DeltaCallbackError):
        raise
    except Exception as exc:
        raise classify(exc, **error_context(profile)) from exc


def malformed(profile: ModelProfile, what: str) -> ModelError:
    return make_error("malformed", f"{profile.provider} {what}", **error_context(profile))


def missing_key(profile: ModelProfile) -> ModelError:
    return make_error(
        "auth", f"no API key for {profile.provider} ({profile.name})", **error_context(profile)
    )


def log_request(profile: ModelProfile, endpoint: str, payload: dict[str, Any]) -> None:
    if log.isEnabledFor(logging.DEBUG):
        log.debug("%s %s request: %s", profile.provider, endpoint, redact_obj(payload))


async def run(body: Coroutine[Any, Any, None], cancel: asyncio.Event | None) -> None:
    """Run a generation body under ``cancel``; a failing ``on_delta`` raises its own error."""
    try:
        await run_cancellable(body, cancel)
    except DeltaCallbackError as exc:
        raise exc.original from None


class SDKProvider:
    """What the SDK-backed providers share: the profile, the retry policy, and an SDK
    client rebuilt only when the resolved key changes (its pool closed by ``aclose``)."""

    def __init__(self, profile: ModelProfile) -> None:
        from loom.llm.retry import RetryPolicy

        self.profile = profile
        self.name = profile.provider
        self.policy = RetryPolicy.from_profile(profile)
        self._client: Any = None
        self._client_key: str | None = None

    def _make_client(self, key: str) -> Any:  # pragma: no cover - each SDK's own
        raise NotImplementedError

    def _key(self) -> str:
        secret = self.profile.api_key()
        if secret is None:
            raise missing_key(self.profile)
        return secret.get_secret_value()

    def takes(self, chat: bool) -> Mapping[str, str]:  # pragma: no cover - each API's own
        """The request parameters the API takes, ours → its (``call_params``'s names)."""
        raise NotImplementedError

    def refused(self, sampling: Sampling, *, chat: bool) -> list[str]:
        """The options of ``sampling`` this provider's API (chat or completion) lacks."""
        return refused(sampling, self.takes(chat))

    def client(self) -> Any:
        key = self._key()
        if self._client is None or key != self._client_key:
            self._client = self._make_client(key)
            self._client_key = key
        return self._client

    async def aclose(self) -> None:
        """Close the SDK client's connection pool."""
        if self._client is not None:
            await self._client.close()
            self._client = None
