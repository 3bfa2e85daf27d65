"""The line a model writes to call an MCP tool, read client-side like every command.

::

    → files.read_file path:"notes/act 2.md" max_lines:40
    → search.query q:marie limit:5 exact:true
    → files.write_file {"path": "a.md", "content": "…"}

``NAME.TOOL`` (a server of config.toml and one of its tools), then arguments: ``key:value``
pairs (``key=value`` is read too) where a value is a number, ``true``/``false``/``null``,
a quoted string (JSON escapes; it may run over lines), a JSON array or object, or a bare
word (a string); or one JSON object holding them all. The line is found by
:func:`loom.commands.extract.extract` like any command (at the start of its own line,
never in a code block); this module only reads what follows the arrow.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

from loom.commands.lexicon import split_line

#: ``NAME.TOOL`` at the start of a command's body (a Loom verb never has a dot).
TOOL_WORD = re.compile(r"[^\S\r\n]*([A-Za-z][A-Za-z0-9_-]*)\.([A-Za-z0-9_][\w.\-/]*)")
_KEY = re.compile(r"([A-Za-z_][\w\-]*)\s*[:=]")
_DECODER = json.JSONDecoder(strict=False)  # quoted text may run over lines


class ArgumentError(ValueError):
    """Arguments that could not be read."""


@dataclass
class ToolCall:
    server: str
    tool: str
    arguments: dict[str, Any] = field(default_factory=dict)
    #: the arguments written as bare words (``n:5`` is 5, or "5" where a string is wanted)
    bare: dict[str, str] = field(default_factory=dict)

    @property
    def name(self) -> str:
        return f"{self.server}.{self.tool}"


def tool_word(line: str) -> tuple[str, str, str] | None:
    """``(server, tool, rest)`` when ``line`` is an arrow line calling ``NAME.TOOL``."""
    parts = split_line(line.strip())
    if not parts.arrow:
        return None
    m = TOOL_WORD.match(parts.body)
    if m is None:
        return None
    rest = parts.body[m.end():]
    if rest and not rest[0].isspace():
        return None
    return m.group(1), m.group(2), rest.strip()


def _bare(value: str) -> Any:
    if value in ("true", "false"):
        return value == "true"
    if value == "null":
        return None
    try:
        return int(value)
    except ValueError:
        pass
    try:
        number = float(value)
    except ValueError:
        return value
    return number if number == number and abs(number) != float("inf") else value


def parse_arguments(text: str) -> tuple[dict[str, Any], dict[str, str]]:
    """The arguments after ``NAME.TOOL`` and which were bare words; ``ArgumentError``
    saying what could not be read."""
    text = text.strip()
    if not text:
        return {}, {}
    if text.startswith("{"):
        try:
            value, end = _DECODER.raw_decode(text)
        except json.JSONDecodeError as err:
            raise ArgumentError(f"the JSON object does not parse ({err.msg} at character "
                                f"{err.pos + 1})") from None
        if text[end:].strip():
            raise ArgumentError("write either one JSON object or key:value pairs, not both")
        return value, {}
    args: dict[str, Any] = {}
    bare: dict[str, str] = {}
    pos = 0
    while pos < len(text):
        while pos < len(text) and text[pos].isspace():
            pos += 1
        if pos >= len(text):
            break
        m = _KEY.match(text, pos)
        if m is None:
            word = text[pos:].split(None, 1)[0]
            raise ArgumentError(f"expected key:value, found {word[:40]!r}")
        key = m.group(1)
        pos = m.end()
        while pos < len(text) and text[pos] in " \t":
            pos += 1
        if pos >= len(text) or text[pos].isspace():
            raise ArgumentError(f"{key}: has no value (write {key}:value, quoted when it has "
                                "spaces)")
        if text[pos] in "\"[{":
            try:
                value, pos = _DECODER.raw_decode(text, pos)
            except json.JSONDecodeError as err:
                what = "quoted text" if text[pos] == '"' else "JSON value"
                raise ArgumentError(f"{key}: the {what} does not parse ({err.msg}); write a "
                                    'quote inside quoted text as \\"') from None
        else:
            end = pos
            while end < len(text) and not text[end].isspace():
                end += 1
            word = text[pos:end]
            value = _bare(word)
            bare[key] = word
            pos = end
        if key in args:
            raise ArgumentError(f"{key}: given twice")
        args[key] = value
    return args, bare


def canonical(call: ToolCall) -> str:
    """The call as one line: ``→ files.read_file path:"a.md" n:3``, or with a JSON object
    when a value is an array or an object."""
    args = call.arguments
    if not args:
        return f"→ {call.name}"
    if any(isinstance(v, dict | list) for v in args.values()) or \
            not all(_KEY.fullmatch(f"{k}:") for k in args):
        return f"→ {call.name} {json.dumps(args, ensure_ascii=False)}"
    return f"→ {call.name} " + " ".join(f"{k}:{json.dumps(v, ensure_ascii=False)}"
                                        for k, v in args.items())
