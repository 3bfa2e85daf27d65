import json

import pytest

from loom.redact import (
    PLACEHOLDER,
    forget_secrets,
    redact,
    redact_json_list,
    redact_obj,
    register_secret,
)


@pytest.fixture(autouse=True)
def _clean_registry():
    forget_secrets()
    yield
    forget_secrets()


SECRETS = [
    "sk-ant-api03-AbCdEfGhIjKlMnOpQrStUvWxYz0123456789-_abcd",
    "sk-proj-AbCdEfGhIjKlMnOpQrStUvWxYz0123456789",
    "sk-or-v1-0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
    "sk-AbCdEfGhIjKlMnOpQrStUvWx0",
    "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U",
    "AKIAIOSFODNN7EXAMPLE",
    "ghp_abcdefghijklmnopqrstuvwxyz0123456789",
    "AIzaSyA-abcdefghijklmnopqrstuvwxyz01234",
    "xoxb-1234567890-abcdefghij",
    "hf_abcdefghijklmnopqrstuvwxyzABCDEFGH",
]


@pytest.mark.parametrize("secret", SECRETS)
def test_known_key_shapes_are_redacted(secret):
    text = f"key={secret} and more"
    out = redact(f"here is {secret} ok")
    assert secret not in out
    assert PLACEHOLDER in out
    assert secret not in redact(text)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Authorization: Bearer abc.def-ghi_123", "Authorization: Bearer [REDACTED]"),
        ("authorization: Basic dXNlcjpwYXNz", "authorization: Basic [REDACTED]"),
        ("x-api-key: whatever-value", "x-api-key: [REDACTED]"),
        ('{"api_key": "opaque"}', '{"api_key": "[REDACTED]"}'),
        ("password=hunter2;", "password=[REDACTED];"),
        ("postgres://bob:hunter2@db:5432/x", "postgres://bob:[REDACTED]@db:5432/x"),
        ("https://x.io/v1?key=abc123&n=2", "https://x.io/v1?key=[REDACTED]&n=2"),
        ("token Bearer abcdefghijkl0", "token Bearer [REDACTED]"),
    ],
)
def test_header_and_field_forms(text, expected):
    assert redact(text) == expected


def test_private_key_block():
    pem = "-----BEGIN RSA PRIVATE KEY-----\nMIIEow\nabc\n-----END RSA PRIVATE KEY-----"
    assert redact(f"x {pem} y") == f"x {PLACEHOLDER} y"


def test_ordinary_text_is_untouched():
    text = "The fox had max_tokens: 50 and a token of esteem; skeleton keys; task-list."
    assert redact(text) == text


@pytest.mark.parametrize("secret", [*SECRETS, "Authorization: Bearer abc.def-ghi_123"])
def test_idempotent(secret):
    once = redact(f"a {secret} b")
    assert redact(once) == once


def test_registered_exact_secret_any_shape():
    register_secret("plain-looking-value-42")
    assert redact("use plain-looking-value-42!") == f"use {PLACEHOLDER}!"


def test_short_values_are_not_registered():
    register_secret("abc")
    assert redact("abc abc") == "abc abc"


def test_redact_obj_walks_keys_and_values():
    register_secret("my-exact-key-value")
    obj = {"a": ["my-exact-key-value", 3, None], "my-exact-key-value": {"b": "ok"}}
    assert redact_obj(obj) == {"a": [PLACEHOLDER, 3, None], PLACEHOLDER: {"b": "ok"}}


def test_redact_json_list_keeps_valid_json_and_types():
    secret = 'we"ird\\key-123456'
    register_secret(secret)
    items = [
        {"text": f"say {secret}", "n": 2, "api_key": None, "ok": True, "nested": [1.5]},
        {"auth": "Authorization: Bearer sk-AbCdEfGhIjKlMnOpQrStUvWx", "x": 'q"uote\\'},
    ]
    out = redact_json_list(items)
    assert secret not in json.dumps(out)
    assert "sk-AbCd" not in json.dumps(out)
    assert out[0]["n"] == 2 and out[0]["api_key"] is None and out[0]["ok"] is True
    assert out[1]["x"] == 'q"uote\\'


def test_redact_json_list_returns_same_items_when_clean():
    items = [{"text": "nothing secret"}]
    assert redact_json_list(items) is items
