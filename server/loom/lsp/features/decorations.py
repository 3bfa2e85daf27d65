"""Code lenses, semantic tokens (authorship: model text, and the words a human changed in
it), inlay hints and the folds of a tree overview (as offsets, and as the LSP answers built
from them)."""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Callable, Generator
from dataclasses import dataclass
from typing import Any, TypeVar

from lsprotocol import types as lsp

from loom.lsp.buffer import BufferSession
from loom.lsp.documents import OpenDoc, OpenDocuments, copy_segments
from loom.lsp.features import blind
from loom.lsp.features.refs import DOCREF, FLAG, QUOTED, VERB, is_command_line, refs_in_line
from loom.lsp.legend import TOKEN_TYPES
from loom.lsp.positions import TextDoc, units
from loom.lsp.ranges import offset_of, range_of
from loom.lsp.views import render as render_view
from loom.model import worddiff
from loom.render.text import plural

T = {name: i for i, name in enumerate(TOKEN_TYPES)}
NODE_START, EDITED = 1, 2
MAX_SIBLING_LENSES = 3
R = TypeVar("R")  # what a per-path cache holds
# uri → ((change-log position, node ids), sibling positions): lenses are asked for often
_POSITIONS: dict[str, tuple[tuple[int, tuple[str, ...]], dict[str, tuple[int, int]]]] = {}
_MODELS: dict[str, tuple[tuple[int, tuple[str, ...]], dict[str, str]]] = {}  # the same, models


@dataclass
class Lens:
    offset: int
    title: str
    command: str
    args: dict


def lenses(docs: OpenDocuments, doc: OpenDoc, default_n: int, every: bool = False) -> list[Lens]:
    out: list[Lens] = []
    session = doc.session
    text_doc = session.doc
    if doc.kind == "path" and doc.tree is not None:
        starts: dict[int, int] = {}  # line → node segments starting on it
        for seg in session.segments:
            if seg.node is not None:
                line, _ = text_doc.position_at(seg.start)
                starts[line] = starts.get(line, 0) + 1
        tip = doc.view.tip.id if doc.view.tip is not None else None
        positions = positions_for(docs, doc)
        out += _empty_path_lenses(docs, doc)
        # A line holding many node starts (prose paragraphs) gets a sibling lens for the
        # last with alternatives (the last few with ``markers: "all"``): lenses stacked above
        # a paragraph's first line cannot say where in it they belong; the boundary's own
        # marker can, and the rest are a keystroke away (cycle at the cursor).
        keep = MAX_SIBLING_LENSES if every else 1
        per_line: dict[int, list[str]] = {}
        for seg in session.segments:
            if seg.node and positions.get(seg.node, (1, 1))[1] > 1:
                per_line.setdefault(text_doc.position_at(seg.start)[0], []).append(seg.node)
        shown = {nid for nids in per_line.values() for nid in nids[-keep:]}
        for seg in session.segments:
            if seg.node is None or seg.node not in positions:
                continue
            line, _ = text_doc.position_at(seg.start)
            k, n = positions[seg.node]
            args = {"uri": doc.uri, "node": seg.node}
            shared = starts[line] > 1  # several nodes start on this line: name them
            if n > 1 and seg.node in shown:
                title = f"◀ {k}/{n} ▶" + (f" [{seg.label}]" if shared else "")
                out.append(Lens(seg.start, title, "loom.cycleSibling", {**args, "delta": 1}))
            # One row of lenses per paragraph must fit: the node actions sit at the end of
            # the path only (elsewhere they are commands at the cursor, and the boundary's
            # inlay hint shows ◀ k/n ▶ where it belongs).
            if seg.node == tip:
                suffix = f" [{seg.label}]" if shared else ""
                out.append(Lens(seg.start, "Branch" + suffix, "loom.branch", args))
                out.append(Lens(seg.start, "Annotate" + suffix, "loom.annotate", args))
        end = session.committed_end
        out.append(Lens(end, f"Continue ×{default_n}", "loom.continue",
                        {"uri": doc.uri, "n": default_n}))
        last = next((seg for seg in reversed(session.segments) if seg.node), None)
        if last is not None:
            out.append(Lens(last.start, "Ask the collaborator", "loom.askCollaborator",
                            {"uri": doc.uri}))
    for line_no in range(text_doc.line_count):
        line = text_doc.line(line_no)
        if is_command_line(line):
            out.append(Lens(text_doc.line_start(line_no), "▶ Run", "loom.run",
                            {"uri": doc.uri, "line": line_no}))
    return out


def _empty_path_lenses(docs: OpenDocuments, doc: OpenDoc) -> list[Lens]:
    """Never an empty path without saying why: a lens at the top when the document has no
    text, or when the node it was opened at has none."""
    session = doc.session
    if session.committed_end > 0 and doc.text.strip():
        anchor = _anchor_segment(doc)
        if anchor is None or anchor.end > anchor.start:
            return []
        kids = docs.ws.count_children(anchor.node or "")
        return [Lens(0, f"[{anchor.label}], where this was opened, has no text: "
                        f"showing the path below it ({plural(kids, 'continuation')})",
                     "loom.siblings", {"uri": doc.uri, "node": anchor.node})]
    if doc.view.tip is not None and docs.ws.count_children(doc.view.tip.id):
        return [Lens(0, "This path has no text yet; its continuations do: Siblings…",
                     "loom.siblings", {"uri": doc.uri, "node": doc.view.tip.id})]
    return [Lens(0, "This tree has no text yet: type to write its first node",
                 "loom.commit", {"uri": doc.uri})]


def _anchor_segment(doc: OpenDoc):  # type: ignore[no-untyped-def]
    """The segment of the node named in the document's URI, if it is on the path."""
    from loom.lsp.views import parse_uri

    ref = parse_uri(doc.uri).node or ""
    for seg in doc.session.segments:
        if seg.node and (seg.label == ref or (len(ref) >= 3 and seg.label.startswith(ref))):
            return seg
    return None


def sibling_positions(ws, node_ids: list[str]) -> dict[str, tuple[int, int]]:  # type: ignore[no-untyped-def]
    """(k, n) for many nodes: each node's place among its parent's continuations; a
    buffer-mode version stands in its original's place."""
    info = ws.node_family_rows(node_ids)
    parents = sorted({p for p, _v, k in info.values() if p and k != "annotation"})
    index = {parent: {child: i for i, child in enumerate(children)}
             for parent, children in ws.continuation_ids(parents).items()}
    out: dict[str, tuple[int, int]] = {}
    for nid, (parent, version_of, kind) in info.items():
        places = index.get(parent or "", {}) if kind != "annotation" else {}
        k = places.get(nid, places.get(version_of or "", 0))
        out[nid] = (k + 1, max(1, len(places)))
    return out


def sibling_models(ws, node_ids: list[str]) -> dict[str, str]:  # type: ignore[no-untyped-def]
    """Each node's model where its siblings come from more than one model (``models:``
    asked several), so the marker can say which wrote it; nothing for the rest."""
    info = ws.node_family_rows(node_ids)
    parents = sorted({p for p, _v, k in info.values() if p and k != "annotation"})
    families = ws.continuation_ids(parents)
    made = {g.node: g.model for g in
            ws.generations([c for children in families.values() for c in children])}
    out: dict[str, str] = {}
    for nid, (parent, version_of, _kind) in info.items():
        children = families.get(parent or "", [])
        if len({made[c] for c in children if c in made}) > 1:
            model = made.get(nid) or made.get(version_of or "")
            if model:
                out[nid] = model
    return out


@functools.lru_cache(maxsize=4096)
def _human_spans(original: str, edited: str) -> tuple[tuple[int, int], ...]:
    """Character ranges of ``edited`` that a human inserted or changed (whole words)."""
    return worddiff.changed(original, edited)


def _version_originals(docs: OpenDocuments, ids: list[str]) -> dict[str, str]:
    """For version nodes whose original was model-written: node id → the original's text."""
    return docs.cache.model_originals(ids)


Spans = list[tuple[int, int, int, int]]  # (start, end, type, modifiers), in order


def semantic_tokens(docs: OpenDocuments, doc: OpenDoc) -> list[int]:
    """LSP's relative encoding: [deltaLine, deltaStart, length, type, modifiers]*."""
    return _drain(_token_steps(docs, doc))


async def semantic_tokens_async(docs: OpenDocuments, doc: OpenDoc) -> list[int]:
    """:func:`semantic_tokens` of a snapshot of the document, computed in slices that give
    the event loop back every ~``SLICE`` segments or spans: a long buffer's tokens (tens of
    milliseconds) never hold a hover or a keystroke behind them. A change that arrives
    meanwhile goes into the live document; the client asks again after it."""
    frozen = OpenDoc(doc.uri, doc.view, BufferSession(
        doc.text, copy_segments(doc.session.segments), doc.session.doc.encoding))
    steps = _token_steps(docs, frozen)
    while True:
        try:
            next(steps)
        except StopIteration as done:
            return done.value  # type: ignore[no-any-return]
        await asyncio.sleep(0)


SLICE = 200  # segments or spans between two turns of the event loop (well under 1 ms)
Steps = Generator[None, None, Any]


def _drain(steps: Steps) -> Any:
    while True:
        try:
            next(steps)
        except StopIteration as done:
            return done.value


def _token_steps(docs: OpenDocuments, doc: OpenDoc) -> Steps:
    spans = yield from _authorship_steps(docs, doc)
    command_spans = _command_spans(doc.session.doc)
    if command_spans:
        spans = _overlay(spans, command_spans)
    yield
    return (yield from _encode_steps(doc.session.doc, spans))


def authorship_spans(docs: OpenDocuments, doc: OpenDoc) -> Spans:
    """Model text and human text at character level (a path's segments)."""
    return _drain(_authorship_steps(docs, doc))  # type: ignore[no-any-return]


def _authorship_steps(docs: OpenDocuments, doc: OpenDoc) -> Steps:
    spans: Spans = []
    if doc.kind == "path":
        originals = _version_originals(docs, [s.node for s in doc.session.segments
                                              if s.node and not s.by_model])
        # → fill's versions of human text: the model wrote only their span
        filled = docs.cache.filled_spans([s.node for s in doc.session.segments
                                          if s.node and s.by_model and not s.dirty])
        for i, seg in enumerate(doc.session.segments):
            if i % SLICE == SLICE - 1:
                yield
            if seg.node is None or seg.end <= seg.start:
                if seg.node is None and seg.end > seg.start:
                    spans.append((seg.start, seg.end, T["loomNodeRef"], 0))
                continue
            base = T["loomModel"] if seg.by_model else T["loomHuman"]
            text = doc.text[seg.start:seg.end]
            human: tuple[tuple[int, int], ...] = ()
            reference: str | None = None
            edited = EDITED  # human text inside model text: a human's edit of it
            if seg.by_model and seg.dirty:
                reference = seg.original
            elif seg.node in originals:  # a human's version of model text
                base, reference = T["loomModel"], originals[seg.node]
            elif seg.node in filled:  # the model's span in the original's human text
                m0, m1 = filled[seg.node]
                m1 = min(m1, len(text))
                human = tuple(r for r in ((0, m0), (m1, len(text))) if r[1] > r[0])
                edited = 0  # the original's own text, not an edit
            if reference is not None:
                human = _human_spans(reference, text)
            pos, mod = seg.start, NODE_START
            for h0, h1 in human:
                if seg.start + h0 > pos:
                    spans.append((pos, seg.start + h0, base, mod))
                    mod = 0
                spans.append((seg.start + h0, seg.start + h1, T["loomHuman"], mod | edited))
                mod = 0
                pos = seg.start + h1
            if pos < seg.end:
                spans.append((pos, seg.end, base, mod))
    return spans


def encode_spans(text_doc: TextDoc, spans: Spans) -> list[int]:
    """Command lines laid over ``spans``, all of it encoded."""
    command_spans = _command_spans(text_doc)
    if command_spans:
        spans = _overlay(spans, command_spans)
    return _encode(text_doc, spans)


def _command_spans(text_doc: TextDoc) -> list[tuple[int, int, int, int]]:
    out = []
    for line_no in range(text_doc.line_count):
        line = text_doc.line(line_no)
        if not is_command_line(line):
            continue
        base = text_doc.line_start(line_no)
        parts: list[tuple[int, int, int]] = []
        m = VERB.match(line)
        if m:
            parts.append((m.start(2), m.end(2), T["loomArrow"]))
            parts.append((m.start(4), m.end(4), T["loomVerb"]))
        for q in QUOTED.finditer(line):
            parts.append((q.start(), q.end(), T["loomString"]))
        for d in DOCREF.finditer(line):
            parts.append((d.start(), d.end(), T["loomDocRef"]))
        for f in FLAG.finditer(line):
            parts.append((f.start(), f.start() + len(f.group(1)) + 1, T["loomFlag"]))
        for r in refs_in_line(line):
            parts.append((r.start, r.end, T["loomNodeRef"]))
        parts.sort()
        last = 0
        for s, e, t in parts:
            if s < last:
                continue
            out.append((base + s, base + e, t, 0))
            last = e
    return out


def _overlay(spans: list[tuple[int, int, int, int]],
             top: list[tuple[int, int, int, int]]) -> list[tuple[int, int, int, int]]:
    """Command-line tokens replace the authorship tokens under them."""
    out: list[tuple[int, int, int, int]] = []
    ti = 0
    for s, e, t, m in spans:
        pos = s
        while ti < len(top) and top[ti][1] <= pos:
            ti += 1
        j = ti
        while pos < e:
            if j < len(top) and top[j][0] < e:
                ts, te = top[j][0], top[j][1]
                if ts > pos:
                    out.append((pos, ts, t, m))
                pos = max(pos, te)
                j += 1
            else:
                out.append((pos, e, t, m))
                break
    out.extend(top)
    out.sort()
    return out


def _encode(text_doc: TextDoc, spans: list[tuple[int, int, int, int]]) -> list[int]:
    """Encode sorted spans, walking the text once: positions advance by the units of the
    text between consecutive offsets, so a long single-line buffer costs O(n) in all."""
    return _drain(_encode_steps(text_doc, spans))  # type: ignore[no-any-return]


def _encode_steps(text_doc: TextDoc, spans: list[tuple[int, int, int, int]]) -> Steps:
    data: list[int] = []
    text = text_doc.text
    enc = text_doc.encoding
    cur, line, col = 0, 0, 0  # a cursor: offset and its (line, units) position
    prev_line = prev_char = 0

    def advance(to: int) -> None:
        nonlocal cur, line, col
        if to <= cur:
            return
        piece = text[cur:to]
        nl = piece.rfind("\n")
        if nl == -1:
            col += units(piece, enc)
        else:
            line += piece.count("\n")
            col = units(piece[nl + 1:], enc)
        cur = to

    for i, (start, end, typ, mod) in enumerate(spans):
        if i % SLICE == SLICE - 1:
            yield
        pos = max(start, cur)
        while pos < end:
            advance(pos)
            nl = text.find("\n", pos, end)
            piece_end = end if nl == -1 else nl
            if piece_end > pos:
                length = units(text[pos:piece_end], enc)
                if length > 0:
                    delta_line = line - prev_line
                    delta_char = col - prev_char if delta_line == 0 else col
                    data += [delta_line, delta_char, length, typ, mod]
                    prev_line, prev_char = line, col
            mod &= ~NODE_START
            pos = piece_end + 1 if nl != -1 else end
    return data


#: The node-boundary mark in the editor. The seeds' ``︱`` (U+FE31) stays in text rendered
#: for models; common editor fonts draw it as a box, so editors get the broken bar.
EDITOR_BOUNDARY = "¦"


@dataclass
class Hint:
    """What sits at a node boundary: ``¦›a7x2 ◀ 2/3 ▶``."""

    offset: int
    node: str  # node id
    label: str  # the node's label (a7x2, a7x2')
    by_model: bool
    empty: bool
    k: int = 1  # its place among its siblings, 1-based
    n: int = 1
    model: str = ""  # set where its siblings come from several models

    @property
    def mark(self) -> str:
        made_by = f" {self.model}" if self.model else ""
        return f"{EDITOR_BOUNDARY}{'›' if self.by_model else ''}{self.label}{made_by}"

    @property
    def siblings(self) -> str:
        return f"◀ {self.k}/{self.n} ▶" if self.n > 1 else ""

    @property
    def text(self) -> str:
        parts = [self.mark]
        if self.empty:
            parts.append("(no text)")
        if self.siblings:
            parts.append(self.siblings)
        return " ".join(parts)


def hints(doc: OpenDoc, start: int, end: int,
          positions: dict[str, tuple[int, int]] | None = None, every: bool = False,
          models: dict[str, str] | None = None) -> list[Hint]:
    """A hint at node boundaries inside [start, end]: the node's id (``›`` for model
    text) and its model where its siblings come from several, ``◀ k/n ▶`` where it has
    siblings, ``(no text)`` for a node with none. Only
    where there is a choice or nothing to read, unless ``every`` (the ``markers: "all"``
    setting): then at each boundary but the very first node's."""
    out: list[Hint] = []
    if doc.kind != "path":
        return out
    positions, models = positions or {}, models or {}
    for i, seg in enumerate(doc.session.segments):
        if seg.node is None or not start <= seg.start <= end:
            continue
        k, n = positions.get(seg.node, (1, 1))
        empty = seg.end <= seg.start
        if not empty and n <= 1 and (not every or (i == 0 and seg.start == 0)):
            continue
        out.append(Hint(seg.start, seg.node, seg.label, seg.by_model, empty, k, n,
                        models.get(seg.node, "")))
    return out


def inlay_hints(doc: OpenDoc, start: int, end: int,
                positions: dict[str, tuple[int, int]] | None = None, every: bool = False
                ) -> list[tuple[int, str, str]]:
    """``¦a7x2 ◀ 2/3 ▶`` at node boundaries inside [start, end) (see ``hints``):
    (offset, label, tooltip)."""
    out = []
    dirty = {s.node for s in doc.session.segments if s.dirty}
    for h in hints(doc, start, end, positions, every):
        pending = " (edited)" if h.node in dirty else ""
        out.append((h.offset, h.text,
                    f"[{h.label}] {'model' if h.by_model else 'human'}{pending}"))
    return out


def positions_for(docs: OpenDocuments, doc: OpenDoc) -> dict[str, tuple[int, int]]:
    """(k, n) of every node on the document's path, cached until the tree changes."""
    return _per_path(_POSITIONS, docs, doc, sibling_positions)


def models_for(docs: OpenDocuments, doc: OpenDoc) -> dict[str, str]:
    """The model of every node on the document's path whose siblings come from several
    (``sibling_models``), cached like ``positions_for``."""
    made = _per_path(_MODELS, docs, doc, sibling_models)
    # a blind tree names them only once the writer has chosen among the siblings
    return blind.visible_models(docs.ws, docs.participant, doc.tree, made)


def _per_path(cache: dict[str, Any], docs: OpenDocuments, doc: OpenDoc,
              compute: Callable[[Any, list[str]], R]) -> R:
    """``compute(ws, ids of the nodes on the path)``, cached per document until the tree
    changes or the path does (lenses and hints are asked for often)."""
    ids = tuple(seg.node for seg in doc.session.segments if seg.node)
    key = (docs.ws.last_change(), ids)
    cached = cache.get(doc.uri)
    if cached is None or cached[0] != key:
        cached = cache[doc.uri] = (key, compute(docs.ws, list(ids)))
    return cached[1]  # type: ignore[no-any-return]



# ── as LSP answers ──


def lsp_lenses(docs: OpenDocuments, doc: OpenDoc, default_n: int, every: bool = False
               ) -> list[lsp.CodeLens]:
    """``textDocument/codeLens``: ``lenses`` as commands."""
    return [lsp.CodeLens(range=range_of(doc.session.doc, lens.offset, lens.offset),
                         command=lsp.Command(title=lens.title, command=lens.command,
                                             arguments=[lens.args]))
            for lens in lenses(docs, doc, default_n, every)]


def lsp_inlay_hints(docs: OpenDocuments, doc: OpenDoc, rng: lsp.Range, every: bool = False
                    ) -> list[lsp.InlayHint]:
    """``textDocument/inlayHint``: ``hints`` in ``rng``; where a node has siblings, ◀ and
    ▶ cycle them and k/n opens the picker beside each other."""
    text_doc = doc.session.doc
    positions = positions_for(docs, doc)
    dirty = {s.node for s in doc.session.segments if s.dirty}
    out = []
    for h in hints(doc, offset_of(doc, rng.start), offset_of(doc, rng.end), positions,
                   every, models_for(docs, doc)):
        tip = (f"[{h.label}] {h.model or 'model' if h.by_model else 'human'}"
               f"{' (edited)' if h.node in dirty else ''}")
        label: str | list[lsp.InlayHintLabelPart] = h.text
        if h.n > 1:
            args = {"uri": doc.uri, "node": h.node}
            label = [
                lsp.InlayHintLabelPart(value=h.mark + (" (no text)" if h.empty else ""),
                                       tooltip=tip),
                lsp.InlayHintLabelPart(value=" ◀", tooltip="previous sibling",
                                       command=lsp.Command(title="previous sibling",
                                                           command="loom.cycleSibling",
                                                           arguments=[{**args, "delta": -1}])),
                lsp.InlayHintLabelPart(value=f" {h.k}/{h.n} ", tooltip="all siblings, side by side",
                                       command=lsp.Command(title="siblings",
                                                           command="loom.siblings",
                                                           arguments=[args])),
                lsp.InlayHintLabelPart(value="▶", tooltip="next sibling",
                                       command=lsp.Command(title="next sibling",
                                                           command="loom.cycleSibling",
                                                           arguments=[{**args, "delta": 1}])),
            ]
        out.append(lsp.InlayHint(position=lsp.Position(*text_doc.position_at(h.offset)),
                                 label=label, kind=lsp.InlayHintKind.Type, tooltip=tip,
                                 padding_right=True))
    return out


def lsp_folds(docs: OpenDocuments, doc: OpenDoc) -> list[lsp.FoldingRange]:
    """``textDocument/foldingRange``: every branch of a tree overview folds."""
    if doc.kind != "tree":
        return []
    folds = render_view(docs.ws, doc.uri, docs.participant).folds
    return [lsp.FoldingRange(start_line=a, end_line=b, kind=lsp.FoldingRangeKind.Region)
            for a, b in folds]
