"""Commands written back in their canonical arrow form.

``to_text(parse(line))`` is how a trace shows what ran; ``parse(to_text(cmd)) == cmd``
for every command the parser can produce (the property tests check it). Quoted values
use straight double quotes with ``\\``, ``"``, newline and carriage return escaped, so a
command is always one line (a multi-line think is the block form ``→ think`` … ``←``).
"""

from __future__ import annotations

import re

from loom.commands.catalogue import RESERVED, TOOLS_BY_NAME
from loom.commands.lexicon import CANONICAL_ARROW as ARROW
from loom.commands.lexicon import CANONICAL_CLOSER
from loom.commands.syntax import (
    Annotate,
    Bookmark,
    ChooseModel,
    Command,
    Commit,
    Continue,
    Delete,
    Drop,
    Edit,
    Explore,
    Export,
    Fill,
    Grant,
    Help,
    Import,
    LinkTarget,
    List,
    MakeLink,
    Memory,
    NewTree,
    PinBlock,
    Prune,
    Rate,
    Read,
    Recall,
    Regenerate,
    Rename,
    Respond,
    Save,
    Score,
    Search,
    ShowTree,
    Split,
    StashBlock,
    Switch,
    Tag,
    Think,
    TreeSettings,
    Unbookmark,
    Undelete,
    Unprune,
    Untag,
    View,
    Write,
)
from loom.model.sampling import extra_text

#: A value that may be written without quotes (section ids, write locations).
_BARE = re.compile(r"[A-Za-z0-9_](?:[A-Za-z0-9_.\-]*[A-Za-z0-9_])?")
_ESCAPES = str.maketrans({"\\": "\\\\", '"': '\\"', "\n": "\\n", "\r": "\\r"})


def quote(value: str) -> str:
    """``value`` in double quotes, escaped so the parser reads it back unchanged."""
    return '"' + value.translate(_ESCAPES) + '"'


def _option_values(value: object) -> list[str]:
    """An option's value as written: numbers as Python writes them, text quoted, each
    stop string an option of its own, token biases as ``"id:bias,…"``."""
    if isinstance(value, str):
        return [quote(value)]
    if isinstance(value, list):
        return [quote(str(v)) for v in value]
    if isinstance(value, dict):
        return [quote(",".join(f"{k}:{v:g}" for k, v in value.items()))]
    return [repr(value)]


def bare_or_quoted(value: str) -> str:
    """``value`` as is when it is a plain token, else quoted."""
    return value if _BARE.fullmatch(value) else quote(value)


def section_text(section: str) -> str:
    """A section reference: ``§id`` for plain ids, ``section:"…"`` otherwise."""
    return f"§{section}" if _BARE.fullmatch(section) else f"section:{quote(section)}"


def doc_ref_text(name: str, section: str | None = None) -> str:
    """``doc:"name"`` with an optional section, the form pins and links are shown in."""
    text = f"doc:{quote(name)}"
    return f"{text} {section_text(section)}" if section is not None else text


def ref_text(ref: str) -> str:
    """A node reference as a bare word: ``a7x2``, or ``[tree]`` when it spells a keyword."""
    return f"[{ref}]" if ref in RESERVED else ref


def _target(target: LinkTarget) -> str:
    if target.kind == "doc":
        return doc_ref_text(target.doc or "", target.section)
    if target.kind == "tree":
        text = f"tree:{quote(target.tree or '')}"
        return f"{text} node:{target.node}" if target.node else text
    return ref_text(target.node or "")


def _think(content: str) -> str:
    one_line = "\n" not in content and content == content.strip()
    if one_line:
        return f"{ARROW} think {content}" if content else f"{ARROW} think"
    return f"{ARROW} think\n{content}\n{CANONICAL_CLOSER}"


def _parts(cmd: Command) -> list[str]:
    match cmd:
        case View():
            parts = ["view"]
            if cmd.node is not None:
                parts.append(ref_text(cmd.node))
            if cmd.branch is not None:
                parts.append(f"branch:{cmd.branch}")
            if cmd.detail != "summary":
                parts.append(cmd.detail)
            if cmd.as_ is not None:
                parts.append(f"as:{cmd.as_}")
            return parts
        case List():
            return ["list", *([ref_text(cmd.node)] if cmd.node else []), cmd.what]
        case ShowTree():
            parts = ["tree"]
            if cmd.from_ is not None:
                parts.append(f"from:{cmd.from_}")
            if cmd.depth is not None:
                parts.append(f"depth:{cmd.depth}")
            if cmd.summary:
                parts.append("summary")
            if cmd.text:
                parts.append("with-text")
            return parts
        case Switch():
            parts = ["switch", "to", ref_text(cmd.node)]
            if cmd.tree is not None:
                parts += ["in", f"tree:{quote(cmd.tree)}"]
            if cmd.tip is not None:
                parts.append(f"tip:{cmd.tip}")
            return parts
        case Continue():
            parts = ["continue"]
            if cmd.from_ is not None:
                parts += ["from", ref_text(cmd.from_)]
            return parts + _models_and_sampling("continue", cmd.models, cmd, cmd.preset)
        case Split():
            parts = ["split", ref_text(cmd.node), f"at:{cmd.at}"]
            return parts + ([f"alt:{quote(cmd.alt)}"] if cmd.alt is not None else [])
        case Respond():
            parts = ["respond", ref_text(cmd.node), quote(cmd.content)]
            if cmd.as_ != "continuation":
                parts.append(f"as:{cmd.as_}")
            return parts
        case Annotate() | Edit():
            return [cmd.verb, ref_text(cmd.node), quote(cmd.content)]
        case MakeLink():
            parts = ["link", ref_text(cmd.node), "to", _target(cmd.target)]
            if cmd.note is not None:
                parts.append(f"note:{quote(cmd.note)}")
            return parts
        case Read(doc=None):
            return ["read"]
        case Read():
            parts = ["read", f"doc:{quote(cmd.doc)}"]
            if cmd.summary:
                parts.append("summary")
            if cmd.lines is not None:
                parts.append(f"lines:{cmd.lines[0]}-{cmd.lines[1]}")
            if cmd.section is not None:
                parts.append(f"section:{bare_or_quoted(cmd.section)}")
            return parts
        case Write():
            parts = ["write", f"doc:{quote(cmd.doc)}"]
            if cmd.mode == "at":
                parts.append(f"at:{bare_or_quoted(cmd.at or '')}")
            elif cmd.mode == "replace":
                parts.append(f"replace:{bare_or_quoted(cmd.section or '')}")
            else:
                parts.append("append")
            return [*parts, quote(cmd.content)]
        case PinBlock():
            if cmd.doc is not None:
                parts = ["pin", f"doc:{quote(cmd.doc)}"]
                if cmd.section is not None:
                    parts.append(f"section:{bare_or_quoted(cmd.section)}")
                return parts
            return ["pin", ref_text(cmd.node or "")]
        case StashBlock():
            parts = ["stash", quote(cmd.label)]
            if cmd.content is not None:
                parts.append(quote(cmd.content))
            elif cmd.content_of is not None:
                parts.append(f"content-of:{cmd.content_of}")
            elif cmd.summary_of is not None:
                parts.append(f"summary-of:{cmd.summary_of[0]}-{cmd.summary_of[1]}")
            return parts
        case Recall():
            return ["recall", quote(cmd.label)]
        case Drop():
            parts = ["drop"]
            if cmd.pin is not None:
                parts.append(cmd.pin if cmd.pin.startswith("doc:") else f"pin:{cmd.pin}")
            if cmd.stash is not None:
                parts.append(f"stash:{quote(cmd.stash)}")
            return parts
        case Memory():
            return ["memory"] if cmd.what == "state" else ["memory", cmd.what]
        case Help():
            return ["help"] if cmd.tool is None else ["help", cmd.tool]
        case (Commit() | NewTree() | Save() | Export() | Import() | Grant() | ChooseModel()
              | TreeSettings()):
            return _editor_parts(cmd)
    raise TypeError(f"not a command: {cmd!r}")  # pragma: no cover - exhaustive above


_PREVIEW = 60


def _node_part(node: str | None) -> list[str]:
    return [ref_text(node)] if node is not None else []


def _reader_parts(cmd: Command) -> list[str] | None:
    """The reader's verbs (``→ bookmark a7x2 "tone shift"``), or None for another."""
    match cmd:
        case Bookmark():
            return ["bookmark", *_node_part(cmd.node),
                    *([quote(cmd.label)] if cmd.label is not None else [])]
        case Unbookmark():
            return ["unbookmark", *_node_part(cmd.node)]
        case Tag() | Untag():
            return [cmd.verb, *_node_part(cmd.node), *(quote(t) for t in cmd.tags)]
        case Rate():
            return ["rate", *_node_part(cmd.node), f"{cmd.rating:+d}" if cmd.rating else "0"]
        case Prune() | Unprune() | Regenerate():
            return [cmd.verb, ref_text(cmd.node)]
        case Delete() | Undelete():
            if cmd.tree is not None:
                return [cmd.verb, f"tree:{quote(cmd.tree)}"]
            return [cmd.verb, *_node_part(cmd.node)]
        case Rename():
            return ["rename", *([f"tree:{quote(cmd.tree)}"] if cmd.tree else []),
                    quote(cmd.title)]
        case Explore():
            return _explore_parts(cmd)
        case Score():
            return ["score", *_node_part(cmd.node),
                    *([f"branch:{ref_text(cmd.branch)}"] if cmd.branch is not None else []),
                    *([f"model:{bare_or_quoted(cmd.model)}"] if cmd.model else [])]
        case Fill():
            parts = ["fill", ref_text(cmd.node)] if cmd.node is not None else ["fill"]
            if cmd.start is not None and cmd.end is not None:
                parts.append(f"at:{cmd.start}-{cmd.end}")
            elif cmd.span is not None:
                parts.append(quote(cmd.span))
            return parts + _models_and_sampling("fill", cmd.models, cmd, cmd.preset)
        case Search():
            return ["search", quote(cmd.query),
                    *(["in", f"tree:{quote(cmd.tree)}"] if cmd.tree else [])]
    return None


def _explore_parts(cmd: Explore) -> list[str]:
    """``explore from a7x2 depth:3 n:2 judge:"…" budget:20000``, or ``explore end``."""
    if cmd.end:
        return ["explore", "end"]
    parts = ["explore", *(["from", ref_text(cmd.from_)] if cmd.from_ is not None else [])]
    for name in ("depth", "n", "budget", "threshold"):
        value = getattr(cmd, name)
        if value is not None:
            parts.append(f"{name}:{value}")
    parts += [f"judge:{quote(cmd.judge)}"] if cmd.judge is not None else []
    return parts + _models_and_sampling("explore", cmd.models, cmd.sampling, cmd.preset)


def _models_and_sampling(verb: str, models: tuple[str, ...], sampling: object,
                         preset: str | None = None) -> list[str]:
    """``model:x`` or ``models:a,b``, the preset, then the sampling options ``verb``
    declares."""
    parts = []
    if models:
        names = ",".join(models)
        bare = all(_BARE.fullmatch(m) for m in models)
        parts.append(f"{'models' if len(models) > 1 else 'model'}:"
                     + (names if bare else quote(names)))
    if preset is not None:
        parts.append(f"preset:{bare_or_quoted(preset)}")
    for option in TOOLS_BY_NAME[verb].options:
        value = getattr(sampling, option.name) if option.sampling else None
        if value is None:
            continue
        if option.reads == "strings":
            parts.append(f"{option.name}:{quote(', '.join(value))}")
        elif option.reads == "extra":
            parts.append(f"{option.name}:{quote(extra_text(value))}")
        else:
            parts += [f"{option.name}:{shown}" for shown in _option_values(value)]
    return parts


def _preview(text: str) -> str:
    flat = " ".join(text.split())
    return quote(flat if len(flat) <= _PREVIEW else flat[: _PREVIEW - 1] + "…")


def _editor_parts(cmd: Command) -> list[str]:
    """Editor verbs as they appear in traces: readable, one line, long text previewed
    (they are built by editors, never parsed back)."""
    match cmd:
        case Commit():
            parts = ["commit", *(f"edit:{v.node}" for v in cmd.versions)]
            if cmd.text is not None:
                parts.append(f"text:{_preview(cmd.text)}")
            if cmd.after is not None:
                parts.append(f"after:{cmd.after}")
            return parts
        case ChooseModel():
            parts = ["model", bare_or_quoted(cmd.profile) if cmd.profile else "default"]
            if cmd.preset is not None:
                parts.append(f"preset:{bare_or_quoted(cmd.preset) if cmd.preset else 'none'}")
            return parts
        case NewTree():
            parts = ["new", "tree", quote(cmd.title)]
            return parts + ([f"mode:{cmd.mode}"] if cmd.mode != "buffer" else [])
        case Save():
            return ["save", f"doc:{quote(cmd.doc)}", _preview(cmd.content)]
        case Export():
            parts = ["export"]
            if cmd.tree is not None:
                parts.append(f"tree:{quote(cmd.tree)}")
            parts.append(f"format:{cmd.format}")
            return parts + ([f"to:{quote(cmd.path)}"] if cmd.path else [])
        case Import():
            return ["import", quote(cmd.path or cmd.name or "(editor content)")]
        case Grant():
            return ["grant", quote(cmd.participant), ",".join(cmd.permissions) or "none"]
        case TreeSettings():
            return ["settings", *(f"{name}:{'on' if value else 'off'}" for name, value in
                                  (("shuffle", cmd.shuffle), ("blind", cmd.blind))
                                  if value is not None)]
    raise TypeError(f"not an editor command: {cmd!r}")  # pragma: no cover


def to_text(cmd: Command) -> str:
    """``cmd`` in canonical arrow form, e.g. ``→ annotate a7x2 "text"``."""
    if isinstance(cmd, Think):
        return _think(cmd.content)
    reader = _reader_parts(cmd)
    return f"{ARROW} " + " ".join(reader if reader is not None else _parts(cmd))
