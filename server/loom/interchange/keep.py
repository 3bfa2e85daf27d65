"""What a file says that Loom renders differently: kept as a three-way difference.

On import Loom renders each object (tree, node, edge, the file itself) from the rows it
is about to store, exactly as a later export would, and keeps the places where the file
differs as entries ``{"p": path, "b": base, "o": original}`` (``b`` or ``o`` absent: the
key was absent). On export each entry is applied only where Loom's rendering still equals
``base``: what nobody changed in Loom comes back exactly as the file had it (unknown
fields, other looms' extensions, a timestamp's spelling, an id Loom had to remap), and
what was changed in Loom (a bookmark, a summary) wins.

Dictionaries are compared key by key, so an unknown key inside a known object is one
small entry; anything else (lists, text, numbers) is compared whole.
"""

from __future__ import annotations

from typing import Any

Entry = dict[str, Any]
_MISSING = object()


def diff(rendered: Any, original: Any) -> list[Entry]:
    """The entries that turn ``rendered`` into ``original`` (both JSON values)."""
    out: list[Entry] = []
    if isinstance(rendered, dict) and isinstance(original, dict):
        _diff_dict(rendered, original, [], out)
    elif not _same(rendered, original):
        out.append({"p": [], "b": rendered, "o": original})
    return out


def _same(a: Any, b: Any) -> bool:
    # 1 == 1.0 == True in Python, not in a file: the type must match too.
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return a.keys() == b.keys() and _same_pairs(
            zip(a.values(), map(b.__getitem__, a), strict=True))
    if isinstance(a, list):
        return len(a) == len(b) and _same_pairs(zip(a, b, strict=True))
    return bool(a == b)


def _same_pairs(pairs: Any) -> bool:
    # A loop, not all() over a generator: an import compares every node of the file.
    for v, w in pairs:
        if type(v) is not type(w):
            return False
        if isinstance(v, dict | list):
            if not _same(v, w):
                return False
        elif v != w:
            return False
    return True


def _diff_dict(rendered: dict[str, Any], original: dict[str, Any], path: list[str],
               out: list[Entry]) -> None:
    for key, value in original.items():
        here = [*path, key]
        if key not in rendered:
            out.append({"p": here, "o": value if not isinstance(value, dict) else {}})
            if isinstance(value, dict):
                _diff_dict({}, value, here, out)
        elif isinstance(value, dict) and isinstance(rendered[key], dict):
            _diff_dict(rendered[key], value, here, out)
        elif not _same(rendered[key], value):
            out.append({"p": here, "b": rendered[key], "o": value})
    for key, value in rendered.items():
        if key not in original:
            out.append({"p": [*path, key], "b": value})


def apply(rendered: Any, entries: list[Entry]) -> Any:
    """``rendered`` with every entry whose base still holds replaced by the original."""
    for entry in entries:
        path = entry["p"]
        base = entry.get("b", _MISSING)
        if not path:
            if base is not _MISSING and _same(rendered, base):
                rendered = _copy(entry.get("o"))
            continue
        parent: Any = rendered
        for key in path[:-1]:
            parent = parent.get(key, _MISSING) if isinstance(parent, dict) else _MISSING
        current = parent.get(path[-1], _MISSING) if isinstance(parent, dict) else _MISSING
        if not (current is base or (current is not _MISSING and base is not _MISSING
                                    and _same(current, base))):
            continue  # Loom's state changed here since the import: Loom's value wins
        if "o" not in entry:
            if isinstance(parent, dict):
                parent.pop(path[-1], None)
            continue
        parent = rendered
        for key in path[:-1]:  # the objects on the way may be new (Loom renders none)
            if not isinstance(parent.get(key), dict):
                parent[key] = {}
            parent = parent[key]
        parent[path[-1]] = _copy(entry["o"])
    return rendered


def _copy(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _copy(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_copy(v) for v in value]
    return value
