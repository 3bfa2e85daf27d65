"""Memory tools: pin, stash, recall, drop, memory; and think."""

from __future__ import annotations

from loom.commands import syntax
from loom.commands.context import Ctx
from loom.commands.results import Result
from loom.errors import LoomError
from loom.memory import operational as mem
from loom.memory.counting import count_tokens
from loom.model import permissions as perms
from loom.model.documents import same_section, section_name
from loom.render import formats as f
from loom.render.text import thousands
from loom.store.schema import Document


def pin(ctx: Ctx, cmd: syntax.PinBlock) -> Result:
    if cmd.doc is not None:
        ctx.require(perms.DOC_READ, "pin documents")
        doc = ctx.ws.document(cmd.doc)
        section = None
        if cmd.section:
            from loom.commands.handlers.documents import _section

            _section(doc, cmd.section)  # NOT_FOUND, with the sections, when it names none
            section = section_name(cmd.section)  # kept as named (SPEC-NOTES 16)
            # the section pinned by another of its names is already pinned
            section = _pinned_section(ctx, doc, section) or section
        added = mem.add_pin(ctx.ws, ctx.me, ctx.tree, "doc", doc.id, section)
        shown = f.doc_ref(doc.name, section)
    else:
        node = ctx.resolve(cmd.node)
        added = mem.add_pin(ctx.ws, ctx.me, ctx.tree, "node", node.id)
        shown = f.ref(node.label)
    if not added:
        return Result.success(f.ok(f"{shown} is already pinned"))
    return Result.success(f.ok(f"pinned {shown} to working memory"))


def _pinned_section(ctx: Ctx, doc: Document, section: str) -> str | None:
    """The name a pin of this document's ``section`` was made with, if one was."""
    return next((p.section for p in mem.pins(ctx.ws, ctx.me, ctx.tree)
                 if p.kind == "doc" and p.ref == doc.id and p.section
                 and same_section(doc.content, p.section, section)), None)


def stash(ctx: Ctx, cmd: syntax.StashBlock) -> Result:
    if cmd.content_of is not None:
        node = ctx.resolve(cmd.content_of)
        content, source = node.content, f"content-of:{node.label}"
    elif cmd.summary_of is not None:
        a, b = (ctx.text_node(r, "a range runs along the text: end it at the node it "
                              "annotates, [{on}]") for r in cmd.summary_of)
        content, source = mem.summarize_range(ctx, a, b), f"summary-of:{a.label}-{b.label}"
    elif cmd.content is not None:
        content, source = cmd.content, "literal"
    else:
        raise LoomError("INVALID_SYNTAX", "stash needs content",
                        'use → stash "[label]" "[content]" or content-of:[localId]')
    if not cmd.label.strip():
        raise LoomError("INVALID_SYNTAX", "a stash needs a label", 'use → stash "[label]" …')
    tokens, exact = count_tokens(content)
    replaced = mem.put_stash(ctx.ws, ctx.me, ctx.tree, cmd.label, content, tokens, source)
    suffix = ", replaced the earlier one" if replaced else ""
    return Result.success(f.ok(f'stashed "{cmd.label}" ({_tokens(tokens, exact)}{suffix})'))


def recall(ctx: Ctx, cmd: syntax.Recall) -> Result:
    item = mem.recall_stash(ctx.ws, ctx.me, ctx.tree, cmd.label)
    return Result.success(f'✓ recalled "{item.label}":\n"{item.content}"')


def drop(ctx: Ctx, cmd: syntax.Drop) -> Result:
    if cmd.stash is not None:
        mem.drop_stash(ctx.ws, ctx.me, ctx.tree, cmd.stash)
        return Result.success(f.ok(f'dropped stash "{cmd.stash}"'))
    ref = (cmd.pin or "").strip()
    if ref.startswith("doc:"):
        name, _, section = ref[4:].partition("§")
        doc = ctx.ws.document(name.strip().strip('"“”'))
        section = section_name(section) or None
        if section is not None:
            section = _pinned_section(ctx, doc, section) or section
        mem.drop_pin(ctx.ws, ctx.me, ctx.tree, "doc", doc.id, section)
        return Result.success(f.ok(f"dropped pin {f.doc_ref(doc.name, section)}"))
    node = ctx.resolve(ref)
    mem.drop_pin(ctx.ws, ctx.me, ctx.tree, "node", node.id)
    return Result.success(f.ok(f"dropped pin {f.ref(node.label)}"))


def memory(ctx: Ctx, cmd: syntax.Memory) -> Result:
    if cmd.what == "trace":
        entries = mem.trace(ctx.ws, ctx.me, limit=10)
        lines = [f"Action Trace (last {len(entries)}):"] if entries else ["Action Trace: empty"]
        for e in entries:
            mark = f"  ✗ {e.code}" if not e.ok else ""
            lines.append(f"  {e.command}{mark}")
        return Result.success("\n".join(lines))
    if cmd.what == "errors":
        entries = mem.trace(ctx.ws, ctx.me, limit=10, errors_only=True)
        if not entries:
            return Result.success("Errors: none")
        lines = [f"Errors (last {len(entries)}):"]
        for e in entries:
            lines += [f"  {e.command}", f"    ✗ {e.code}: {e.message}"]
        return Result.success("\n".join(lines))
    if cmd.what == "stashed":
        items = mem.stashes(ctx.ws, ctx.me, ctx.tree)
        if not items:
            return Result.success("Stashed: none")
        lines = ["Stashed:"]
        exact = count_tokens("x")[1]  # a tokenizer counts, or the figures are estimates
        lines += [f'  "{s.label}" ({_tokens(s.tokens, exact)} · {ctx.when(s.created)})'
                  + (" · recalled" if s.recalled else "") for s in items]
        return Result.success("\n".join(lines))
    state = mem.state(ctx)
    pinned = ", ".join(state.pinned) if state.pinned else "none"
    stashed = ", ".join(f'"{s}"' for s in state.stashed) if state.stashed else "none"
    est = "" if state.exact else " (estimated)"
    return Result.success(
        "Working Memory:\n"
        f"  pinned: {pinned}\n"
        f"  stashed: {stashed}\n\n"
        f"Context: {thousands(state.used)} tokens used · {thousands(state.available)} "
        f"available{est}"
    )


def think(ctx: Ctx, cmd: syntax.Think) -> Result:
    if not cmd.content.strip():
        raise LoomError("INVALID_SYNTAX", "an empty think block",
                        "write your thoughts between → think and ←")
    tokens, exact = count_tokens(cmd.content)
    mem.add_thought(ctx.ws, ctx.me, ctx.tree, cmd.content)
    return Result.success(f.ok(f"thought kept in memory ({_tokens(tokens, exact)})"))


def _tokens(n: int, exact: bool = True) -> str:
    """``1 token``, ``47 tokens``, ``12,847 tokens``; ``, estimated`` when no tokenizer
    counted them (as → memory says of its figures)."""
    return f"{thousands(n)} {'token' if n == 1 else 'tokens'}{'' if exact else ', estimated'}"
