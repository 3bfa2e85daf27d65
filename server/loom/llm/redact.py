"""Secret redaction for everything the model layer stores or logs.

Choice: a focused pattern set, not a library. ``detect-secrets`` was considered: it is a
file scanner (plugins, entropy heuristics, baselines) with no API for rewriting a string,
and entropy checks would also fire on ordinary model text. What Loom needs is narrower:
scrub raw provider replies, request payloads in logs and error messages of

- the exact key values the config resolved (registered with :func:`register_secret`),
- well-known credential shapes (OpenAI/Anthropic/OpenRouter ``sk-…`` keys, bearer
  tokens, ``Authorization``/``x-api-key`` headers and ``api_key=``-style fields, JWTs,
  cloud/VCS tokens, private key blocks, passwords in connection strings).

Each pattern has literal trigger strings and runs only when one occurs in the text, so
clean text (the usual case) costs a few substring checks.
Redaction is idempotent: the placeholder matches no pattern. Replacements never contain
quotes or backslashes, so redacting the JSON text of an object keeps it valid JSON.
"""

from __future__ import annotations

import json
import logging
import re
import threading
from typing import Any

PLACEHOLDER = "[REDACTED]"

# (triggers, pattern): a pattern runs only when one of its lower-case trigger strings
# occurs in the lower-cased text, so clean text costs a few substring checks, not a
# scan per pattern. Named groups h/b/u/q keep a prefix verbatim.
_SPECS: list[tuple[tuple[str, ...], str]] = [
    # Header or field names followed by a value: Authorization: Bearer x, "api_key": "x".
    (
        (
            "authorization",
            "api-key",
            "api_key",
            "apikey",
            "access_token",
            "access-token",
            "accesstoken",
            "refresh_token",
            "refresh-token",
            "refreshtoken",
            "client_secret",
            "client-secret",
            "clientsecret",
            "secret_key",
            "secret-key",
            "secretkey",
            "passw",
        ),
        r"(?P<h>(?i:\b(?:authorization|proxy-authorization|x-api-key|api[_-]?key|apikey|"
        r"access[_-]?token|refresh[_-]?token|client[_-]?secret|secret[_-]?key|password|passwd)"
        r"\b\"?\s*[:=]\s*\"?(?:bearer\s+|basic\s+|token\s+)?+))"
        r"(?!\[REDACTED\]|null\b|true\b|false\b)[^\s\"',;}&\\]+",
    ),
    # Bearer tokens anywhere.
    (("bearer",), r"(?P<b>(?i:\bbearer\s+))(?!\[REDACTED\])[A-Za-z0-9._~+/=-]{8,}"),
    # Anthropic, OpenAI (sk-, sk-proj-, sk-svcacct-), OpenRouter (sk-or-v1-) keys.
    (("sk-",), r"\bsk-(?:ant-|or-|proj-|svcacct-|admin-)?[A-Za-z0-9_-]{16,}"),
    # JSON Web Tokens.
    (("eyj",), r"\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}"),
    # AWS access key ids.
    (("akia", "asia"), r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b"),
    # GitHub tokens.
    (
        ("ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_"),
        r"\b(?:gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{40,})",
    ),
    # Google API keys.
    (("aiza",), r"\bAIza[0-9A-Za-z_-]{35}"),
    # Slack tokens.
    (("xox",), r"\bxox[abposr]-[A-Za-z0-9-]{10,}"),
    # Hugging Face, Groq, Replicate, Stripe secret keys.
    (
        ("hf_", "gsk_", "r8_", "k_live_", "k_test_"),
        r"\b(?:hf_[A-Za-z0-9]{30,}|gsk_[A-Za-z0-9]{40,}|r8_[A-Za-z0-9]{30,}|"
        r"[sr]k_(?:live|test)_[A-Za-z0-9]{16,})",
    ),
    # PEM private key blocks.
    (
        ("-----begin",),
        r"-----BEGIN [A-Z ]*PRIVATE KEY-----[\s\S]*?-----END [A-Z ]*PRIVATE KEY-----",
    ),
    # Passwords in URLs / connection strings: scheme://user:password@host.
    (("://",), r"(?P<u>\b[a-z][a-z0-9+.-]*://[^\s:/@\"]+:)(?!\[REDACTED\])[^\s@/\"\\]+(?=@)"),
    # Credentials in query strings.
    (
        ("key=", "token=", "sig=", "signature="),
        r"(?P<q>[?&](?i:api[_-]?key|key|token|access_token|sig|signature)=)"
        r"(?!\[REDACTED\])[^&\s\"\\]+",
    ),
]

_KEEP_GROUPS = ("h", "b", "u", "q")
_ALL_TRIGGERS = tuple(sorted({t for triggers, _ in _SPECS for t in triggers}))
_lock = threading.Lock()
_secrets: set[str] = set()
_exact: tuple[tuple[str, ...], re.Pattern[str]] | None = None
_compiled: list[tuple[tuple[str, ...], re.Pattern[str]]] = [
    (triggers, re.compile(pattern)) for triggers, pattern in _SPECS
]


def register_secret(value: str | None) -> None:
    """Remember an exact secret (a resolved API key) so it is scrubbed wherever it shows."""
    global _exact
    if not value or len(value) < 6:
        return
    with _lock:
        if value in _secrets:
            return
        _secrets.add(value)
        forms = set()
        for s in _secrets:
            forms.add(s)
            forms.add(json.dumps(s)[1:-1])  # as it appears inside JSON text
        alternatives = tuple(sorted(forms, key=len, reverse=True))
        _exact = (alternatives, re.compile("|".join(re.escape(f) for f in alternatives)))


def forget_secrets() -> None:
    """Drop every registered secret (tests)."""
    global _exact
    with _lock:
        _secrets.clear()
        _exact = None


def _replace(match: re.Match[str]) -> str:
    groups = match.groupdict()
    for group in _KEEP_GROUPS:
        kept = groups.get(group)
        if kept is not None:
            return kept + PLACEHOLDER
    return PLACEHOLDER


def redact(text: str) -> str:
    """``text`` with every secret replaced by ``[REDACTED]``."""
    exact = _exact
    if exact is not None and any(form in text for form in exact[0]):
        text = exact[1].sub(PLACEHOLDER, text)
    lowered = text.lower()
    for triggers, pattern in _compiled:
        if any(t in lowered for t in triggers):
            text = pattern.sub(_replace, text)
            lowered = text.lower()
    return text


def redact_obj(obj: Any) -> Any:
    """A JSON-able value with every string (keys included) redacted."""
    if isinstance(obj, str):
        return redact(obj)
    if isinstance(obj, dict):
        return {redact(str(k)): redact_obj(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [redact_obj(v) for v in obj]
    return obj


def redact_json_list(items: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Redact many JSON-able dicts in one pass over their serialised text.

    Used for streamed raw chunks: one scan of the joined JSON is far cheaper than
    walking every string of every chunk. Falls back to :func:`redact_obj` for values
    that are not JSON-serialisable.
    """
    if not items:
        return []
    try:
        text = json.dumps(items, ensure_ascii=False, separators=(",", ":"))
    except (TypeError, ValueError):
        return [redact_obj(item) for item in items]
    cleaned = redact_json_text(text)
    if cleaned is text:
        return items
    try:
        return json.loads(cleaned)
    except ValueError:
        return [redact_obj(item) for item in items]


def redact_json_text(text: str) -> str:
    """Redact serialised JSON; returns ``text`` itself (same object) when it is clean."""
    if not _may_hold_secrets(text):
        return text
    cleaned = redact(text)
    return text if cleaned == text else cleaned


def _may_hold_secrets(json_text: str) -> bool:
    """A cheap pre-check for long JSON text full of repeated structure.

    No trigger contains a quote, so every trigger occurrence lies inside one
    quote-delimited piece: checking the distinct pieces is exact, and much shorter.
    """
    exact = _exact
    if exact is not None and any(form in json_text for form in exact[0]):
        return True
    pieces = "\x00".join(set(json_text.split('"'))).lower()
    return any(t in pieces for t in _ALL_TRIGGERS)


class RedactingFilter(logging.Filter):
    """A logging filter that redacts the fully formatted message of each record."""

    def filter(self, record: logging.LogRecord) -> bool:
        try:
            message = record.getMessage()
        except Exception:  # a broken record is the logging system's business
            return True
        cleaned = redact(message)
        if cleaned != message:
            record.msg, record.args = cleaned, None
        return True


# Loggers that carry request/response detail: ours, and the SDKs' and transports' own
# (the SDKs log whole request bodies at DEBUG). Filters attach to the exact logger that
# emits a record, so the emitting children are listed, not just their parents.
LOGGERS = (
    "loom.llm",
    "openai",
    "openai._base_client",
    "anthropic",
    "anthropic._base_client",
    "httpx",
    "httpx2",
)
_filter = RedactingFilter()


def install_log_redaction(names: tuple[str, ...] = LOGGERS) -> None:
    """Attach the redacting filter to ``names`` (idempotent)."""
    for name in names:
        logger = logging.getLogger(name)
        if _filter not in logger.filters:
            logger.addFilter(_filter)
