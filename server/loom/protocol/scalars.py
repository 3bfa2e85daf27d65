"""Decoding one line's worth of value text: scalars, inline arrays, table cells and keys."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any, NoReturn

from loom.protocol.lexical import LITERALS, NUMBER_RE, SEP, UNSAFE_RE, scan_quoted

Fail = Callable[[str, int], NoReturn]
"""Raises a decode error for a message and a 0-based offset into the text being read."""


def split_items(
    text: str, fail: Fail, base: int = 0, sep: str = SEP, loose: bool = False
) -> list[tuple[str, int]]:
    """Split ``a, "b, c", d`` on ``sep`` outside quoted strings: ``(token, offset)`` pairs.

    A quoted string must be a whole item; text after its closing quote is an error.
    ``loose`` (lenient table rows) also skips spaces after each separator.
    """
    out: list[tuple[str, int]] = []
    i = 0
    n = len(text)
    step = len(sep)
    while True:
        if loose:
            while i < n and text[i] == " ":
                i += 1
        if i < n and text[i] == '"':
            end = scan_quoted(text, i)
            if end < 0:
                fail("unterminated quoted string", base + i)
            out.append((text[i:end], base + i))
            if end == n:
                return out
            if not text.startswith(sep, end):
                fail("unexpected text after a quoted string", base + end)
            i = end + step
        else:
            j = text.find(sep, i)
            if j < 0:
                out.append((text[i:], base + i))
                return out
            out.append((text[i:j], base + i))
            i = j + step


def parse_quoted(token: str, offset: int, fail: Fail) -> str:
    """Decode a complete JSON string literal."""
    try:
        value = json.loads(token)
    except json.JSONDecodeError as e:
        fail(f"bad quoted string: {e.msg}", offset + e.pos)
    except RecursionError:  # pragma: no cover - json strings do not nest
        fail("bad quoted string", offset)
    if not isinstance(value, str):  # pragma: no cover - token starts and ends with '"'
        fail("bad quoted string", offset)
    return value


def parse_scalar(token: str, offset: int, fail: Fail) -> Any:
    """A quoted string, null, true, false, a number, or a plain string."""
    if not token:
        fail('empty value; write "" for an empty string', offset)
    first = token[0]
    if first == '"':
        return parse_quoted(token, offset, fail)
    if first in "-0123456789" and NUMBER_RE.fullmatch(token):
        return _number(token, offset, fail)
    if token in LITERALS:
        return LITERALS[token]
    check_plain(token, offset, fail)
    return token


def check_plain(token: str, offset: int, fail: Fail) -> None:
    if token[0] in "[{|":
        fail(f"a plain string cannot start with {token[0]!r}; quote it", offset)
    if token[0].isspace():
        fail("unexpected whitespace", offset)
    bad = UNSAFE_RE.search(token)
    if bad:
        fail(
            f"character U+{ord(bad.group()):04X} must be escaped in a quoted string",
            offset + bad.start(),
        )


def check_plain_key(key: str, fail: Fail) -> None:
    bad = UNSAFE_RE.search(key)
    if bad:
        fail(f"character U+{ord(bad.group()):04X} in a key; quote the key", bad.start())


def parse_key_token(token: str, offset: int, fail: Fail) -> str:
    """A table column name: a quoted string or a plain key."""
    if not token:
        fail('empty column name; write "" for an empty key', offset)
    if token[0] == '"':
        return parse_quoted(token, offset, fail)
    if ": " in token:
        fail("flow mappings such as {a: 1} are not supported; use an indented block", offset)
    if token[0].isspace() or token[-1].isspace():
        fail("whitespace around a column name; quote it", offset)
    check_plain_key(token, lambda m, o: fail(m, offset + o))
    return token


def _number(token: str, offset: int, fail: Fail) -> int | float:
    if "." in token or "e" in token or "E" in token:
        value = float(token)
        if value in (float("inf"), float("-inf")):
            fail(f"number {token} is out of range for a float", offset)
        return value
    try:
        return int(token)
    except ValueError as e:  # more digits than int() accepts (sys.set_int_max_str_digits)
        fail(str(e), offset)
