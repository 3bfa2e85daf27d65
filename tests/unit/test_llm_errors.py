import json

import anthropic
import httpx
import httpx2
import openai
import pytest

from loom.llm.base import ModelError
from loom.llm.errors import classify
from loom.redact import forget_secrets

REQUEST = httpx2.Request("POST", "http://127.0.0.1/v1/completions")


def response(status, headers=None):
    return httpx2.Response(status, request=REQUEST, headers=headers or {})


def status_error(sdk, cls, status, body=None, headers=None):
    return getattr(sdk, cls)("Error", response=response(status, headers), body=body)


def kind_of(exc, provider="openai"):
    err = classify(exc, provider=provider, key_env="OPENAI_API_KEY", base_url="http://x")
    assert isinstance(err, ModelError)
    return err


@pytest.mark.parametrize("sdk", [openai, anthropic])
@pytest.mark.parametrize(
    ("cls", "status", "kind", "retryable"),
    [
        ("RateLimitError", 429, "rate_limited", True),
        ("InternalServerError", 500, "server", True),
        ("InternalServerError", 503, "server", True),
        ("AuthenticationError", 401, "auth", False),
        ("PermissionDeniedError", 403, "auth", False),
        ("BadRequestError", 400, "bad_request", False),
        ("NotFoundError", 404, "bad_request", False),
        ("ConflictError", 409, "server", True),
        ("APIStatusError", 408, "timeout", True),
        ("APIStatusError", 529, "server", True),
    ],
)
def test_status_errors(sdk, cls, status, kind, retryable):
    err = kind_of(status_error(sdk, cls, status, {"error": {"message": "why"}}))
    assert (err.kind, err.retryable, err.status) == (kind, retryable, status)
    assert "why" in err.message


@pytest.mark.parametrize("sdk", [openai, anthropic])
def test_transport_errors(sdk):
    assert kind_of(sdk.APITimeoutError(request=REQUEST)).kind == "timeout"
    err = kind_of(sdk.APIConnectionError(request=REQUEST))
    assert (err.kind, err.retryable) == ("unavailable", True)
    assert "http://x" in err.hint


@pytest.mark.parametrize(
    "exc",
    [
        httpx.ReadTimeout("slow"),
        httpx2.ReadTimeout("slow"),
        TimeoutError(),
    ],
)
def test_plain_timeouts(exc):
    err = kind_of(exc)
    assert (err.kind, err.retryable) == ("timeout", True)
    assert err.hint == "raise timeout_s in the model profile or lower tokens"


def test_plain_connection_errors():
    assert kind_of(httpx.ConnectError("refused")).kind == "unavailable"
    assert kind_of(ConnectionRefusedError()).retryable


def test_malformed_is_never_retryable():
    try:
        json.loads("{nope")
    except json.JSONDecodeError as exc:
        err = kind_of(exc)
    assert (err.kind, err.retryable) == ("malformed", False)
    err = kind_of(openai.APIResponseValidationError(response(200), body="x"))
    assert (err.kind, err.retryable) == ("malformed", False)


def test_auth_hint_names_env_and_keyring():
    err = classify(
        status_error(anthropic, "AuthenticationError", 401),
        provider="anthropic",
        key_env="ANTHROPIC_API_KEY",
    )
    assert err.hint == "set ANTHROPIC_API_KEY or run `keyring set loom anthropic`"
    assert err.render().splitlines() == [
        f"✗ MODEL_ERROR: {err.message}",
        "  hint: set ANTHROPIC_API_KEY or run `keyring set loom anthropic`",
    ]


def test_rate_limit_hint_and_retry_after():
    err = kind_of(status_error(openai, "RateLimitError", 429, headers={"retry-after": "7"}))
    assert err.hint == "wait a moment and retry, or lower n"
    assert err.retry_after_s == 7.0
    err = kind_of(status_error(openai, "RateLimitError", 429, headers={"retry-after-ms": "250"}))
    assert err.retry_after_s == 0.25


def test_stream_error_events_use_the_body_type():
    body = {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}
    err = kind_of(status_error(anthropic, "APIStatusError", 200, body), provider="anthropic")
    assert (err.kind, err.retryable) == ("server", True)
    body = {"error": {"type": "rate_limit_error", "message": "slow down"}}
    err = kind_of(openai.APIError("slow down", REQUEST, body=body))
    assert err.kind == "rate_limited"


def test_messages_are_redacted():
    forget_secrets()
    body = {"error": {"message": "Incorrect API key provided: sk-abcdefghijklmnop1234"}}
    exc = status_error(openai, "AuthenticationError", 401, body)
    err = kind_of(exc)
    assert "sk-abcdefghijklmnop1234" not in err.message
    assert "[REDACTED]" in err.message


def test_model_errors_pass_through_and_unknowns_are_final():
    original = ModelError("config", "x")
    assert classify(original, provider="openai") is original
    err = kind_of(RuntimeError("boom"))
    assert (err.kind, err.retryable) == ("server", False)
