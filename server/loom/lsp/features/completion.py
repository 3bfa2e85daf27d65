"""Arrow-command completion: the grammar says what slot the cursor is in (``slot_at``),
and the items come from the lexicon and the catalogue (verbs, flags, options, value hints)
or from the store (node ids, documents, trees, stash labels)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from lsprotocol import types as lsp
from rapidfuzz import fuzz, process

from loom.commands import lexicon
from loom.commands.canonical import quote
from loom.commands.catalogue import TOOLS_BY_NAME
from loom.commands.grammar import Slot, SlotKind, slot_at
from loom.lsp.documents import OpenDoc, OpenDocuments
from loom.lsp.ranges import range_of
from loom.memory import operational as mem
from loom.store.schema import Node, Tree

MAX_ITEMS = 50


@dataclass
class Item:
    label: str
    kind: str  # keyword | reference | value | file | text | module
    detail: str = ""
    insert: str | None = None
    replace_start: int = 0  # offsets within the line the item replaces
    replace_end: int = 0
    sort: str = ""
    documentation: str = ""


def complete(docs: OpenDocuments, doc: OpenDoc | None, tree: Tree | None, line: str,
             col: int) -> list[Item]:
    """Items for offset ``col`` of ``line``; none outside arrow-command lines."""
    if not lexicon.is_command_line(line):
        return []
    slot = slot_at(line, col)
    if slot is None:
        return []
    items: list[Item] = []
    for kind in _ORDER:  # words of the language before node ids, which can be many
        if kind in slot.kinds:
            items += _PROVIDERS[kind](docs, tree, slot)
    for it in items:
        it.replace_start, it.replace_end = slot.start, slot.end
    return items[:MAX_ITEMS]


_KINDS = {"keyword": lsp.CompletionItemKind.Keyword,
          "reference": lsp.CompletionItemKind.Reference,
          "value": lsp.CompletionItemKind.Value, "file": lsp.CompletionItemKind.File,
          "module": lsp.CompletionItemKind.Module, "text": lsp.CompletionItemKind.Text}


def completion_list(docs: OpenDocuments, doc: OpenDoc, tree: Tree | None,
                    position: lsp.Position) -> lsp.CompletionList:
    """``textDocument/completion``: the items at ``position``, each replacing what is
    typed of its word (incomplete: typing on asks again)."""
    text_doc = doc.session.doc
    line_no = position.line
    line = text_doc.line(line_no)
    base = text_doc.line_start(line_no)
    col = text_doc.offset_at(line_no, position.character) - base
    out = []
    for it in complete(docs, doc, tree, line, col):
        edit = lsp.TextEdit(range=range_of(text_doc, base + it.replace_start,
                                       base + it.replace_end),
                            new_text=it.insert or it.label)
        out.append(lsp.CompletionItem(
            label=it.label, kind=_KINDS.get(it.kind), detail=it.detail or None,
            documentation=it.documentation or None, text_edit=edit,
            filter_text=(line[it.replace_start:it.replace_end] + it.label
                         if it.kind == "keyword" and it.insert and it.insert.startswith("→")
                         else None),
            sort_text=it.sort or None))
    return lsp.CompletionList(is_incomplete=True, items=out)


def _matches(typed: str, name: str) -> bool:
    return not typed or name.startswith(typed) or fuzz.partial_ratio(typed, name) >= 80


def _verbs(docs: OpenDocuments, tree: Tree | None, slot: Slot) -> list[Item]:
    typed = slot.typed.lower()
    # Right after the arrow the item replaces it too, so `->` becomes `→`.
    lead = f"{lexicon.CANONICAL_ARROW} " if slot.with_arrow else ""
    items = []
    for name in lexicon.VERB_NAMES:
        tool = TOOLS_BY_NAME[name]
        named = typed and any(s.startswith(typed) for s in tool.synonyms)
        if not named and not _matches(typed, name):
            continue
        items.append(Item(label=name, kind="keyword", detail=tool.description,
                          insert=f"{lead}{name} ",
                          sort=("0" if name.startswith(typed) else "1") + name,
                          documentation="\n".join(tool.syntax)))
    return items


def _tools(docs: OpenDocuments, tree: Tree | None, slot: Slot) -> list[Item]:
    typed = slot.typed.lower()
    return [Item(label=name, kind="keyword", detail=lexicon.describe_verb(name), insert=name,
                 sort="1" + name)
            for name in lexicon.VERB_NAMES if name.startswith(typed)]


def _flags(docs: OpenDocuments, tree: Tree | None, slot: Slot) -> list[Item]:
    typed = slot.typed.lower()
    return [Item(label=f.name, kind="keyword", detail=f.description, insert=f.name,
                 sort="1" + f.name)
            for f in lexicon.flags(slot.verb or "") if f.name.startswith(typed)]


def _options(docs: OpenDocuments, tree: Tree | None, slot: Slot) -> list[Item]:
    typed = slot.typed.lower()
    return [Item(label=f"{o.name}:", kind="keyword", detail=o.description,
                 insert=f"{o.name}:", sort="1" + o.name)
            for o in lexicon.options(slot.verb or "") if o.name.startswith(typed)]


def _values(docs: OpenDocuments, tree: Tree | None, slot: Slot) -> list[Item]:
    hints = lexicon.value_hints(slot.verb or "", slot.key or "")
    return [Item(label=slot.head + v, kind="value", insert=slot.head + v, sort="1" + v)
            for v in hints if v.startswith(slot.typed.lower())]


def _named(kind: str, item_kind: str) -> Callable[[OpenDocuments, Tree | None, Slot], list[Item]]:
    def provide(docs: OpenDocuments, tree: Tree | None, slot: Slot) -> list[Item]:
        return [Item(label=slot.head + quote(name), kind=item_kind,
                     insert=slot.head + quote(name))
                for name in _fuzzy(slot.typed, _names(docs, kind, tree))]
    return provide


def _node_refs(docs: OpenDocuments, tree: Tree | None, slot: Slot) -> list[Item]:
    items = _nodes(docs, tree, slot.typed)
    for it in items:
        ref = f"[{it.label}]" if slot.quote == "[" else it.label
        it.label = it.insert = slot.head + ref
    return items


def _models(docs: OpenDocuments, tree: Tree | None, slot: Slot) -> list[Item]:
    """The model profiles ``model:`` may name; after ``models:a,`` the next one."""
    from loom.llm.subject import known_models

    cut = slot.typed.rfind(",") + 1
    head, typed = slot.head + slot.typed[:cut], slot.typed[cut:].lower()
    named = {m.strip() for m in slot.typed[:cut].split(",")}
    return [Item(label=head + c.name, kind="value", insert=head + c.name,
                 detail=c.description + (" (default)" if c.default else "")
                 + ("" if c.ready else " (no API key)"), sort=f"1{i:03d}")
            for i, c in enumerate(known_models())
            if c.name.startswith(typed) and c.name not in named]


def _presets(docs: OpenDocuments, tree: Tree | None, slot: Slot) -> list[Item]:
    """The sampler presets ``preset:`` may name (config.toml's ``[presets.NAME]``)."""
    from loom.llm.subject import known_presets

    typed = slot.typed.lower()
    return [Item(label=slot.head + p.name, kind="value", insert=slot.head + p.name,
                 detail=p.description, sort=f"1{i:03d}")
            for i, p in enumerate(known_presets()) if p.name.lower().startswith(typed)]


def _nothing(docs: OpenDocuments, tree: Tree | None, slot: Slot) -> list[Item]:
    return []  # free text and section ids: nothing to offer


_PROVIDERS: dict[SlotKind, Callable[[OpenDocuments, Tree | None, Slot], list[Item]]] = {
    "verb": _verbs, "tool": _tools, "flag": _flags, "option": _options, "value": _values,
    "doc": _named("doc", "file"), "tree": _named("tree", "module"),
    "stash": _named("stash", "text"), "node": _node_refs, "section": _nothing,
    "text": _nothing, "model": _models, "preset": _presets,
}
_ORDER: tuple[SlotKind, ...] = tuple(_PROVIDERS)


def _names(docs: OpenDocuments, kind: str, tree: Tree | None) -> list[str]:
    if kind == "doc":
        return [d.name for d in docs.ws.documents()]
    if kind == "tree":
        return [t.title for t, _ in docs.ws.trees()]
    return [s.label for s in mem.stashes(docs.ws, docs.participant, tree)]  # this tree's


def _fuzzy(typed: str, names: list[str]) -> list[str]:
    if not typed:
        return names[:MAX_ITEMS]
    scored = process.extract(typed, names, scorer=fuzz.WRatio, limit=MAX_ITEMS,
                              score_cutoff=50)
    return [name for name, _score, _ in scored]


def _nodes(docs: OpenDocuments, tree: Tree | None, typed: str) -> list[Item]:
    """localIds: a prefix match through the index, else the nodes near the position,
    matched fuzzily on id, author and summary. Where a node may stand they come first,
    before the flags (``→ view `` in Neovim showed flags and hid the ids below them)."""
    if tree is None:
        return []
    typed = typed.lower()
    rows: list[Node] = []
    if typed:
        rows = docs.ws.nodes_by_prefix(tree, typed, MAX_ITEMS)
    if len(rows) < 10:
        node, tip = docs.ws.position(docs.participant, tree)
        near = docs.ws.path(tip, prefer=(node.id,), limit=40)  # never the whole path
        near += docs.ws.children(node)[:20]
        seen = {n.id for n in rows}
        pool = [n for n in near if n.id not in seen]
        if typed:
            keys = [f"{n.local_id} {n.summary or ''}" for n in pool]
            hits = process.extract(typed, keys, scorer=fuzz.partial_ratio, limit=20,
                                   score_cutoff=70)
            rows += [pool[i] for _, _, i in hits]
        else:
            rows += list(reversed(pool))
    names: dict[str, str] = {}
    items = []
    for i, n in enumerate(rows[:MAX_ITEMS]):
        if n.author_id not in names:
            names[n.author_id] = docs.ws.participant_name(n.author_id)
        summary = (n.summary or n.content or "").strip().replace("\n", " ")[:80]
        items.append(Item(label=n.local_id, kind="reference",
                          detail=f"{names[n.author_id]} · {summary}", insert=n.local_id,
                          sort=f"0{i:03d}", documentation=n.content[:500]))
    return items
