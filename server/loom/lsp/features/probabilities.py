"""What the model almost wrote: token probabilities in the editor.

- **Colour**: with the probability view on (``loom.toggleProbabilities``, off by default),
  model text carries one of five semantic-token modifiers, confident to surprising
  (``model.tokens.BUCKET_NAMES``), on top of the authorship colours; so does a writer's
  text once a model has scored it (``→ score``, ``features/scoring.py``).
- **Hover** on a model token, or a scored one: the token, its probability and the
  alternatives as a table, above the node's card; a model node without token data says
  why.
- **Code actions** on a model token: "Continue from here with ‘X’" for each alternative,
  and "Split here". ``loom.split`` runs them: the buffer is committed, the node is split
  at the token through the executor (``→ split a7x2 at:57 alt:"X"``), the buffer switches
  to the new branch, and the subject model continues from the alternative.
"""

from __future__ import annotations

import bisect
import collections
from dataclasses import dataclass
from typing import Any

from lsprotocol import types as lsp

from loom.commands import syntax
from loom.commands.results import Result
from loom.lsp.documents import OpenDoc, OpenDocuments
from loom.lsp.features import decorations, lookup
from loom.lsp.features.decorations import NODE_START, Spans
from loom.lsp.features.decorations import T as TYPES
from loom.lsp.features.editing import Editing
from loom.lsp.features.generation import Generating
from loom.lsp.host import Host
from loom.lsp.legend import TOKEN_MODIFIERS
from loom.lsp.positions import TextDoc
from loom.lsp.ranges import offset_of, range_of
from loom.model import permissions as perms
from loom.model import tokens as T
from loom.store import node_tokens as token_store

#: The modifier bit of each probability bucket.
BUCKET_BITS: tuple[int, ...] = tuple(1 << TOKEN_MODIFIERS.index(name)
                                     for name in T.BUCKET_NAMES)
_MODEL = TYPES["loomModel"]
_HUMAN = TYPES["loomHuman"]
_TEXT = (_MODEL, _HUMAN)  # the spans probabilities colour (a writer's once scored)
_VISIBLE = str.maketrans({" ": "␣", "\n": "↵", "\t": "⇥", "\r": "␍"})


def visible(text: str) -> str:
    """A token as shown in hovers and titles: whitespace made visible."""
    return text.translate(_VISIBLE) or "∅"


def percent(p: float | None) -> str:
    if p is None:
        return "?"
    if p >= 0.0001:
        return f"{p:.2%}" if p < 0.1 else f"{p:.1%}"
    return "<0.01%"


def _code(text: str) -> str:
    shown = visible(text)
    return f"`` {shown} ``" if "`" in shown else f"`{shown}`"


def segment_tokens(docs: OpenDocuments, doc: OpenDoc, i: int) -> list[T.Token] | None:
    """Token data of the ``i``-th segment's text as the buffer shows it: a node's, carried
    through the human's uncommitted edits of it."""
    seg = doc.session.segments[i]
    node = docs.ws.find_node(seg.node) if seg.node else None
    found = token_store.tokens(docs.ws, node) if node is not None else None
    if found and seg.dirty:
        found = T.through_edit(found, seg.original, doc.session.segment_text(i))
    return found


# ── colour ───────────────────────────────────────────────────────────────────────────
#
# A 250 KB buffer of model text is ~36,000 coloured tokens: far too many to place one by
# one on every request. A node's content and token data never change, so each node's
# tokens are encoded once, relative to where the node starts (LSP's delta encoding makes
# every token after the first independent of that), and a request splices those blocks
# between the tokens of everything else. Only text typed over (dirty segments), human
# versions of model text and nodes holding a command line are coloured span by span.


@dataclass(frozen=True, slots=True)
class _Block:
    first: tuple[int, int, int, int, int]  # the first token, its position from the node's start
    rest: list[int]  # the other tokens, as they are in the whole document
    last_line: int  # the last token's line, from the node's first line
    last_char: int  # its column (on the node's first line: from the node's start)


_BLOCKS: collections.OrderedDict[tuple[str, str, int], _Block | None] = \
    collections.OrderedDict()
_BLOCK_CACHE = 8192


def forget(node_ids: set[str]) -> None:
    """Drop the coloured blocks of these nodes (their token data changed: a score)."""
    for key in [k for k in _BLOCKS if k[0] in node_ids]:
        del _BLOCKS[key]


def _block(node_id: str, content: str, runs: list[tuple[int, int, int]],
           encoding: str, typ: int = _MODEL) -> _Block | None:
    key = (node_id, encoding, typ)
    if key in _BLOCKS:
        _BLOCKS.move_to_end(key)
        return _BLOCKS[key]
    spans: Spans = []
    pos, mod = 0, NODE_START
    for r0, r1, b in runs:
        if r0 > pos:
            spans.append((pos, r0, typ, mod))
            mod = 0
        spans.append((r0, r1, typ, mod | BUCKET_BITS[b]))
        mod, pos = 0, r1
    if pos < len(content):
        spans.append((pos, len(content), typ, mod))
    data = decorations._encode(TextDoc(content, encoding), spans)
    block = None
    if data:
        line = char = 0
        for i in range(0, len(data), 5):
            line, char = line + data[i], (char + data[i + 1] if data[i] == 0 else data[i + 1])
        block = _Block(tuple(data[:5]), data[5:], line, char)  # type: ignore[arg-type]
    _BLOCKS[key] = block
    while len(_BLOCKS) > _BLOCK_CACHE:
        _BLOCKS.popitem(last=False)
    return block


def semantic_tokens(docs: OpenDocuments, doc: OpenDoc) -> list[int]:
    """The document's semantic tokens with each model token's probability bucket as a
    modifier (adjacent tokens of one bucket as one token)."""
    text_doc = doc.session.doc
    spans = decorations.authorship_spans(docs, doc)
    segments = doc.session.segments
    if doc.kind != "path" or not segments:
        return decorations.encode_spans(text_doc, spans)
    runs = token_store.runs(docs.ws, [s.node for s in segments if s.node and not s.dirty])
    commands = decorations._command_spans(text_doc)
    command_starts = [c[0] for c in commands]
    blocks: list[tuple[int, _Block]] = []
    rest: Spans = []
    si = 0
    for span in spans:
        s, e, typ, _mod = span
        if typ in _TEXT:
            while si < len(segments) and segments[si].end <= s:
                si += 1
            seg = segments[si] if si < len(segments) else None
            if (seg is not None and seg.node in runs and not seg.dirty and s == seg.start
                    and e == seg.end and not _commands_within(commands, command_starts, s, e)):
                block = _block(seg.node, doc.text[s:e], runs[seg.node], text_doc.encoding,
                               typ)
                if block is not None:
                    blocks.append((s, block))
                    continue
        rest.append(span)
    rest = colour(docs, doc, rest, runs)
    if commands:
        rest = decorations._overlay(rest, commands)
    return _splice(text_doc, decorations._encode(text_doc, rest), blocks)


def _commands_within(commands: Spans, starts: list[int], s: int, e: int) -> bool:
    i = bisect.bisect_left(starts, s)
    return i < len(commands) and commands[i][0] < e


def _splice(text_doc: TextDoc, data: list[int], blocks: list[tuple[int, _Block]]
            ) -> list[int]:
    """``data`` (encoded) with the blocks put in at their places, in document order."""
    if not blocks:
        return data
    out: list[int] = []
    prev_line = prev_char = 0
    line = char = 0  # the absolute position of data's current token
    i, n = 0, len(data)
    for start, block in blocks:
        base_line, base_char = text_doc.position_at(start)
        f = block.first
        first_line = base_line + f[0]
        first_char = base_char + f[1] if f[0] == 0 else f[1]
        while i < n:  # the tokens of data before the block
            next_line = line + data[i]
            next_char = char + data[i + 1] if data[i] == 0 else data[i + 1]
            if (next_line, next_char) >= (first_line, first_char):
                break
            line, char = next_line, next_char
            out += (line - prev_line, char - prev_char if line == prev_line else char,
                    data[i + 2], data[i + 3], data[i + 4])
            prev_line, prev_char = line, char
            i += 5
        out += (first_line - prev_line,
                first_char - prev_char if first_line == prev_line else first_char,
                f[2], f[3], f[4])
        out += block.rest
        prev_line = base_line + block.last_line
        prev_char = base_char + block.last_char if block.last_line == 0 else block.last_char
    while i < n:
        line = line + data[i]
        char = char + data[i + 1] if data[i] == 0 else data[i + 1]
        out += (line - prev_line, char - prev_char if line == prev_line else char,
                data[i + 2], data[i + 3], data[i + 4])
        prev_line, prev_char = line, char
        i += 5
    return out


def colour(docs: OpenDocuments, doc: OpenDoc, spans: Spans,
           runs: dict[str, list[tuple[int, int, int]]] | None = None) -> Spans:
    """Model spans split by the probability runs of their node's tokens (spans of other
    kinds as they are): the span-by-span way, for text typed over and human versions."""
    segments = doc.session.segments
    if doc.kind != "path" or not segments:
        return spans
    if runs is None:
        runs = token_store.runs(docs.ws, [s.node for s in segments if s.node and not s.dirty])
    out: Spans = []
    si = 0
    cache: dict[int, list[tuple[int, int, int]]] = {}
    for s, e, typ, mod in spans:
        if typ not in _TEXT:
            out.append((s, e, typ, mod))
            continue
        while si < len(segments) and segments[si].end <= s:
            si += 1
        seg = segments[si] if si < len(segments) else None
        if seg is None or seg.node is None or seg.start > s:
            out.append((s, e, typ, mod))
            continue
        if seg.dirty:  # typed over: its tokens follow the edit (not cached)
            if si not in cache:
                found = segment_tokens(docs, doc, si)
                cache[si] = T.runs(found) if found else []
            node_runs = cache[si]
        else:
            node_runs = runs.get(seg.node, [])
        if not node_runs:
            out.append((s, e, typ, mod))
            continue
        base, pos = seg.start, s
        j = max(0, bisect.bisect_right(node_runs, (s - base, 1 << 62, 0)) - 1)
        for r0, r1, b in node_runs[j:]:
            a0, a1 = base + r0, base + r1
            if a0 >= e:
                break
            if a1 <= pos:
                continue
            a0 = max(a0, pos)
            a1 = min(a1, e)
            if a0 > pos:
                out.append((pos, a0, typ, mod))
                mod &= ~NODE_START
            out.append((a0, a1, typ, mod | BUCKET_BITS[b]))
            mod &= ~NODE_START
            pos = a1
        if pos < e:
            out.append((pos, e, typ, mod))
    return out


# ── hover ────────────────────────────────────────────────────────────────────────────


def token_table(tok: T.Token) -> str:
    """The hover of one token: its probability, and the alternatives in columns.

    The columns are a fenced block, not a Markdown table: Neovim's hover float (0.11) shows
    a table as its source (``|:-:|…``, with the bars out of line where it conceals the
    backticks), while a fenced block reads the same there and in VS Code: monospace,
    the fences hidden."""
    head = f"**{_code(tok.text)}** · {percent(tok.probability)}"
    if not tok.alternatives:
        return head + "\n\n*no alternatives were asked for*"
    rows = list(tok.alternatives)
    if tok.text not in dict(rows):
        rows.append((tok.text, tok.logprob))
    cells = [("▸" if text == tok.text else " ", visible(text),
              percent(T.probability(lp))) for text, lp in rows]
    wide = max(len("token"), *(len(c[1]) for c in cells))
    num = max(len("p"), *(len(c[2]) for c in cells))
    body = [f"  {'token'.ljust(wide)}  {'p'.rjust(num)}"]
    body += [f"{m} {t.ljust(wide)}  {p.rjust(num)}" for m, t, p in cells]
    fence = "```"
    while any(fence in line for line in body):  # a token of backticks
        fence += "`"
    return "\n".join([head, "", fence + "text", *body, fence])


def hover(docs: OpenDocuments, doc: OpenDoc, offset: int) -> tuple[str, lookup.Span] | None:
    """A model token's probabilities and alternatives above the node's card; None where
    the text is not a model's (then the ordinary hover answers)."""
    if perms.missing_for(perms.LOOM_AWARE, docs.participant.permissions):
        return None  # (the tokens are the tree's text: permissions.require_read)
    if doc.kind != "path" or doc.tree is None:
        return None
    i = doc.session.segment_at(offset)
    if i is None:
        return None
    seg = doc.session.segments[i]
    node = docs.ws.find_node(seg.node) if seg.node else None
    if node is None:
        return None
    found = segment_tokens(docs, doc, i)
    if not found and not seg.by_model:
        return None
    tok = T.token_at(found, offset - seg.start) if found else None
    if tok is None:
        # nothing to say about probabilities here (imported or human text, an edited
        # span): the ordinary card answers, without a note on every hover
        return None
    card = lookup.hover(docs, doc, offset)
    section = token_table(tok)
    scorer = token_store.scorer_of(docs.ws, node.id)
    if scorer is not None:
        section += f"\n\n*scored by {scorer} (→ score)*"
    span = lookup.Span(seg.start + tok.start, seg.start + tok.end)
    text = section if card is None else f"{section}\n\n---\n\n{card[0]}"
    return text, span


def lsp_hover(docs: OpenDocuments, doc: OpenDoc, pos: lsp.Position) -> lsp.Hover | None:
    """``textDocument/hover``: a model token's probabilities, else the node or reference
    under the cursor (``lookup.hover``)."""
    at = offset_of(doc, pos)
    found = hover(docs, doc, at) or lookup.hover(docs, doc, at)
    if found is None:
        return None
    text, where = found
    return lsp.Hover(contents=lsp.MarkupContent(kind=lsp.MarkupKind.Markdown, value=text),
                     range=range_of(doc.session.doc, where.start, where.end))


# ── code actions ─────────────────────────────────────────────────────────────────────


@dataclass
class Action:
    title: str
    args: dict[str, Any]
    preferred: bool = False
    disabled: str | None = None  # shown greyed with this reason where nothing can be done


def actions(docs: OpenDocuments, doc: OpenDoc, offset: int, continues: bool) -> list[Action]:
    """What can be done at a model token: branch with each alternative (and continue from
    it), or split the node there."""
    if doc.kind != "path" or doc.tree is None:
        return []
    i = doc.session.segment_at(offset)
    if i is None:
        return []
    seg = doc.session.segments[i]
    found = segment_tokens(docs, doc, i)
    tok = T.token_at(found, offset - seg.start) if found else None
    if tok is None:
        node = docs.ws.find_node(seg.node) if seg.node and seg.by_model else None
        if node is None or found:
            return []
        # asked for alternatives on model text without token data: say why, once, here
        # (not on every hover)
        return [Action("Alternatives", {}, disabled="no token probabilities: "
                       + token_store.missing_reason(docs.ws, node))]
    line, character = doc.session.doc.position_at(seg.start + tok.start)
    base = {"uri": doc.uri, "node": seg.node, "at": tok.start, "line": line,
            "character": character}
    out = []
    verb = "Continue from here with" if continues else "Branch here with"
    for alt, lp in tok.alternatives:
        if alt == tok.text or not alt:
            continue
        out.append(Action(f"{verb} ‘{visible(alt)}’ ({percent(T.probability(lp))})",
                          {**base, "alt": alt, "continue": continues},
                          preferred=not out))
    if tok.start > 0:
        out.append(Action(f"Split [{seg.label}] here, before ‘{visible(tok.text)}’",
                          {**base, "continue": False}))
    return out


def code_actions(docs: OpenDocuments, doc: OpenDoc, params: lsp.CodeActionParams,
                 continues: bool) -> list[lsp.CodeAction]:
    """``textDocument/codeAction`` (refactor kinds only): ``actions`` as commands running
    ``loom.split``; the disabled ones only when asked for (not on every cursor move)."""
    only = params.context.only
    if only and not any(str(getattr(k, "value", k)).startswith("refactor") for k in only):
        return []
    found = actions(docs, doc, offset_of(doc, params.range.start), continues)
    asked = params.context.trigger_kind == lsp.CodeActionTriggerKind.Invoked
    return [lsp.CodeAction(title=a.title, kind=lsp.CodeActionKind.RefactorRewrite,
                           disabled=lsp.CodeActionDisabled(reason=a.disabled))
            if a.disabled else
            lsp.CodeAction(title=a.title, kind=lsp.CodeActionKind.RefactorRewrite,
                           is_preferred=a.preferred or None,
                           command=lsp.Command(title=a.title, command="loom.split",
                                               arguments=[a.args]))
            for a in found if asked or not a.disabled]


# ── the feature object ───────────────────────────────────────────────────────────────


class Probabilities:
    def __init__(self, host: Host, editing: Editing, generation: Generating) -> None:
        self.host = host
        self.editing = editing
        self.generation = generation

    def toggle(self, on: bool | None = None) -> Result:
        """Show or hide the probability colours (flip when ``on`` is None)."""
        host = self.host
        shown = (not host.settings.probabilities) if on is None else on
        host.settings = host.settings.model_copy(update={"probabilities": shown})
        host.refresh_decorations()
        if shown:
            return Result.success("✓ token probabilities shown (confident → surprising); "
                                  "hover a model token for its alternatives", on=True)
        return Result.success("✓ token probabilities hidden", on=False)

    async def split(self, uri: str, node: str | None, at: int | None, line: int | None,
                    character: int | None, alt: str | None, continues: bool,
                    n: int | None = None, tokens: int | None = None) -> Result:
        """Split the node at a token (the one at ``line``/``character``, else ``node`` at
        ``at``), with ``alt`` as a new branch there, and continue from it."""
        host, docs = self.host, self.host.docs
        doc = docs.ensure(uri)
        if doc.kind != "path" or doc.tree is None:
            return Result.failure("INVALID_SYNTAX", "split works in a path document",
                                  "open loom://path/TREE/NODE")
        committed = await self.editing.commit_and_show(doc)
        if not committed.ok:
            return committed
        target = self._target(doc, node, at, line, character)
        if isinstance(target, Result):
            return target
        actor = host.actor(doc)
        result = await host.execute(syntax.Split(node=target[0], at=target[1], alt=alt), actor)
        if not result.ok:
            host.show(result)
            return result
        ws = host.app.ws
        _here, doc.view.tip = ws.position(docs.participant, doc.tree)
        text, segments = docs.rerender_target(doc)
        await host.send_edit(doc, text, segments)
        self.editing.persist(doc)
        host.status(doc)
        host.refresh_decorations()
        if alt is not None and continues:
            generated = await self.generation.continue_(uri, syntax.Continue(n=n, tokens=tokens))
            if not generated.ok:
                return generated
            return Result.success(result.text + "\n" + generated.text,
                                  **{**result.data, "continued": generated.data})
        return result

    def _target(self, doc: OpenDoc, node: str | None, at: int | None, line: int | None,
                character: int | None) -> tuple[str, int] | Result:
        """The node and offset to split at: found from the position when one is given
        (the commit may have made an edited node a version), else as given."""
        docs = self.host.docs
        if line is not None:
            text_doc = TextDoc(docs.expected_text(doc), docs.encoding)
            offset = text_doc.offset_at(line, character or 0)
            for seg in docs.expected_segments(doc):
                if seg.node and seg.start <= offset < seg.end:
                    return seg.node, offset - seg.start
            return Result.failure("NOT_FOUND", "no node's text at that position",
                                  "put the cursor on a model token")
        if node is None or at is None:
            return Result.failure("INVALID_SYNTAX", "loom.split needs a position or a node "
                                  "and at", "pass {uri, line, character} or {uri, node, at}")
        return node, at
