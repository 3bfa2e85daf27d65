"""Reading JSON that anyone wrote: no recursion limit, and every refusal in words.

Python's ``json`` decoder recurses once per nesting level, so a socketteer file whose story
is 100,000 nodes deep (about 200,000 levels of JSON) ends in ``RecursionError``. Here the
C decoder still reads every ordinary file (it is fast); when it runs out of recursion,
the same text is read again by :func:`_decode_flat`, a decoder with an explicit stack that
reuses the standard library's string scanner and number pattern, so depth costs memory
only.

What JSON allows but Loom cannot keep is refused with a :class:`JsonProblem` saying where:

- an integer longer than Python converts (4,300 digits by default): it could never be
  written back out;
- a number too large for a float (``1e400``) and the non-JSON ``NaN``/``Infinity`` that
  Python's decoder would accept: they cannot be written back as JSON either;
- a lone UTF-16 surrogate escape (``"\\ud800"``): half of a character, which no UTF-8 text
  (nor the database) can hold.
"""

from __future__ import annotations

import codecs
import json
import re
import sys
from json.decoder import scanstring
from json.scanner import NUMBER_RE
from typing import Any

import orjson

_WS = re.compile(r"[ \t\n\r]*")
# A \u escape of a surrogate (D800–DFFF) anywhere in the text: only then are the decoded
# strings searched for one left unpaired (paired escapes decode to one character).
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F][0-9a-fA-F]{2}")
_SURROGATE = re.compile("[\ud800-\udfff]")
_CONSTANTS = {"true": True, "false": False, "null": None}
PATH_SHOWN = 8  # path steps shown before and after an elision in a message


class JsonProblem(ValueError):
    """Text that is JSON (or nearly) with something in it Loom cannot keep. ``kind`` is
    ``number`` (too long or too large to keep), ``constant`` (NaN, Infinity) or
    ``surrogate``; ``pos`` is the character offset, or -1 when ``path`` says where."""

    def __init__(self, kind: str, message: str, pos: int = -1, path: str = "") -> None:
        super().__init__(message)
        self.kind = kind
        self.message = message
        self.pos = pos
        self.path = path


class _BadNumber(ValueError):
    def __init__(self, kind: str, message: str) -> None:
        super().__init__(message)
        self.kind = kind
        self.message = message


def _max_digits() -> int:
    limit = sys.get_int_max_str_digits()
    return limit if limit > 0 else 1 << 62


def _int(text: str) -> int:
    digits = len(text) - text.startswith("-")
    if digits > _max_digits():
        raise _BadNumber("number", f"a number with {digits:,} digits (Loom reads numbers "
                         f"of at most {_max_digits():,} digits)")
    return int(text)


def _float(text: str) -> float:
    value = float(text)
    if value in (float("inf"), float("-inf")):
        raise _BadNumber("number", f"the number {_short(text)} is too large to hold (beyond "
                         f"{sys.float_info.max:.3g})")
    return value


def _constant(name: str) -> Any:
    raise _BadNumber("constant", f"{name}, which is not a JSON number")


def _short(text: str, limit: int = 24) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


#: What ``fast_loads`` answers when the careful reading must decide.
CAREFUL = object()
_DIGITS = bytes.maketrans(b"123456789", b"000000000")
_LONG_NUMBER = b"0" * 19  # 19 digits in a row: maybe an integer orjson would make a float


def fast_loads(raw: bytes) -> Any:
    """The JSON value of UTF-8 ``raw`` by orjson (about a third faster than ``json`` on a
    large file), or ``CAREFUL`` when :func:`loads` must read the text: anything orjson
    refuses (not JSON, a byte-order mark, a lone surrogate, NaN, a number too large,
    nesting past 1,024 levels; :func:`loads` reads deep nesting and says what is wrong
    with the rest) and any run of 19 digits (orjson turns integers beyond 64 bits into
    floats, which would not come back out as they were)."""
    if raw.startswith(codecs.BOM_UTF8) or _LONG_NUMBER in raw.translate(_DIGITS):
        return CAREFUL
    try:
        return orjson.loads(raw)
    except orjson.JSONDecodeError:
        return CAREFUL


def dumps(value: Any) -> str:
    """``value`` (JSON read from a file, and what Loom made of it) as compact JSON text, by
    orjson; by ``json`` where orjson cannot (an integer beyond 64 bits, a lone surrogate).
    Not for values that may hold NaN or an infinity, which orjson writes as null: a file
    read by :func:`loads` or :func:`fast_loads` holds neither."""
    try:
        return orjson.dumps(value).decode()
    except TypeError:  # orjson.JSONEncodeError
        return _COMPACT(value)


_COMPACT = json.JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode


def loads(text: str) -> Any:
    """The JSON value of ``text``.

    Raises ``json.JSONDecodeError`` for text that is not JSON (with the position), and
    :class:`JsonProblem` for JSON holding a value Loom cannot keep (see the module)."""
    try:
        value = json.loads(text, parse_float=_float, parse_constant=_constant)
    except RecursionError:
        value = _decode_flat(text)
    except json.JSONDecodeError:
        raise
    except ValueError:  # _BadNumber, or an integer too long for int(): say where it is
        value = _decode_flat(text)
    if _SURROGATE_ESCAPE.search(text):
        _check_surrogates(value)
    return value


def _decode_flat(s: str) -> Any:
    """The same decoding with an explicit stack instead of recursion."""
    stack: list[Any] = []  # open containers, innermost last
    keys: list[Any] = []  # the pending key of each open object (None for an array)
    end = len(s)
    idx = _WS.match(s, 0).end()  # type: ignore[union-attr]
    while True:
        # -- a value starts at idx --
        c = s[idx:idx + 1]
        value: Any
        if c == "{":
            idx = _WS.match(s, idx + 1).end()  # type: ignore[union-attr]
            if s[idx:idx + 1] == "}":
                value, idx = {}, idx + 1
            else:
                stack.append({})
                key, idx = _key(s, idx)
                keys.append(key)
                continue
        elif c == "[":
            idx = _WS.match(s, idx + 1).end()  # type: ignore[union-attr]
            if s[idx:idx + 1] == "]":
                value, idx = [], idx + 1
            else:
                stack.append([])
                keys.append(None)
                continue
        elif c == '"':
            value, idx = scanstring(s, idx + 1, True)
        else:
            value, idx = _scalar(s, idx)
        # -- the value is complete: put it in its container, close what ends here --
        while True:
            if not stack:
                idx = _WS.match(s, idx).end()  # type: ignore[union-attr]
                if idx != end:
                    raise json.JSONDecodeError("Extra data", s, idx)
                return value
            top = stack[-1]
            if type(top) is list:
                top.append(value)
                closer = "]"
            else:
                top[keys[-1]] = value
                closer = "}"
            idx = _WS.match(s, idx).end()  # type: ignore[union-attr]
            c = s[idx:idx + 1]
            if c == ",":
                idx = _WS.match(s, idx + 1).end()  # type: ignore[union-attr]
                if closer == "}":
                    keys[-1], idx = _key(s, idx)
                break
            if c == closer:
                idx += 1
                value = stack.pop()
                keys.pop()
                continue
            expected = "',' delimiter" if c else "',' delimiter or a closing bracket"
            raise json.JSONDecodeError(f"Expecting {expected}", s, idx)


def _key(s: str, idx: int) -> tuple[str, int]:
    """An object's key and the index of its value (after the colon)."""
    if s[idx:idx + 1] != '"':
        raise json.JSONDecodeError(
            "Expecting property name enclosed in double quotes", s, idx)
    key, idx = scanstring(s, idx + 1, True)
    idx = _WS.match(s, idx).end()  # type: ignore[union-attr]
    if s[idx:idx + 1] != ":":
        raise json.JSONDecodeError("Expecting ':' delimiter", s, idx)
    return key, _WS.match(s, idx + 1).end()  # type: ignore[union-attr]


def _scalar(s: str, idx: int) -> tuple[Any, int]:
    for word, value in _CONSTANTS.items():
        if s.startswith(word, idx):
            return value, idx + len(word)
    for word in ("NaN", "Infinity", "-Infinity"):
        if s.startswith(word, idx):
            raise JsonProblem("constant", f"{word}, which is not a JSON number", idx)
    match = NUMBER_RE.match(s, idx)
    if match is None:
        raise json.JSONDecodeError("Expecting value", s, idx)
    integer, frac, exp = match.groups()
    try:
        if frac or exp:
            return _float(integer + (frac or "") + (exp or "")), match.end()
        return _int(integer), match.end()
    except _BadNumber as err:
        raise JsonProblem(err.kind, err.message, idx) from None


# ── lone surrogates ──────────────────────────────────────────────────────────


def _check_surrogates(value: Any) -> None:
    """Raise :class:`JsonProblem` at the first string (or key) holding half a surrogate
    pair. Iterative; paths are linked lists so a deep tree costs no copying."""
    stack: list[tuple[Any, Any]] = [(value, None)]  # (value, (step, parent link) | None)
    while stack:
        item, path = stack.pop()
        if isinstance(item, str):
            found = _SURROGATE.search(item)
            if found and not _in_patch_diff(path):
                where = render_path(path)
                raise JsonProblem(
                    "surrogate", f"the text at {where} holds \\u{ord(found.group()):04x}, "
                    "half of a UTF-16 surrogate pair without its other half (not a character)",
                    path=where)
        elif isinstance(item, dict):
            for k, v in item.items():
                if _SURROGATE.search(k):
                    where = render_path(path)
                    raise JsonProblem(
                        "surrogate", f"a key at {where} holds half of a UTF-16 surrogate "
                        "pair without its other half (not a character)", path=where)
                stack.append((v, (k, path)))
        elif isinstance(item, list):
            stack.extend((v, (i, path)) for i, v in enumerate(item))


def _in_patch_diff(link: Any) -> bool:
    """Whether a path is a diff-match-patch diff's text (``….patch[i].diffs[j][1]``): the
    one place a loom file holds half a character by design (MiniLoom's patches count
    UTF-16 units, so a patch's context can begin inside an emoji; its importer reads it)."""
    steps: list[Any] = []
    while link is not None and len(steps) < 5:
        steps.append(link[0])
        link = link[1]
    return (len(steps) == 5 and steps[0] == 1 and isinstance(steps[1], int)
            and steps[2] == "diffs" and isinstance(steps[3], int) and steps[4] == "patch")


def render_path(link: Any) -> str:
    """``root.children[0].text`` from a linked path; a very long one keeps its first and
    last steps (``root.children[0].children[0]….text (199,990 steps left out)``)."""
    steps: list[Any] = []
    while link is not None:
        steps.append(link[0])
        link = link[1]
    steps.reverse()
    left_out = 0
    if len(steps) > 2 * PATH_SHOWN:
        left_out = len(steps) - 2 * PATH_SHOWN
        steps = [*steps[:PATH_SHOWN], None, *steps[-PATH_SHOWN:]]
    out = ""
    for step in steps:
        if step is None:
            out += "…"
        elif isinstance(step, int):
            out += f"[{step}]"
        elif re.fullmatch(r"[A-Za-z_][A-Za-z0-9_-]*", step):
            out += f".{step}" if out and not out.endswith("…") else step
        else:
            out += f"[{json.dumps(step, ensure_ascii=True)}]"
    out = out or "the top level"
    return f"{out} ({left_out:,} steps left out)" if left_out else out


def json_kind(value: Any) -> str:
    """What a parsed value is, in JSON's words: object, array, string, number…"""
    if isinstance(value, bool):
        return "a boolean"
    return {dict: "an object", list: "an array", str: "a string", int: "a number",
            float: "a number", type(None): "null"}.get(type(value), type(value).__name__)


# ── depth ────────────────────────────────────────────────────────────────────


def deepest(value: Any, limit: int) -> tuple[int, Any] | None:
    """None when ``value`` nests at most ``limit`` levels (a scalar is 0, ``[]`` 1),
    else (a depth over the limit, the linked path to where it was passed). Iterative, and
    stops at the first container past the limit."""
    if not _deeper_than(value, limit):
        return None
    stack: list[tuple[Any, int, Any]] = [(value, 0, None)]
    while stack:
        item, depth, path = stack.pop()
        if isinstance(item, dict):
            children: Any = item.items()
        elif isinstance(item, list):
            children = enumerate(item)
        else:
            continue
        depth += 1
        if depth > limit:
            return depth, path
        stack.extend((v, depth, (k, path)) for k, v in children
                     if isinstance(v, dict | list))
    return None


def _deeper_than(value: Any, limit: int) -> bool:
    """The quick answer, level by level with no paths (the usual case: not deeper)."""
    level = [value] if isinstance(value, dict | list) else []
    depth = 0
    while level:
        depth += 1
        if depth > limit:
            return True
        below: list[Any] = []
        for item in level:
            for v in (item.values() if isinstance(item, dict) else item):
                # exact types first: half the time of isinstance on every value (most are
                # strings), and subclasses of dict or list still count
                t = type(v)
                if t is dict or t is list or (t is not str and isinstance(v, dict | list)):
                    below.append(v)
        level = below
    return False
