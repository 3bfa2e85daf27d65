"""``→ help`` and ``→ help [tool]``: the pages seed 000 shows, built from the catalogue."""

from __future__ import annotations

from collections.abc import Iterable

from loom.commands.catalogue import (
    CATEGORIES,
    PERMISSIONS,
    READER_TOOLS,
    TOOLS,
    TOOLS_BY_NAME,
    Tool,
)

#: Categories whose tools are hidden, not starred, when their permission is missing.
_HIDDEN_WHEN_MISSING = frozenset({"Documents"})


def _ordered(permissions: Iterable[str]) -> list[str]:
    held = set(permissions)
    known = [p for p in PERMISSIONS if p in held]
    return known + sorted(held - set(PERMISSIONS))


def render_help_overview(permissions: Iterable[str], reader: bool = False) -> str:
    """The tool overview for an agent holding ``permissions``; ``reader`` adds Loom's
    reader tools (bookmark, tag, prune, search, …) as a category of their own after the
    seed's: a human's overview, where the seed shows an agent's.

    The rule for tools whose permission is missing:

    * tree tools (Navigation, Content, Memory, Meta) stay listed with a star, and a
      footnote names the missing permission — the tree is shared, so knowing that
      ``continue`` exists lets the agent ask a human to do it. Each missing permission
      gets its own mark (``*``, ``**``, …) in the order of ``PERMISSIONS``;
    * document tools are left out (documents are granted per agent: seed 000 shows
      ``Documents: read`` without ``doc_write``), and a category with nothing left is
      left out too.

    With every permission there are no stars and no footnote.
    """
    held = set(permissions)
    order = _ordered(held)
    tools = TOOLS + READER_TOOLS if reader else TOOLS
    missing = [
        p for p in PERMISSIONS
        if p not in held and any(
            t.permission == p and t.category not in _HIDDEN_WHEN_MISSING for t in tools
        )
    ]
    marks = {p: "*" * (k + 1) for k, p in enumerate(missing)}
    lines = [f"Available tools (your permissions: {', '.join(order) or 'none'}):", ""]
    for category in (*CATEGORIES, "Reader") if reader else CATEGORIES:
        names = []
        for t in tools:
            if t.category != category:
                continue
            if t.permission in held:
                names.append(t.name)
            elif category not in _HIDDEN_WHEN_MISSING:
                names.append(t.name + marks[t.permission])
        if names:
            lines.append(f"{category}: {', '.join(names)}")
    lines.append("")
    if missing:
        lines += [f"{marks[p]} requires {p} permission (you don't have this)" for p in missing]
        lines.append("")
    lines.append("→ help [tool] for details on any tool")
    return "\n".join(lines)


def _page(t: Tool) -> str:
    lines = [f"{t.name} — {t.description}", "", "Syntax:"]
    lines += [f"  {s}" for s in t.syntax]
    lines += ["", t.note]
    return "\n".join(lines)


#: Seed 000's "View Modes" (its Buffer Mode section), added to the view page in a
#: buffer-mode tree: there the path is one text, and as:prose reads it as one.
BUFFER_VIEW_MODES = (
    "View modes (buffer mode):\n"
    "  → view branch:[localId] as:prose    (stitched together, natural reading)\n"
    "  → view branch:[localId] as:nodes    (separated with full metadata)"
)


def render_options(tool: str) -> str:
    """Every option a tool offers, with what it does (the seed's page names only some)."""
    t = TOOLS_BY_NAME[tool]
    width = max(len(o.name) for o in t.options) + 1
    return "Options:\n" + "\n".join(
        f"  {o.name + ':':<{width}} {o.description}" for o in t.options if o.description)


def render_help_tool(tool: str, buffer: bool = False) -> str | None:
    """The help page of one tool (canonical verb name), or None if there is no such tool.

    The page is the seed's: description, the seed's syntax lines, one note. Further forms
    the parser accepts (``Tool.variants``) appear in parse-error hints, not here, so the
    page stays exactly as seed 000 prints it; in a buffer-mode tree (``buffer``) the view
    page ends with the seed's own view modes, the way to read that tree's path as one text.
    """
    t = TOOLS_BY_NAME.get(tool.strip().lower())
    if t is None:
        return None
    if buffer and t.name == "view":
        return f"{_page(t)}\n\n{BUFFER_VIEW_MODES}"
    return _page(t)


#: What an option's value is, said to a person (``Option.reads``, then ``Option.value``).
_READS = {"int": "a whole number", "float": "a number", "bias": '"token id:bias,…"',
          "stop": 'text (quoted; "\\n" is a new line)'}
_VALUES = {"node": "a node (its localId)", "range": "a range of nodes: A-B",
           "doc": 'a document: "name"', "tree": 'a tree: "title"', "stash": "a stash label",
           "section": "a section id", "text": "text (quoted when it has spaces)",
           "model": "a model profile, or the start of its name", "value": "a value"}


def _number(x: float) -> str:
    return str(int(x)) if float(x).is_integer() else str(x)


def render_option_help(verb: str, key: str) -> str | None:
    """What ``verb``'s option ``key`` (canonical) is, from its declaration in the catalogue:
    what it does, what its value is and its bounds, example values, other spellings. None
    for an option it does not offer (one read only to explain a mistake)."""
    t = TOOLS_BY_NAME.get(verb)
    o = t.option(key) if t is not None else None
    if o is None or not o.description:
        return None
    value = _READS.get(o.reads) or _VALUES.get(o.value, "a value")
    if o.limits is not None:
        value += f" from {_number(o.limits[0])} to {_number(o.limits[1])}"
    lines = [f"{o.name}: — {o.description}", "", f"An option of → {verb}. Its value: {value}."]
    if o.hints:
        lines.append("For example: " + ", ".join(f"{o.name}:{h}" for h in o.hints))
    if o.aliases:
        lines.append("Also spelled: " + ", ".join(f"{a}:" for a in o.aliases))
    return "\n".join(lines)


def render_flag_help(verb: str, name: str) -> str | None:
    """What ``verb``'s flag ``name`` (canonical) does, and the words that set it."""
    t = TOOLS_BY_NAME.get(verb)
    f = next((x for x in t.flags if x.name == name), None) if t is not None else None
    if f is None:
        return None
    lines = [f"{f.name} — {f.description}", "", f"A flag of → {verb}: the word alone."]
    others = [w for w in f.spellings() if w != f.name]
    if others:
        lines.append("Also: " + ", ".join(others))
    return "\n".join(lines)
