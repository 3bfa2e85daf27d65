"""Secret redaction: one table of credential shapes, and the functions that apply it.

Everything Loom sends to a model and everything a model sends back passes through
:func:`redact` (see :mod:`loom.llm.redacting`), as do logs, stored raw replies and error
text. Two kinds of secret are found:

- the exact key values the configuration resolved (registered with :func:`register_secret`),
- the well-known credential shapes in :data:`PATTERNS` (OpenAI, Anthropic, GitHub, GitLab,
  Slack, Stripe, AWS, Google, Hugging Face, npm, PyPI, Twilio, SendGrid… keys, JWTs, PEM
  private keys, bearer headers, passwords in URLs, ``password=``/``api_key=`` pairs).

Choice: a focused pattern set, not a library. ``detect-secrets`` is a file scanner with
no API for rewriting a string, and its entropy checks fire on ordinary model text. Each
pattern is anchored on a literal prefix or a credential-ish field name, so prose, node
ids (ULIDs, localIds) and hashes are left alone. ``tests/redaction_samples.py`` holds a
sample of every shape; ``tests/unit/test_llm_redact_shapes.py`` checks them and the
false-positive corpora (docs/redaction.md).

Each pattern has literal trigger strings and runs only when one occurs in the text, so
clean text (the usual case) costs a few substring checks. Redaction is idempotent: the
placeholder matches no pattern. Replacements never contain quotes or backslashes.
"""

from __future__ import annotations

import json
import logging
import re
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

PLACEHOLDER = "[REDACTED]"

# A secret never contains these: whitespace, control characters and anything beyond ASCII.
# Text between them is a "run"; every pattern but the multi-word ones lies inside one run,
# which is what lets a stream be released run by run (loom.llm.redact_stream).
RUN_CHARS = "".join(chr(c) for c in range(0x21, 0x7F))
_NOT_RUN = r"\x00-\x20\x7f-\U0010ffff"
# A token starts where no letter or digit precedes it (an escaped \n in logged JSON counts
# as a separator, so "…\nsk-…" in a log line is still found).
_B = r"(?:(?<![A-Za-z0-9])|(?<=\\[nrt]))"
_NOT_REDACTED = r"(?!\[REDACTED\])"


class _Lazy:
    """A regex compiled on its first use. The table holds about thirty, 25-40 ms to compile
    at import, and most processes that import this module (the CLI, a language server's
    start) never scan a text that has a trigger in it."""

    __slots__ = ("_args", "_compiled")

    def __init__(self, pattern: str, flags: int = 0) -> None:
        self._args = (pattern, flags)
        self._compiled: re.Pattern[str] | None = None

    def __getattr__(self, name: str) -> Any:
        compiled = self._compiled
        if compiled is None:
            compiled = self._compiled = re.compile(*self._args)
        return getattr(compiled, name)


def _lazy(pattern: str, flags: int = 0) -> re.Pattern[str]:
    return _Lazy(pattern, flags)  # type: ignore[return-value]  # a stand-in with its API


@dataclass(frozen=True)
class SecretPattern:
    """One credential shape.

    ``triggers``: lower-case literals, one of which occurs in every match (the regex runs
    only when one is present). ``secret`` is the named group that is replaced (the whole
    match when the pattern has none). ``tail`` recognises the shape cut off at the very
    end of a text (a reply that stopped at max_tokens mid-key). ``spans_words``: a match
    may cross whitespace (``Authorization: Bearer x``), so a stream holds back the words
    before its last one (private key blocks are held until they close: see release_point).
    ``bounded``: a match must start a token (no letter or digit before it). The check is
    made on each match rather than by a leading lookbehind, so the regex starts with its
    literal prefix and the engine can skip ahead to it (hundreds of times faster on
    long text).
    """

    name: str
    triggers: tuple[str, ...]
    regex: re.Pattern[str]
    tail: re.Pattern[str] | None = None
    spans_words: bool = False
    bounded: bool = False


def _prefixed(
    name: str, prefix: str, body: str, *triggers: str, tail_body: str = r"[A-Za-z0-9_./+=-]{4,}"
) -> SecretPattern:
    """A key that starts with a fixed ``prefix`` (a regex) followed by ``body``."""
    return SecretPattern(
        name,
        triggers,
        _lazy(prefix + body),
        tail=_lazy(_B + prefix + tail_body + r"\Z"),
        bounded=True,
    )


def _variants(words: tuple[str, ...], spaced: bool) -> tuple[list[str], str]:
    """Trigger spellings and a regex for a compound field name: api_key, api-key, apikey
    (any case), and "api key" when ``spaced`` (prose says "API key: …", not "private key:")."""
    seps = ("_", "-", " ", "") if spaced else ("_", "-", "")
    joined = {sep.join(words) for sep in seps}
    return sorted(joined), (r"[_\- ]?" if spaced else r"[_-]?").join(words)


def _field_names() -> tuple[tuple[str, ...], str]:
    singles = ["authorization", "password", "passwd", "passphrase"]
    spaced = [("api", "key"), ("api", "token"), ("access", "token"), ("auth", "token"),
              ("client", "secret"), ("secret", "access", "key")]
    joined_only = [
        ("api", "secret"), ("access", "key"), ("refresh", "token"), ("id", "token"),
        ("bot", "token"), ("session", "token"), ("bearer", "token"), ("private", "token"),
        ("app", "secret"), ("secret", "key"), ("private", "key"), ("signing", "key"),
        ("encryption", "key"), ("webhook", "secret"),
    ]
    triggers = list(singles)
    alternatives = list(singles)
    for words, is_spaced in [(w, True) for w in spaced] + [(w, False) for w in joined_only]:
        spellings, regex = _variants(words, is_spaced)
        triggers += spellings
        alternatives.append(regex)
    # Longest first so "secret access key" wins over "secret key".
    alternatives.sort(key=len, reverse=True)
    return tuple(sorted(set(triggers))), "|".join(alternatives)


_FIELD_TRIGGERS, _FIELD_NAMES = _field_names()
# Quotes may come escaped (a JSON body inside a log line or an error message).
_SEP = r"(?:\\?[\"'])?[ \t]{0,4}(?::=|=>|[:=])[ \t]{0,4}(?:\\?[\"'])?"
_VALUE_CHAR = rf"[^{_NOT_RUN}\"',;}}&\\<>]"
_VALUE = _VALUE_CHAR + "+"
_NULLS = r"(?i:null|true|false|none|undefined|nil)(?![A-Za-z0-9])"
_BASE64_40 = r"[A-Za-z0-9/+]{40}(?![A-Za-z0-9/+=])"
_KEY = r"[A-Za-z0-9_-]"
_PEM_OPEN = r"-----BEGIN[A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----"
_PEM_CLOSE = r"-----END[A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----"

# The one table. Order does not matter: spans from every pattern are merged.
PATTERNS: tuple[SecretPattern, ...] = (
    # -- model providers
    _prefixed("anthropic_api_key", r"sk-ant-api\d\d-", _KEY + "{20,}", "sk-ant-api"),
    _prefixed("anthropic_admin_key", r"sk-ant-admin\d\d-", _KEY + "{20,}", "sk-ant-admin"),
    _prefixed("openai_project_key", r"sk-proj-", _KEY + "{20,}", "sk-proj-"),
    _prefixed("openai_service_account_key", r"sk-svcacct-", _KEY + "{20,}", "sk-svcacct-"),
    _prefixed("openai_admin_key", r"sk-admin-", _KEY + "{20,}", "sk-admin-"),
    _prefixed("openrouter_key", r"sk-or-v1-", "[A-Za-z0-9]{32,}", "sk-or-v1-"),
    # Legacy OpenAI keys and other sk- keys (DeepSeek, Anthropic OAuth…): a digit is
    # required so hyphenated words never match.
    _prefixed("sk_key", r"sk-", rf"(?={_KEY}*[0-9]){_KEY}{{20,}}", "sk-"),
    _prefixed("groq_key", r"gsk_", "[A-Za-z0-9]{40,}", "gsk_"),
    _prefixed("replicate_token", r"r8_", "[A-Za-z0-9]{30,}", "r8_"),
    _prefixed("huggingface_token", r"hf_", "[A-Za-z0-9]{30,}", "hf_"),
    # -- code hosting and package registries
    _prefixed("github_token", r"gh[pousr]_", "[A-Za-z0-9]{30,}", "ghp_", "gho_", "ghu_",
              "ghs_", "ghr_"),
    _prefixed("github_fine_grained_pat", r"github_pat_", "[A-Za-z0-9_]{40,}", "github_pat_"),
    _prefixed("gitlab_pat", r"glpat-", _KEY + "{20,}", "glpat-"),
    _prefixed("gitlab_token", r"gl(?:ptt|dt|rt|soat|cbt|imt|agent|oas|ft|ffct)-",
              _KEY + "{20,}", "glptt-", "gldt-", "glrt-", "glsoat-", "glcbt-", "glimt-",
              "glagent-", "gloas-", "glft-", "glffct-"),
    _prefixed("npm_token", r"npm_", "[A-Za-z0-9]{36,}", "npm_"),
    # Every PyPI token is a macaroon whose base64 starts "AgE".
    _prefixed("pypi_token", r"pypi-AgE", _KEY + "{40,}", "pypi-age"),
    # -- chat, payments, mail, messaging
    _prefixed("slack_token", r"xox[abprse]-", "[A-Za-z0-9-]{10,}", "xoxa-", "xoxb-", "xoxp-",
              "xoxr-", "xoxs-", "xoxe-"),
    SecretPattern(
        "slack_webhook",
        ("hooks.slack.com/",),
        _lazy(r"hooks\.slack\.com/(?:services|workflows|triggers)/"
                   r"(?P<secret>[A-Za-z0-9/_-]{20,})"),
    ),
    _prefixed("stripe_secret_key", r"sk_(?:live|test)_", "[A-Za-z0-9]{16,}", "sk_live_",
              "sk_test_"),
    _prefixed("stripe_restricted_key", r"rk_(?:live|test)_", "[A-Za-z0-9]{16,}", "rk_live_",
              "rk_test_"),
    _prefixed("stripe_webhook_secret", r"whsec_", "[A-Za-z0-9+/=]{24,}", "whsec_"),
    SecretPattern(
        "twilio_api_key",
        ("sk",),
        _lazy(r"SK[0-9a-fA-F]{32}(?![A-Za-z0-9])"),
        bounded=True,
    ),
    _prefixed("sendgrid_api_key", r"SG\.", r"[A-Za-z0-9_-]{16,}\.[A-Za-z0-9_-]{16,}", "sg."),
    SecretPattern(
        "telegram_bot_token",
        (":aa",),
        _lazy(r"[0-9]{8,10}:AA[A-Za-z0-9_-]{30,}"),
        bounded=True,
    ),
    # -- clouds
    _prefixed("aws_access_key_id", r"(?:AKIA|ASIA|ABIA|ACCA)", "[A-Z0-9]{16}(?![A-Za-z0-9])",
              "akia", "asia", "abia", "acca", tail_body="[A-Z0-9]{8,}"),
    SecretPattern(
        "aws_secret_access_key",
        ("aws",),
        _lazy(r"(?i:aws[_. -]?(?:secret[_. -]?(?:access[_. -]?)?key|secret))"
                   rf"(?![A-Za-z0-9]){_SEP}(?P<secret>{_BASE64_40})"),
        spans_words=True,
        bounded=True,
    ),
    SecretPattern(
        # A credentials CSV or config dump: the secret right after its key id.
        "aws_secret_after_key_id",
        ("akia", "asia"),
        _lazy(r"(?:AKIA|ASIA)[A-Z0-9]{16}[\s,;:|\"'=]{1,6}"
                   rf"(?P<secret>{_BASE64_40})"),
        spans_words=True,
        bounded=True,
    ),
    _prefixed("google_api_key", r"AIza", "[0-9A-Za-z_-]{35,}", "aiza"),
    _prefixed("google_oauth_client_secret", r"GOCSPX-", _KEY + "{20,}", "gocspx-"),
    _prefixed("google_oauth_access_token", r"ya29\.", _KEY + "{20,}", "ya29."),
    SecretPattern(
        "azure_connection_string_key",
        ("accountkey=", "sharedaccesskey=", "sharedaccesssignature="),
        _lazy(r"(?i:AccountKey|SharedAccessKey|SharedAccessSignature)="
                   r"(?P<secret>[A-Za-z0-9+/=%&:._-]{16,})"),
        bounded=True,
    ),
    _prefixed("digitalocean_token", r"do[por]_v1_", "[a-f0-9]{64}", "dop_v1_", "doo_v1_",
              "dor_v1_"),
    _prefixed("databricks_token", r"dapi", "[a-f0-9]{32}(?![A-Za-z0-9])", "dapi",
              tail_body="[a-f0-9]{8,}"),
    # -- developer tools
    _prefixed("atlassian_api_token", r"ATATT3", "[A-Za-z0-9_=-]{50,}", "atatt3"),
    _prefixed("linear_api_key", r"lin_api_", "[A-Za-z0-9]{40,}", "lin_api_"),
    _prefixed("notion_token", r"ntn_", "[A-Za-z0-9]{40,}", "ntn_"),
    SecretPattern(
        "notion_integration_secret",
        ("secret_",),
        _lazy(r"secret_[A-Za-z0-9]{43}(?![A-Za-z0-9])"),
        bounded=True,
    ),
    _prefixed("shopify_token", r"shp(?:at|ca|pa|ss)_", "[a-fA-F0-9]{32,}", "shpat_",
              "shpca_", "shppa_", "shpss_"),
    _prefixed("age_secret_key", r"AGE-SECRET-KEY-1", "[0-9A-Z]{50,}", "age-secret-key-1"),
    # -- generic forms
    _prefixed("jwt", r"eyJ", r"[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}(?:\.[A-Za-z0-9_-]*)?",
              "eyj", tail_body=r"[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_.-]*"),
    SecretPattern(
        "private_key_block",
        ("-----begin",),
        # A whole block, or one cut off (the rest of the text that still looks like a key).
        _lazy(_PEM_OPEN + r"(?:[\s\S]*?" + _PEM_CLOSE +
                   r"|(?:\s|\\[nr]|[A-Za-z0-9+/=:,.-])*)"),
        spans_words=True,
    ),
    SecretPattern(
        # A bare bearer token; a digit (or a length no word has) tells it from prose.
        "bearer_token",
        ("bearer",),
        _lazy(r"(?i:bearer)[ \t]{1,4}" + _NOT_REDACTED +
                   r"(?P<secret>(?=[A-Za-z0-9._~+/=-]*[0-9]|[A-Za-z0-9._~+/=-]{24})"
                   r"[A-Za-z0-9._~+/=-]{8,})"),
        tail=_lazy(r"(?<![A-Za-z0-9])(?i:bearer)[ \t]{1,4}"
                        r"(?P<secret>[A-Za-z0-9._~+/=-]{1,})\Z"),
        spans_words=True,
        bounded=True,
    ),
    SecretPattern(
        # Header or field names followed by a value: Authorization: Bearer x,
        # "api_key": "x", OPENAI_API_KEY=x, password = x, client_secret: x.
        "credential_field",
        _FIELD_TRIGGERS,
        _lazy(rf"(?i:{_FIELD_NAMES})(?![A-Za-z0-9]){_SEP}"
                   r"(?i:(?:bearer|basic|token|digest)[ \t]{1,4})?+"
                   rf"{_NOT_REDACTED}(?!{_NULLS})(?={_VALUE_CHAR}*[A-Za-z0-9])"
                   rf"(?P<secret>{_VALUE})"),
        spans_words=True,
        bounded=True,
    ),
    SecretPattern(
        # libpq's connection string: password='two words \' quoted' (a quoted value may
        # hold spaces, which the field pattern above stops at).
        "conninfo_quoted_password",
        ("password",),
        _lazy(r"(?i:password)[ \t]*=[ \t]*"
                   rf"'{_NOT_REDACTED}(?P<secret>(?:[^'\\]|\\.)+)'"),
        spans_words=True,
        bounded=True,
    ),
    SecretPattern(
        "url_password",
        ("://",),
        # scheme://user:password@host (the scheme is not needed to find it).
        _lazy(rf"://[^{_NOT_RUN}:/@\"'<>]*:"
                   rf"{_NOT_REDACTED}(?P<secret>[^{_NOT_RUN}@/\"'\\<>]+)@"),
    ),
    SecretPattern(
        "url_query_credential",
        ("key=", "token=", "sig=", "signature=", "password=", "secret="),
        _lazy(r"[?&](?i:api[_-]?key|key|token|access[_-]?token|sig|signature|password|"
                   rf"client[_-]?secret|secret)={_NOT_REDACTED}"
                   rf"(?P<secret>[^{_NOT_RUN}&\"'\\#<>]+)"),
    ),
)

_HOLD_TRIGGERS = _lazy(
    "|".join(
        re.escape(t)
        for p in PATTERNS
        if p.spans_words and p.name != "private_key_block"
        for t in sorted(p.triggers, key=len, reverse=True)
    ),
    re.IGNORECASE,
)
# Triggers with a space in them can be cut between two runs ("… API" | "key: …").
_SPACED_TRIGGERS = tuple(
    sorted({t for p in PATTERNS if p.spans_words for t in p.triggers if " " in t})
)
# Private key blocks span lines: a stream holds one from its BEGIN line to its END line.
_BLOCK_START = _lazy("-----begin", re.IGNORECASE)
_BLOCK_HEADER = _lazy(r"-----BEGIN[^\r\n]*?-----", re.IGNORECASE)
_KEY_HEADER = _lazy(_PEM_OPEN)
_KEY_FOOTER = _lazy(_PEM_CLOSE)
_BY_TRIGGER: dict[str, list[SecretPattern]] = {}
for _p in PATTERNS:
    for _t in _p.triggers:
        _BY_TRIGGER.setdefault(_t, []).append(_p)
_ALL_TRIGGERS = tuple(sorted(_BY_TRIGGER))
_SPACED_FIRST_WORDS = tuple(sorted({t.split(" ", 1)[0] for t in _SPACED_TRIGGERS}))

_lock = threading.Lock()
_secrets: set[str] = set()
_exact: tuple[tuple[str, ...], re.Pattern[str]] | None = None


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


def _candidates(text: str) -> list[SecretPattern]:
    """The patterns one of whose triggers occurs in ``text`` (usually none)."""
    lowered = text.lower()
    present = [t for t in _ALL_TRIGGERS if t in lowered]
    if not present:
        return []
    return list({id(p): p for t in present for p in _BY_TRIGGER[t]}.values())


def _has_exact(text: str) -> bool:
    exact = _exact
    return exact is not None and any(form in text for form in exact[0])


def may_hold_secret(text: str) -> bool:
    """False when ``text`` certainly holds no secret (no trigger, no registered key)."""
    return _has_exact(text) or bool(_candidates(text))


def matches(
    text: str, candidates: list[SecretPattern] | None = None
) -> Iterator[tuple[int, int, int, int]]:
    """Every secret in ``text`` as (match start, match end, secret start, secret end)."""
    exact = _exact
    if exact is not None and _has_exact(text):
        for m in exact[1].finditer(text):
            yield m.start(), m.end(), m.start(), m.end()
    for pattern in _candidates(text) if candidates is None else candidates:
        has_group = "secret" in pattern.regex.groupindex
        for m in _finditer(pattern, text):
            start, end = m.span("secret") if has_group else m.span()
            if end > start:
                yield m.start(), m.end(), start, end


def _finditer(pattern: SecretPattern, text: str) -> Iterator[re.Match[str]]:
    """``pattern.regex.finditer(text)``, keeping only matches that start a token when the
    pattern is ``bounded`` (a rejected match is retried one character further on)."""
    if not pattern.bounded:
        yield from pattern.regex.finditer(text)
        return
    search, pos = pattern.regex.search, 0
    while (m := search(text, pos)) is not None:
        start = m.start()
        if _starts_token(text, start):
            yield m
            pos = m.end() if m.end() > start else start + 1
        else:
            pos = start + 1


def _starts_token(text: str, at: int) -> bool:
    """No letter or digit right before ``at`` (an escaped \\n, \\r or \\t counts as a
    separator: logged JSON)."""
    if at == 0 or not text[at - 1].isascii() or not text[at - 1].isalnum():
        return True
    return at >= 2 and text[at - 2] == "\\" and text[at - 1] in "nrt"


def _tail_spans(text: str) -> Iterator[tuple[int, int]]:
    """Secrets cut off at the very end of ``text``: a known prefix, or the start of a
    registered key, in its last run."""
    run_start = len(text.rstrip(RUN_CHARS))
    run = text[run_start:]
    if not run:
        return
    start = max(0, run_start - 16)  # room for "Bearer " before the run
    for pattern in _candidates(text[start:]):
        if pattern.tail is None:
            continue
        m = pattern.tail.search(text, start)
        if m is not None:
            yield m.span("secret") if "secret" in pattern.tail.groupindex else m.span()
    for secret in tuple(_secrets):
        at = run.find(secret[:6])
        while at >= 0:
            if secret.startswith(run[at:]):
                yield run_start + at, len(text)
                break
            at = run.find(secret[:6], at + 1)


def find_spans(text: str, *, final: bool = False) -> list[tuple[int, int]]:
    """Sorted, merged (start, end) spans of the secrets in ``text``. ``final``: the text
    is a whole reply that may have been cut off, so a key's beginning at its end counts."""
    spans = [(s, e) for _ms, _me, s, e in matches(text)]
    if final and text:
        spans.extend(_tail_spans(text))
    if not spans:
        return []
    spans.sort()
    merged = [spans[0]]
    for start, end in spans[1:]:
        last_start, last_end = merged[-1]
        if start <= last_end:
            merged[-1] = (last_start, max(last_end, end))
        else:
            merged.append((start, end))
    return merged


def apply_spans(text: str, spans: list[tuple[int, int]]) -> str:
    """``text`` with each span replaced by the placeholder."""
    if not spans:
        return text
    out, at = [], 0
    for start, end in spans:
        out.append(text[at:start])
        out.append(PLACEHOLDER)
        at = end
    out.append(text[at:])
    return "".join(out)


def redact(text: str, *, final: bool = False) -> str:
    """``text`` with every secret replaced by ``[REDACTED]`` (``final``: see find_spans)."""
    if not text:
        return text
    return apply_spans(text, find_spans(text, final=final))


def redact_pieces(pieces: list[str], *, final: bool = True) -> tuple[list[str], list[bool]]:
    """Redact text that arrived split into ``pieces`` (stream chunks, tokens).

    The joined text is scanned, so a key split over several pieces is found; each piece
    loses the part of a secret it held (the first one gets the placeholder). Returns the
    new pieces and, for each, whether it held part of a secret.
    """
    joined = "".join(pieces)
    spans = find_spans(joined, final=final)
    if not spans:
        return list(pieces), [False] * len(pieces)
    out: list[str] = []
    touched: list[bool] = []
    offset = 0
    for piece in pieces:
        lo, hi = offset, offset + len(piece)
        offset = hi
        local = [(max(s, lo), min(e, hi), s >= lo) for s, e in spans if s < hi and e > lo]
        if not local:
            out.append(piece)
            touched.append(False)
            continue
        parts, at = [], lo
        for start, end, begins_here in local:
            parts.append(joined[at:start])
            if begins_here:
                parts.append(PLACEHOLDER)
            at = end
        parts.append(joined[at:hi])
        out.append("".join(parts))
        touched.append(True)
    return out, touched


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
    """Redact many JSON-able dicts; returns ``items`` itself when nothing can be secret.

    Used for streamed raw chunks: one cheap check of the serialised text rules out the
    usual case; otherwise every decoded string is redacted (exact, whatever the escapes).
    """
    if not items:
        return []
    try:
        text = json.dumps(items, ensure_ascii=False, separators=(",", ":"))
    except (TypeError, ValueError):
        return [redact_obj(item) for item in items]
    if not _may_hold_secrets(text):
        return items
    cleaned = [redact_obj(item) for item in items]
    return items if cleaned == items else cleaned


def redact_json_text(text: str) -> str:
    """Redact serialised JSON; returns ``text`` itself (same object) when it is clean."""
    if not _may_hold_secrets(text):
        return text
    try:
        value = json.loads(text)
    except ValueError:
        cleaned = redact(text)
        return text if cleaned == text else cleaned
    cleaned_value = redact_obj(value)
    if cleaned_value == value:
        return text
    return json.dumps(cleaned_value, ensure_ascii=False, separators=(",", ":"))


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


def release_point(text: str) -> tuple[int, bool]:
    """How much of ``text`` (a stream's unreleased text) can be redacted and released now
    (later text cannot change the redaction of ``text[:cut]``), and whether ``text`` may
    hold a secret at all (when not, the released part needs no redaction).

    Held back: the last run (a key may still be arriving), a few words before it when a
    multi-word shape might be starting (``Authorization: Bearer``, ``… API`` | ``key:``),
    an open private key block, and any match that would be cut in two.
    """
    cut = len(text.rstrip(RUN_CHARS))
    partial = _partial_trigger(text)
    if partial is not None:
        cut = min(cut, _run_start(text, partial))
    candidates = _candidates(text)
    if not candidates and not _has_exact(text):
        return cut, False
    block = _open_block(text)
    if block is not None:
        cut = min(cut, _run_start(text, block))
    first = _HOLD_TRIGGERS.search(text, max(0, cut - 96))
    if first is not None and first.start() < cut:
        cut = _run_start(text, first.start())
    moved = True
    while moved and cut > 0:
        moved = False
        for start, end, _s, _e in matches(text, candidates):
            if start < cut < end:
                cut = _run_start(text, start)
                moved = True
    return cut, True


def _open_block(text: str) -> int | None:
    """Where a private key block that has not closed yet begins (or a BEGIN line that may
    still turn out to open one)."""
    if "-----" not in text:
        return None
    at = -1
    for found in _BLOCK_START.finditer(text):
        at = found.start()
    if at < 0:
        return None
    header = _KEY_HEADER.match(text, at)
    if header is None:
        # A complete header of another kind (a certificate, a public key) holds nothing.
        return None if _BLOCK_HEADER.match(text, at) else at
    return at if _KEY_FOOTER.search(text, header.end()) is None else None


def _partial_trigger(text: str) -> int | None:
    """Where a spaced trigger ("api key") that the end of ``text`` has only begun starts."""
    tail = text[-32:].lower()
    if not any(word in tail for word in _SPACED_FIRST_WORDS):
        return None
    found = None
    for trigger in _SPACED_TRIGGERS:
        for k in range(trigger.index(" ") + 1, len(trigger)):
            if tail.endswith(trigger[:k]):
                at = len(text) - k
                found = at if found is None else min(found, at)
                break
    return found


def _run_start(text: str, pos: int) -> int:
    """Where the run holding ``pos`` begins."""
    return len(text[:pos].rstrip(RUN_CHARS))


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


#: Loggers that may see a database connection's details (a team's PostgreSQL).
DB_LOGGERS = ("loom.store.backend", "loom.store.feed", "loom.store.db", "peewee", "psycopg")


def install_log_redaction(names: tuple[str, ...] = LOGGERS, handlers: bool = False) -> None:
    """Attach the redacting filter to ``names`` (idempotent); with ``handlers``, also to
    the root logger's handlers, so every record they write is redacted."""
    for name in names:
        logger = logging.getLogger(name)
        if _filter not in logger.filters:
            logger.addFilter(_filter)
    if handlers:
        for handler in logging.getLogger().handlers:
            if _filter not in handler.filters:
                handler.addFilter(_filter)
