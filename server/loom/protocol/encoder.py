"""Loom Protocol encoder: JSON data to indentation-based text (grammar in docs/protocol.md)."""

from __future__ import annotations

import math
from typing import Any

from loom.protocol.errors import LoomEncodeError, LoomEncodeTypeError
from loom.protocol.lexical import (
    BLOCK_CLIP,
    BLOCK_STRIP,
    CELL_SEP,
    MAX_DEPTH,
    SEP,
    UNSAFE_RE,
    Ctx,
    column_plain_ok,
    key_plain_ok,
    quote,
    scalar_text,
)
from loom.protocol.schema import SchemaLike, Shape

INDENT = 2
TABLE_MIN_ROWS = 3
"""Shorter uniform arrays keep the seed's "- key: value" look."""
_SCALARS = (str, int, float, type(None))  # bool is an int


def dumps(value: Any, *, schema: SchemaLike = None) -> str:
    """Encode a JSON value (dict, list, str, int, float, bool, None) as Loom Protocol text.

    The text has no trailing newline. Tuples are written as arrays. Raises
    :class:`LoomEncodeError` (a ``ValueError``) for NaN, infinity, reference cycles and
    values nested more than ``MAX_DEPTH`` levels, and
    :class:`LoomEncodeTypeError` (also a ``TypeError``) for values that are not JSON data.

    With a ``schema`` (JSON Schema or a pydantic model), a one-item array where the schema
    expects an array is written as its bare item (``actions: send``), as seed 004 writes
    it; ``loads(text, schema=…)`` reads it back as the array. A scalar where the schema
    expects only an array is a :class:`LoomEncodeError`: it would read back as an array.
    """
    _check_depth(value)
    enc = _Encoder()
    enc.root(value, Shape.of(schema))
    return "\n".join(enc.lines)


def _check_depth(value: Any) -> None:
    """Refuse a value nested more than MAX_DEPTH levels (``[]`` is one level), with the path
    to where it passes the bound: checked first, with an explicit stack, so the recursive
    writer below never goes deeper than the bound."""
    # (value, depth, path to it, the containers above it as a linked list)
    stack: list[tuple[Any, int, list[str | int], Any]] = [(value, 0, [], None)]
    while stack:
        item, depth, steps, above = stack.pop()
        if isinstance(item, dict):
            children: Any = item.items()
        elif isinstance(item, list | tuple):
            children = enumerate(item)
        else:
            continue
        if depth >= MAX_DEPTH:
            seen, link = {id(item)}, above
            while link is not None and link[0] not in seen:
                seen.add(link[0])
                link = link[1]
            err = LoomEncodeError("cannot encode a reference cycle" if link is not None else
                                  f"the value nests more than {MAX_DEPTH} levels deep")
            err.steps = steps
            raise err
        here = (id(item), above)
        stack.extend((v, depth + 1, [*steps, k], here) for k, v in children
                     if isinstance(v, dict | list | tuple))


def scalar(v: Any, ctx: Ctx) -> str:
    """Text of a scalar value written on one line."""
    if isinstance(v, str):
        return scalar_text(v, ctx)
    if v is None:
        return "null"
    if v is True:
        return "true"
    if v is False:
        return "false"
    if isinstance(v, int):
        try:
            return int.__repr__(v)
        except ValueError as e:  # more digits than sys.get_int_max_str_digits() allows
            raise LoomEncodeError(str(e)) from None
    if isinstance(v, float):
        if not math.isfinite(v):
            raise LoomEncodeError(f"cannot encode {v!r}: NaN and infinity are not JSON numbers")
        return float.__repr__(v)
    raise LoomEncodeTypeError(f"cannot encode a value of type {type(v).__name__}")


def block_indicator(s: str) -> str | None:
    """``|-`` or ``|`` when ``s`` is best written as an indented block; None to quote it.

    A block needs a newline, at most one trailing newline, no line ending in whitespace, a
    first line not starting with whitespace (lenient decoding infers the block's indent
    from it), and no character that must be escaped.
    """
    if "\n" not in s:
        return None
    body, indicator = (s[:-1], BLOCK_CLIP) if s[-1] == "\n" else (s, BLOCK_STRIP)
    if not body or body[-1] == "\n" or body[0].isspace():
        return None
    if UNSAFE_RE.search(body.replace("\n", "")):
        return None
    for line in body.split("\n"):
        if line and line[-1].isspace():
            return None
    return indicator


def _is_scalar(v: Any) -> bool:
    return isinstance(v, _SCALARS)


def table_columns(items: list[Any]) -> tuple[str, ...] | None:
    """Column names when ``items`` are at least TABLE_MIN_ROWS objects with the same keys, in
    the same order, whose values are all scalars; else None."""
    if len(items) < TABLE_MIN_ROWS or not isinstance(items[0], dict) or not items[0]:
        return None
    cols = tuple(items[0])
    if not all(isinstance(c, str) for c in cols):
        return None
    for it in items:
        if not isinstance(it, dict) or tuple(it) != cols:
            return None
        for v in it.values():
            if not _is_scalar(v):
                return None
    return cols


class _Encoder:
    def __init__(self) -> None:
        self.lines: list[str] = []
        self._open: set[int] = set()

    # -- containers -------------------------------------------------------------------------

    def _enter(self, v: Any) -> None:
        if id(v) in self._open:
            raise LoomEncodeError("cannot encode a reference cycle")
        self._open.add(id(v))

    def _dict_body(self, d: dict[Any, Any], indent: int, shape: Shape | None) -> None:
        self._enter(d)
        pad = " " * indent
        for k, v in d.items():
            if not isinstance(k, str):
                raise LoomEncodeTypeError(f"object keys must be strings, not {type(k).__name__}")
            try:
                lead = pad + (k if key_plain_ok(k) else quote(k)) + ":"
                sub = shape.prop(k) if shape is not None else None
                if self._needs_body(v, sub):
                    self.lines.append(lead)
                    self._body(v, indent + INDENT, sub)
                else:
                    self._tail(lead + " ", v, indent, Ctx.VALUE, sub)
            except LoomEncodeError as e:
                e.steps.insert(0, k)
                raise
        self._open.discard(id(d))

    def _list_body(self, items: list[Any], indent: int, shape: Shape | None) -> None:
        self._enter(items)
        pad = " " * indent
        for i, v in enumerate(items):
            try:
                sub = shape.item(i) if shape is not None else None
                if self._needs_body(v, sub):
                    # "- " takes the place of the first line's indentation: "- id: x"
                    start = len(self.lines)
                    self._body(v, indent + INDENT, sub)
                    self.lines[start] = pad + "- " + self.lines[start][indent + INDENT :]
                else:
                    self._tail(pad + "- ", v, indent, Ctx.ITEM, sub)
            except LoomEncodeError as e:
                e.steps.insert(0, i)
                raise
        self._open.discard(id(items))

    def _body(self, v: Any, indent: int, shape: Shape | None = None) -> None:
        if isinstance(v, dict):
            self._dict_body(v, indent, shape)
        else:
            self._list_body(list(v), indent, shape)

    @staticmethod
    def _needs_body(v: Any, shape: Shape | None = None) -> bool:
        """Is ``v`` written as lines of its own (a non-empty object, or an array that has
        neither an inline nor a table form)?"""
        if isinstance(v, dict):
            return bool(v)
        if isinstance(v, list | tuple):
            if not v:
                return False
            if all(_is_scalar(x) for x in v):
                return any(isinstance(x, str) and block_indicator(x) for x in v)
            return table_columns(v) is None  # type: ignore[arg-type]
        if shape is not None and shape.wants_array_for(v):
            raise LoomEncodeError("the schema expects an array here, not a single value "
                                  "(it would read back as a one-item array)")
        return False

    # -- one-line forms ---------------------------------------------------------------------

    def _tail(self, lead: str, v: Any, indent: int, ctx: Ctx,
              shape: Shape | None = None) -> None:
        """Write ``v`` after ``lead`` on the same line; blocks and table rows follow below."""
        if isinstance(v, str):
            indicator = block_indicator(v)
            if indicator is None:
                self.lines.append(lead + scalar_text(v, ctx))
                return
            self.lines.append(lead + indicator)
            pad = " " * (indent + INDENT)
            body = v[:-1] if indicator == BLOCK_CLIP else v
            self.lines.extend(pad + ln if ln else "" for ln in body.split("\n"))
        elif isinstance(v, dict):
            self.lines.append(lead + "{}")  # non-empty objects never get here
        elif isinstance(v, list | tuple):
            items = list(v)
            cols = table_columns(items)
            if shape is not None:
                _check_scalars(items, shape, cols)
            if cols is None and len(items) == 1 and shape is not None and \
                    shape.wants_array_for(items[0]):
                self.lines.append(lead + scalar(items[0], ctx))  # seed 004's "actions: send"
            elif cols is None:
                self.lines.append(lead + _inline(items, ctx))
            else:
                self.lines.append(lead + _header(cols))
                self._rows(items, indent + INDENT)
        else:
            self.lines.append(lead + scalar(v, ctx))

    def _rows(self, items: list[dict[str, Any]], indent: int) -> None:
        pad = " " * indent
        for i, row in enumerate(items):
            cells = []
            for k, v in row.items():
                try:
                    cells.append(scalar(v, Ctx.CELL))
                except LoomEncodeError as e:
                    e.steps[:0] = [i, k]
                    raise
            self.lines.append(pad + CELL_SEP.join(cells))

    # -- the document -----------------------------------------------------------------------

    def root(self, v: Any, shape: Shape | None = None) -> None:
        if self._needs_body(v, shape):
            self._body(v, 0, shape)
        else:
            self._tail("", v, 0, Ctx.TOP, shape)


def _check_scalars(items: list[Any], shape: Shape, cols: tuple[str, ...] | None) -> None:
    """Refuse the scalars of an inline array or a table that the schema expects to be
    arrays: written bare, they would read back as one-item arrays."""
    for i, item in enumerate(items):
        at = shape.item(i)
        for key, x in (item.items() if cols is not None else [(None, item)]):
            if (at.prop(key) if key is not None else at).wants_array_for(x):
                err = LoomEncodeError("the schema expects an array here, not a single value "
                                      "(it would read back as a one-item array)")
                err.steps[:0] = [i] if key is None else [i, key]
                raise err


def _inline(items: list[Any], ctx: Ctx) -> str:
    """``[]``, ``[x]`` or ``a, b, c`` for an array of scalars."""
    if not items:
        return "[]"
    if len(items) == 1:
        try:
            return "[" + scalar(items[0], Ctx.VALUE) + "]"
        except LoomEncodeError as e:
            e.steps.insert(0, 0)
            raise
    out = []
    for i, x in enumerate(items):
        try:
            out.append(scalar(x, ctx))
        except LoomEncodeError as e:
            e.steps.insert(0, i)
            raise
    return SEP.join(out)


def _header(cols: tuple[str, ...]) -> str:
    return "{" + CELL_SEP.join([c if column_plain_ok(c) else quote(c) for c in cols]) + "}"
