"""Turn whatever a provider call raised into a :class:`ModelError`.

Transport-class failures (timeouts, connection errors, 408/409/429, 5xx, provider
"overloaded" stream events) are ``retryable``; a reply Loom cannot parse is
``malformed`` and never retried; auth and request errors are final. Messages quote the
server's explanation, redacted of secrets (OpenAI echoes part of a wrong key on 401).
"""

from __future__ import annotations

import asyncio
import json
import sys
from email.utils import parsedate_to_datetime
from typing import Any

import pydantic

from loom.llm.base import ErrorKind, ModelError
from loom.redact import redact

HINTS: dict[ErrorKind, str] = {
    "timeout": "raise timeout_s in the model profile or lower tokens",
    "rate_limited": "wait a moment and retry, or lower n",
    "server": "the provider is having trouble; retry in a little while",
    "bad_request": "check the model name and parameters in the model profile",
    "malformed": "the reply was not understood; check that base_url points at an "
    "OpenAI- or Anthropic-compatible API",
    "cancelled": "",
}

RETRYABLE_KINDS: frozenset[ErrorKind] = frozenset({"timeout", "rate_limited", "server"})

# Error "type" strings in bodies (Anthropic's error.type, OpenAI's error.type / code).
_BODY_TYPES: dict[str, ErrorKind] = {
    "overloaded_error": "server",
    "api_error": "server",
    "server_error": "server",
    "rate_limit_error": "rate_limited",
    "rate_limit_exceeded": "rate_limited",
    "insufficient_quota": "rate_limited",
    "authentication_error": "auth",
    "invalid_api_key": "auth",
    "permission_error": "auth",
    "invalid_request_error": "bad_request",
    "not_found_error": "bad_request",
    "request_too_large": "bad_request",
    "timeout_error": "timeout",
}


def auth_hint(provider: str, key_env: str | None) -> str:
    where = f"set {key_env} or run " if key_env else "run "
    return f"{where}`keyring set loom {provider}`"


def make_error(
    kind: ErrorKind,
    message: str,
    *,
    provider: str,
    key_env: str | None = None,
    base_url: str | None = None,
    hint: str | None = None,
    status: int | None = None,
    retry_after_s: float | None = None,
    retryable: bool | None = None,
    model: str | None = None,
    profile: str | None = None,
) -> ModelError:
    if hint is None:
        if kind == "auth":
            hint = auth_hint(provider, key_env)
        elif kind == "unavailable":
            hint = f"check that {base_url} is reachable" if base_url else "check the network"
        else:
            hint = HINTS.get(kind) or None
    if retryable is None:
        retryable = kind in RETRYABLE_KINDS
    return ModelError(
        kind,
        redact(message),
        hint or None,
        retryable=retryable,
        status=status,
        retry_after_s=retry_after_s,
    )


def classify(
    exc: BaseException,
    *,
    provider: str,
    key_env: str | None = None,
    base_url: str | None = None,
    model: str | None = None,
    profile: str | None = None,
) -> ModelError:
    """The :class:`ModelError` for ``exc`` raised while talking to ``provider`` about
    ``model`` (the profile ``profile``'s)."""
    if isinstance(exc, ModelError):
        return exc
    ctx: dict[str, Any] = {"provider": provider, "key_env": key_env, "base_url": base_url,
                           "model": model, "profile": profile}

    sdk = _classify_sdk(exc, ctx)
    if sdk is not None:
        return sdk
    if _is_timeout(exc):
        return make_error("timeout", f"{provider} timed out", **ctx)
    if _is_transport(exc):
        return make_error("unavailable", f"cannot reach {provider}: {exc}", retryable=True, **ctx)
    if isinstance(exc, json.JSONDecodeError | pydantic.ValidationError | UnicodeDecodeError):
        return make_error("malformed", f"{provider} sent a reply that is not valid JSON", **ctx)
    return make_error(
        "server", f"unexpected error from {provider}: {_short(exc)}", retryable=False, **ctx
    )


def _classify_sdk(exc: BaseException, ctx: dict[str, Any]) -> ModelError | None:
    module = type(exc).__module__.split(".", 1)[0]
    if module not in ("openai", "anthropic"):
        return None
    sdk = sys.modules[module]
    provider = ctx["provider"]
    if isinstance(exc, sdk.APITimeoutError):
        return make_error("timeout", f"{provider} timed out", **ctx)
    if isinstance(exc, sdk.APIConnectionError):
        cause = exc.__cause__
        if cause is not None and _is_timeout(cause):
            return make_error("timeout", f"{provider} timed out", **ctx)
        return make_error(
            "unavailable", f"cannot reach {provider} ({_short(exc)})", retryable=True, **ctx
        )
    if isinstance(exc, sdk.APIResponseValidationError):
        return make_error("malformed", f"{provider} sent a reply Loom cannot read", **ctx)
    if isinstance(exc, sdk.APIStatusError):
        return _from_status(exc.status_code, exc, getattr(exc, "body", None), ctx)
    if isinstance(exc, sdk.APIError):  # an error event inside a stream
        return _from_body(getattr(exc, "body", None), exc, ctx) or make_error(
            "server", f"{provider} reported an error mid-stream: {_server_text(exc)}", **ctx
        )
    return make_error("server", f"{provider}: {_short(exc)}", retryable=False, **ctx)


def _from_status(status: int, exc: Exception, body: Any, ctx: dict[str, Any]) -> ModelError:
    provider = ctx["provider"]
    detail = _server_text(exc)
    retry_after = _retry_after(exc)
    if status < 400:  # an error event delivered inside a 200 stream
        return _from_body(body, exc, ctx) or make_error(
            "server", f"{provider} reported an error mid-stream: {detail}", **ctx
        )
    if status in (401, 402, 403):
        return make_error(
            "auth", f"{provider} refused the credentials ({status}): {detail}", status=status, **ctx
        )
    if status == 408:
        return make_error(
            "timeout", f"{provider} timed out ({status}): {detail}", status=status, **ctx
        )
    if status == 429:
        return make_error(
            "rate_limited",
            f"{provider} is rate limiting requests: {detail}",
            status=status,
            retry_after_s=retry_after,
            **ctx,
        )
    if _names_no_model(status, body, detail):
        return make_error(
            "bad_request",
            f"{provider} does not serve the model {ctx.get('model') or '?'} ({status}): "
            f"{detail}",
            hint=_model_fix(ctx), status=status, **ctx,
        )
    if status == 409 or status >= 500:
        return make_error(
            "server",
            f"{provider} server error ({status}): {detail}",
            status=status,
            retry_after_s=retry_after,
            **ctx,
        )
    return make_error(
        "bad_request", f"{provider} rejected the request ({status}): {detail}", status=status, **ctx
    )


# What a provider answers for a model it does not serve (retired, misspelt, not yours).
_NO_MODEL_TYPES = frozenset({"not_found_error", "model_not_found"})


def _names_no_model(status: int, body: Any, detail: str) -> bool:
    kind = _body_type(body) or ""
    return kind == "model_not_found" or (
        (status == 404 or kind in _NO_MODEL_TYPES) and "model" in detail.lower())


def _model_fix(ctx: dict[str, Any]) -> str:
    """Which profile to change, and how."""
    profile, provider = ctx.get("profile"), ctx["provider"]
    where = f"[profiles.{profile}]" if profile else "the model profile"
    return (f"set model in {where} of config.toml to one {provider} serves today (its "
            "model list says which), or continue with another: → help continue lists them")


def _from_body(body: Any, exc: Exception, ctx: dict[str, Any]) -> ModelError | None:
    kind = _BODY_TYPES.get(_body_type(body) or "")
    if kind is None:
        return None
    return make_error(kind, f"{ctx['provider']} reported {_server_text(exc)}", **ctx)


def _body_type(body: Any) -> str | None:
    if isinstance(body, dict):
        err = body.get("error", body)
        if isinstance(err, dict):
            value = err.get("type") or err.get("code")
            return value if isinstance(value, str) else None
    return None


def _server_text(exc: Exception) -> str:
    body = getattr(exc, "body", None)
    if isinstance(body, dict):
        err = body.get("error", body)
        if isinstance(err, dict) and isinstance(err.get("message"), str):
            return _trim(err["message"])
    if isinstance(body, str) and body.strip():
        return _trim(body.strip())
    return _trim(getattr(exc, "message", None) or str(exc))


def _retry_after(exc: Exception) -> float | None:
    response = getattr(exc, "response", None)
    headers = getattr(response, "headers", None)
    if headers is None:
        return None
    value = headers.get("retry-after-ms")
    if value is not None:
        try:
            return float(value) / 1000
        except ValueError:
            pass
    value = headers.get("retry-after")
    if value is None:
        return None
    try:
        return float(value)
    except ValueError:
        pass
    try:
        import datetime as dt

        return max(0.0, (parsedate_to_datetime(value) - dt.datetime.now(dt.UTC)).total_seconds())
    except (TypeError, ValueError):
        return None


def _is_timeout(exc: BaseException) -> bool:
    if isinstance(exc, TimeoutError | asyncio.TimeoutError):
        return True
    return any(
        (mod := sys.modules.get(name)) is not None and isinstance(exc, mod.TimeoutException)
        for name in ("httpx", "httpx2")
    )


def _is_transport(exc: BaseException) -> bool:
    if isinstance(exc, ConnectionError):
        return True
    return any(
        (mod := sys.modules.get(name)) is not None and isinstance(exc, mod.TransportError)
        for name in ("httpx", "httpx2")
    )


def _short(exc: BaseException) -> str:
    text = str(exc) or type(exc).__name__
    return _trim(f"{type(exc).__name__}: {text}" if str(exc) else text)


def _trim(text: str, limit: int = 300) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"
