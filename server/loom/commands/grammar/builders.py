"""Step 2 of parsing, the builders of the seed's verbs (view … memory): each reads its
``VerbArgs`` into its ``Command``, or into a ``Fail`` saying what is wrong and how to write it.
``build`` picks the builder for a verb (the reader's verbs' are in ``reader``); ``help``,
``recall`` and ``think`` read the raw tokens or text instead of the scan's ``VerbArgs``.
"""

from __future__ import annotations

from collections.abc import Callable

from loom.commands.canonical import doc_ref_text, quote
from loom.commands.catalogue import EDGE_TYPES, HELP_ALL, VIEW_SHAPES
from loom.commands.grammar.explore import EXPLORE_BUILDERS
from loom.commands.grammar.fill import FILL_BUILDERS
from loom.commands.grammar.fuzzy import fuzzy
from loom.commands.grammar.lexer import INT, RANGE, Tok, norm_ref
from loom.commands.grammar.reader import READER_BUILDERS
from loom.commands.grammar.results import Fail, VerbArgs, show, usage, use
from loom.commands.grammar.sampling import generation_options
from loom.commands.grammar.scan import (
    as_choice,
    as_int,
    limit_refs,
    one,
    ref_opt,
    scan,
    strings_as_refs,
    target_node,
    unquoted_hint,
)
from loom.commands.grammar.score import SCORE_BUILDERS
from loom.commands.grammar.vocabulary import (
    CONTENT_VERBS,
    FREE_WORDS,
    PHRASES,
    SPECS,
    TOOL_GROUPS,
    VERB_CHOICES,
    Spec,
)
from loom.commands.lexicon import CLOSERS
from loom.commands.syntax import (
    Annotate,
    Command,
    Continue,
    Drop,
    Edit,
    Help,
    LinkTarget,
    List,
    MakeLink,
    Memory,
    PinBlock,
    Read,
    Recall,
    Respond,
    ShowTree,
    Split,
    StashBlock,
    Switch,
    Think,
    View,
    Write,
)


def _no_doc(a: VerbArgs, spec: Spec) -> Fail | None:
    if "doc" in a.opts:
        return Fail(f"{spec.tool.name} works on nodes; documents are read",
                    hint=f"did you mean → read doc:{quote(a.opts['doc'])}?", candidates=("read",))
    return None


def _build_view(a: VerbArgs, spec: Spec) -> Command | Fail:
    if (fail := _no_doc(a, spec)) is not None:
        return fail
    strings_as_refs(a)
    if a.strings:
        return Fail(f"view takes no text, got {show(a.strings[0])}", hint=usage(spec.tool))
    node = target_node(a, spec)
    if isinstance(node, Fail):
        return node
    branch = ref_opt(a, "branch", spec)
    if isinstance(branch, Fail):
        return branch
    details = [f for f in a.flags if not f.startswith("as:")]
    shapes = [f[3:] for f in a.flags if f.startswith("as:")]
    if "as" in a.opts:
        shape = as_choice(a.opts["as"], VIEW_SHAPES, "as")
        if isinstance(shape, Fail):
            return shape
        shapes.append(shape)
    detail = one(details, "detail", spec)
    as_ = one(shapes, "as:", spec)
    if isinstance(detail, Fail):
        return detail
    if isinstance(as_, Fail):
        return as_
    return View(node=node, branch=branch, detail=detail or "summary", as_=as_)


def _build_list(a: VerbArgs, spec: Spec) -> Command | Fail:
    strings_as_refs(a)
    node = target_node(a, spec)
    if isinstance(node, Fail):
        return node
    what = one(a.flags, "list", spec)
    if isinstance(what, Fail):
        return what
    if what == "documents":
        if node is not None:
            return Fail("documents are not connected to a node",
                        hint="→ list documents (or → read) lists them all")
        return Read()
    return List(node=node, what=what or "continuations")


def _build_tree(a: VerbArgs, spec: Spec) -> Command | Fail:
    strings_as_refs(a)
    start = target_node(a, spec, "from")
    if isinstance(start, Fail):
        return start
    depth = as_int(a.opts["depth"], "depth") if "depth" in a.opts else None
    if isinstance(depth, Fail):
        return depth
    return ShowTree(from_=start, depth=depth, summary="summary" in a.flags,
                text="with-text" in a.flags)


def _build_switch(a: VerbArgs, spec: Spec) -> Command | Fail:
    strings_as_refs(a)
    node = target_node(a, spec)
    if isinstance(node, Fail):
        return node
    if node is None:
        return Fail("switch needs a node", hint=use(*spec.tool.syntax))
    return Switch(node=node, tree=a.opts.get("tree"))


def _build_continue(a: VerbArgs, spec: Spec) -> Command | Fail:
    strings_as_refs(a)
    if "from" not in a.opts and len(a.refs) == 1 and a.refs[0].isdigit():
        ref = a.refs[0]
        return Fail(f'"{ref}" could be a node or a count',
                    hint=f"did you mean → continue from {ref} or → continue n:{ref}?")
    start = target_node(a, spec, "from")
    if isinstance(start, Fail):
        return start
    values = generation_options(a, spec)
    if isinstance(values, Fail):
        return values
    return Continue.model_validate({"from": start, **values})


def _build_split(a: VerbArgs, spec: Spec) -> Command | Fail:
    """``split a7x2 at:57 [alt:"…"]``; a bare number after the node is the offset, a
    quoted string the alternative."""
    if "at" not in a.opts and len(a.refs) == 2 and a.refs[1].isdigit():
        a.opts["at"] = a.refs.pop()
    node = target_node(a, spec)
    if isinstance(node, Fail):
        return node
    if node is None:
        return Fail("split needs a node", hint=use(*spec.tool.syntax))
    if "at" not in a.opts:
        return Fail("split needs an offset", hint=use(spec.tool.syntax[0]))
    at = as_int(a.opts["at"], "at")
    if isinstance(at, Fail):
        return at
    alts = ([a.opts["alt"]] if "alt" in a.opts else []) + a.strings
    if len(alts) > 1:
        return Fail("split takes one alternative", hint=use(spec.tool.syntax[1]))
    return Split(node=node, at=at, alt=alts[0] if alts else None)


def _node_and_content(a: VerbArgs, spec: Spec) -> tuple[str, str] | Fail:
    verb = spec.tool.name
    if not a.refs and "node" not in a.opts and len(a.strings) == 2:
        strings_as_refs(a)
    if not a.strings and a.refs:
        return Fail(f"{verb} needs the content in quotes",
                    hint=unquoted_hint(a, verb, a.refs[0]))
    if a.unknown:
        return Fail(f'unexpected "{a.unknown[0]}" for {verb}', hint=use(spec.tool.syntax[0]))
    node = target_node(a, spec)
    if isinstance(node, Fail):
        return node
    if node is None:
        return Fail(f"{verb} needs a node", hint=use(spec.tool.syntax[0]))
    if not a.strings:
        return Fail(f"{verb} needs the content in quotes", hint=unquoted_hint(a, verb, node))
    if len(a.strings) > 1:
        return Fail(f"{verb} takes one quoted content, got {len(a.strings)}",
                    hint=use(spec.tool.syntax[0]))
    return node, a.strings[0]


def _build_respond(a: VerbArgs, spec: Spec) -> Command | Fail:
    got = _node_and_content(a, spec)
    if isinstance(got, Fail):
        return got
    edge = as_choice(a.opts["as"], EDGE_TYPES, "as") if "as" in a.opts else "continuation"
    if isinstance(edge, Fail):
        return edge
    return Respond(node=got[0], content=got[1], as_=edge)


def _build_annotate(a: VerbArgs, spec: Spec) -> Command | Fail:
    got = _node_and_content(a, spec)
    return got if isinstance(got, Fail) else Annotate(node=got[0], content=got[1])


def _build_edit(a: VerbArgs, spec: Spec) -> Command | Fail:
    got = _node_and_content(a, spec)
    return got if isinstance(got, Fail) else Edit(node=got[0], content=got[1])


def _build_link(a: VerbArgs, spec: Spec) -> Command | Fail:
    if len(a.strings) > 1:
        strings_as_refs(a)
    fail = limit_refs(a, spec, 2)
    if fail is not None:
        return fail
    if not a.refs:
        return Fail("link needs a source node", hint=use(*spec.tool.syntax))
    source, others = a.refs[0], a.refs[1:]
    node_opt = ref_opt(a, "node", spec)
    if isinstance(node_opt, Fail):
        return node_opt
    section = a.opts.get("section")
    if "doc" in a.opts:
        if others or node_opt:
            return Fail("link to one target at a time", hint=usage(spec.tool))
        target = LinkTarget(kind="doc", doc=a.opts["doc"], section=section)
    elif "tree" in a.opts:
        if len(others) + (node_opt is not None) > 1:
            return Fail("link to one target at a time", hint=usage(spec.tool))
        target = LinkTarget(kind="tree", tree=a.opts["tree"], node=node_opt or
                            (others[0] if others else None))
    elif node_opt is not None or others:
        if node_opt is not None and others:
            return Fail("link to one target at a time", hint=usage(spec.tool))
        target = LinkTarget(kind="node", node=node_opt or others[0])
    else:
        return Fail("link needs a target", hint=use(*spec.tool.forms))
    if section is not None and target.kind != "doc":
        return Fail("section: belongs to a doc:\"…\" target", hint=usage(spec.tool))
    note = a.opts.get("note")
    if a.strings:
        if note is not None or len(a.strings) > 1:
            return Fail("link takes one note", hint=use(spec.tool.syntax[1]))
        note = a.strings[0]
    return MakeLink(node=source, target=target, note=note)


def _build_read(a: VerbArgs, spec: Spec) -> Command | Fail:
    doc = a.opts.get("doc")
    if doc is None and len(a.strings) == 1:
        doc = a.strings.pop()
    if doc is None:
        if a.refs:
            return Fail("read works on documents; nodes are viewed",
                        hint=f"did you mean → view {a.refs[0]}?", candidates=("view",))
        if a.flags or a.opts:
            return Fail("read needs a document", hint=use(spec.tool.syntax[0]))
        return Read()  # → read alone: the documents there are
    if a.strings or a.refs:
        extra = a.strings[0] if a.strings else a.refs[0]
        return Fail(f"unexpected {show(extra)} for read", hint=usage(spec.tool))
    lines = None
    if "lines" in a.opts:
        m = RANGE.fullmatch(a.opts["lines"].strip())
        if m is None and INT.fullmatch(a.opts["lines"].strip()):
            lines = (int(a.opts["lines"]), int(a.opts["lines"]))
        elif m is None:
            return Fail(f'lines: expects start-end, got "{a.opts["lines"]}"',
                        hint=use(spec.tool.syntax[2]))
        else:
            lines = (int(m.group(1)), int(m.group(2)))
    return Read(doc=doc, summary="summary" in a.flags, lines=lines, section=a.opts.get("section"))


def _build_write(a: VerbArgs, spec: Spec) -> Command | Fail:
    doc = a.opts.get("doc")
    if doc is None:
        return Fail("write needs a document", hint=use(*spec.tool.syntax))
    modes: list[tuple[str, str | None, str | None]] = []
    if "at" in a.opts:
        modes.append(("at", a.opts["at"], None))
    if "replace" in a.opts:
        modes.append(("replace", None, a.opts["replace"]))
    elif "replace" in a.flags:
        if "section" not in a.opts:
            return Fail("replace needs a section", hint=use(spec.tool.syntax[2]))
        modes.append(("replace", None, a.opts["section"]))
    if "append" in a.flags:
        modes.append(("append", None, None))
    if len(modes) > 1:
        return Fail("choose one of append, at:, replace:", hint=use(*spec.tool.syntax))
    if not a.strings:
        return Fail("write needs the content in quotes", hint=use(*spec.tool.syntax))
    if len(a.strings) > 1 or a.refs:
        return Fail("write takes one quoted content", hint=use(*spec.tool.syntax))
    mode, at, section = modes[0] if modes else ("append", None, None)
    return Write(doc=doc, mode=mode, at=at, section=section, content=a.strings[0])  # type: ignore[arg-type]


def _build_pin(a: VerbArgs, spec: Spec) -> Command | Fail:
    node = target_node(a, spec)
    if isinstance(node, Fail):
        return node
    doc = a.opts.get("doc")
    if a.strings:
        return Fail("pin a node or a doc:\"name\"", hint=use(*spec.tool.syntax))
    if (node is None) == (doc is None):
        return Fail("pin one node or one document", hint=use(*spec.tool.syntax))
    section = a.opts.get("section")
    if section is not None and doc is None:
        return Fail("section: belongs to a document", hint=use(spec.tool.syntax[2]))
    return PinBlock(node=node, doc=doc, section=section)


def _build_stash(a: VerbArgs, spec: Spec) -> Command | Fail:
    strings = list(a.strings)
    label = a.opts.get("label")
    if label is None:
        if not strings:
            return Fail("stash needs a quoted label", hint=use(*spec.tool.syntax))
        label = strings.pop(0)
    content_of = ref_opt(a, "content-of", spec)
    if isinstance(content_of, Fail):
        return content_of
    summary_of = None
    if "summary-of" in a.opts:
        summary_of = _path_range(a.opts["summary-of"])
        if summary_of is None:
            got = a.opts["summary-of"]
            return Fail(f'summary-of: expects a range like r001-a7x2, got "{got}"',
                        hint=use(spec.tool.syntax[2]))
    sources = len(strings) + (content_of is not None) + (summary_of is not None)
    if sources == 0 and not a.refs:
        return Fail("stash needs something to keep: quoted content, content-of: or "
                    "summary-of:", hint=use(*spec.tool.syntax))
    if sources != 1 or a.refs:
        return Fail("stash one thing: quoted content, content-of: or summary-of:",
                    hint=use(*spec.tool.syntax))
    return StashBlock(label=label, content=strings[0] if strings else None,
                 content_of=content_of, summary_of=summary_of)


def _path_range(value: str) -> tuple[str, str] | None:
    v = value.strip()
    for k, ch in enumerate(v):
        if ch == "-":
            first, last = norm_ref(v[:k]), norm_ref(v[k + 1:])
            if first is not None and last is not None:
                return first, last
    return None


def _build_recall(toks: list[Tok], start: int) -> Command | Fail:
    """``recall "label"``; an unquoted label is the rest of the line, filler trimmed."""
    spec = SPECS["recall"]
    args = toks[start:]
    for key, value, quoted, _, _ in args:
        if quoted or (key is not None and spec.tool.option_words.get(key) == "label"):
            return Recall(label=value)
    words = [value for key, value, _, _, _ in args if key is None]
    while words and words[0].lower() in spec.filler:
        words.pop(0)
    while words and words[-1].lower() in spec.filler:
        words.pop()
    if not words:
        return Fail("recall needs a stash label", hint=use(*spec.tool.syntax))
    return Recall(label=" ".join(words))


def _build_drop(a: VerbArgs, spec: Spec) -> Command | Fail:
    if "lines" in a.opts:
        return Fail("drop takes a pin or a stash; context lines are pruned automatically",
                    hint=use(*spec.tool.syntax))
    pins: list[str] = []
    if "pin" in a.opts:
        ref = norm_ref(a.opts["pin"])
        pins.append(ref if ref is not None else a.opts["pin"])
    if "doc" in a.opts:
        pins.append(doc_ref_text(a.opts["doc"], a.opts.get("section")))
    fail = limit_refs(a, spec, 1)
    if fail is not None:
        return fail
    pins += a.refs
    stashes = [a.opts["stash"]] if "stash" in a.opts else []
    stashes += a.strings
    if len(pins) > 1 or len(stashes) > 1:
        return Fail("drop one pin and/or one stash per line", hint=use(*spec.tool.syntax))
    if not pins and not stashes:
        return Fail("drop needs a pin or a stash", hint=use(*spec.tool.syntax))
    return Drop(pin=pins[0] if pins else None, stash=stashes[0] if stashes else None)


def _build_memory(a: VerbArgs, spec: Spec) -> Command | Fail:
    fail = limit_refs(a, spec, 0)
    if fail is not None:
        return fail
    what = one(a.flags, "of trace, stashed, errors", spec)
    if isinstance(what, Fail):
        return what
    return Memory(what=what or "state")  # type: ignore[arg-type]


_BUILDERS: dict[str, Callable[[VerbArgs, Spec], Command | Fail]] = {
    **READER_BUILDERS,
    **EXPLORE_BUILDERS,
    **SCORE_BUILDERS,
    **FILL_BUILDERS,
    "view": _build_view, "list": _build_list, "tree": _build_tree, "switch": _build_switch,
    "continue": _build_continue, "split": _build_split, "respond": _build_respond,
    "annotate": _build_annotate,
    "link": _build_link, "edit": _build_edit, "read": _build_read, "write": _build_write,
    "pin": _build_pin, "stash": _build_stash, "drop": _build_drop,
    "memory": _build_memory,
}


def _build_help(toks: list[Tok], start: int) -> Command | Fail:
    spec = SPECS["help"]
    words = [t[1].lower() for t in toks[start:] if t[1].lower() not in spec.filler]
    if not words:
        return Help()
    if len(words) > 1 and tuple(words[:2]) in PHRASES:
        return Help(tool=PHRASES[tuple(words[:2])])
    word = words[0]
    if word in HELP_ALL:
        return Help()
    tool = PHRASES.get((word,))
    if tool is None:
        tool, near, _ = fuzzy(word, VERB_CHOICES)
        if tool is None:
            hint = f"did you mean → help {near[0]}?" if near else TOOL_GROUPS
            return Fail(f"no tool called {show(word)}", hint=hint, candidates=near,
                        unsure=True)
    return Help(tool=tool)


def think_content(rest: str) -> str:
    """One-line ``think text`` or the block ``think\\n…\\n←`` (closing line optional)."""
    if "\n" not in rest:
        return rest.strip()
    lines = rest.split("\n")
    first = lines.pop(0)
    if lines and lines[-1].strip() in CLOSERS:
        lines.pop()
    if first.strip():
        lines.insert(0, first.strip())
    return "\n".join(lines)


def build(verb: str, toks: list[Tok], start: int, body: str) -> Command | Fail:
    """``verb``'s command from the tokens from ``start`` on (``body`` is the whole text)."""
    if verb == "help":
        return _build_help(toks, start)
    if verb == "recall":
        return _build_recall(toks, start)
    if verb == "think":
        return Think(content=think_content(body[toks[start - 1][4]:] if start else body))
    spec = SPECS[verb]
    rest = body[toks[start][3]:] if start < len(toks) else ""
    args = scan(toks, start, spec, rest)
    if isinstance(args, Fail):
        return args
    if args.unknown and verb not in CONTENT_VERBS and verb not in FREE_WORDS:
        return Fail(f'unexpected "{args.unknown[0]}" for {verb}',
                    hint=usage(spec.tool), unsure=True)
    return _BUILDERS[verb](args, spec)
