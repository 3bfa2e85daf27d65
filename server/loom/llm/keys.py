"""API key lookup: the profile's environment variable first, then the OS keyring.

Keys are looked up when a call is made, returned as ``SecretStr`` (so a ``repr`` never
shows them), registered with the redactor, and never stored on a profile. Any keyring
problem — the package missing, no backend (headless CI), a locked or broken backend —
counts as "no key". ``LOOM_NO_KEYRING=1`` skips the keyring entirely.
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Mapping
from typing import Any

from pydantic import SecretStr

from loom.redact import register_secret

log = logging.getLogger("loom.llm")

KEYRING_SERVICE = "loom"
NEGATIVE_TTL_S = 30.0  # a missing entry is asked again after this long
_keyring_cache: dict[str, str] = {}
_missing_until: dict[str, float] = {}


def keyring_lookup(username: str) -> str | None:
    """``keyring.get_password("loom", username)``, or None on any failure.

    Found keys are cached for the process; misses for ``NEGATIVE_TTL_S`` so resolving
    profiles on a machine without a keyring stays cheap.
    """
    if username in _keyring_cache:
        return _keyring_cache[username]
    if _missing_until.get(username, 0.0) > time.monotonic():
        return None
    try:
        import keyring

        value = keyring.get_password(KEYRING_SERVICE, username)
    except Exception as exc:  # no backend, locked store, dbus missing…: treat as no key
        log.debug("keyring unavailable for %s: %s", username, type(exc).__name__)
        value = None
    if value:
        _keyring_cache[username] = value
        return value
    _missing_until[username] = time.monotonic() + NEGATIVE_TTL_S
    return None


def resolve_key(
    env_var: str | None,
    keyring_user: str | None,
    env: Mapping[str, str] | None = None,
) -> SecretStr | None:
    """The key from ``env_var`` or the keyring entry ``loom/<keyring_user>``, if any."""
    environ = os.environ if env is None else env
    value = environ.get(env_var) if env_var else None
    if not value and keyring_user and environ.get("LOOM_NO_KEYRING", "") in ("", "0"):
        value = keyring_lookup(keyring_user)
    if not value:
        return None
    register_secret(value)
    return SecretStr(value)


def clear_cache() -> None:
    _keyring_cache.clear()
    _missing_until.clear()


def database_password(info: Any) -> str | None:
    """The password of a PostgreSQL connection (``info``: ``store.backend.ConnInfo``) from
    the keyring entry ``loom/postgresql://user@host:port/dbname``, registered with the
    redactor so no log or model payload ever shows it. ``PGPASSWORD`` and ``~/.pgpass``
    need nothing from Loom: libpq reads them (``PGPASSWORD`` is registered here too)."""
    env = os.environ.get("PGPASSWORD")
    if env:
        register_secret(env)
        return None
    if os.environ.get("LOOM_NO_KEYRING", "") not in ("", "0"):
        return None
    value = keyring_lookup(info.keyring_name)
    if value:
        register_secret(value)
    return value
