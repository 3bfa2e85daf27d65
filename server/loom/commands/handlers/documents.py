"""Document tools: read, write."""

from __future__ import annotations

from loom.commands import syntax
from loom.commands.context import Ctx
from loom.commands.results import Result
from loom.errors import LoomError
from loom.model.documents import Section, find_section, section_name, sections, without_ids
from loom.render import formats as f
from loom.render.text import (
    document_summary,
    plural,
    preview,
    quote,
    relative_time,
    word_count,
    words,
)
from loom.store.schema import Document


def _section(doc: Document, ref: str) -> Section:
    sec = find_section(doc.content, ref)
    if isinstance(sec, list):
        listed = ", ".join(f"§{s.id}" for s in sec[:8])
        raise LoomError("NOT_FOUND", f"section §{ref.lstrip('§')} is not in {f.doc_ref(doc.name)}",
                        f"sections: {listed}" if listed else "the document has no headings")
    return sec


SECTIONS_LISTED = 6  # a listed document's sections named; the rest counted


def documents(ctx: Ctx) -> Result:
    """``→ read`` alone (``→ list documents``): each document with its size, age, sections
    and the start of its summary, so the reader knows what there is to read."""
    docs = ctx.ws.documents()
    if not docs:
        return Result.success("no documents yet", documents=[])
    lines = [f"{plural(len(docs), 'document')}:"]
    for doc in docs:
        secs = sections(doc.content)
        named = ", ".join(f"§{s.id}" for s in secs[:SECTIONS_LISTED])
        if len(secs) > SECTIONS_LISTED:
            named += f" (+{len(secs) - SECTIONS_LISTED} more)"
        lines.append(f"  {f.doc_ref(doc.name)} · {words(word_count(doc.content))} · "
                     f"updated {relative_time(doc.updated, ctx.now)}"
                     + (f" · sections: {named}" if named else ""))
        about = (doc.summary or document_summary(doc.content)).strip()
        if about:
            lines.append(f"    {preview(about, 100)}")
    lines.append('→ read doc:"[name]" for one (summary, lines:, section: read less)')
    return Result.success("\n".join(lines), documents=[d.id for d in docs])


def read(ctx: Ctx, cmd: syntax.Read) -> Result:
    if cmd.doc is None:
        return documents(ctx)
    doc = ctx.ws.document(cmd.doc)
    text = without_ids(doc.content)  # headings as written, less their {#id}: as many lines
    lines = text.split("\n")
    if cmd.summary:
        summary = doc.summary
        if not summary or doc.summary_source == "extractive":
            # Lazy fallback (SPEC-NOTES 11): an extractive summary until a model writes one,
            # made from the prose (an older one may still hold Markdown syntax).
            summary = document_summary(doc.content)
            if summary != doc.summary:
                ctx.ws.set_document_summary(doc, summary, "extractive")
        head = (f"{f.doc_ref(doc.name)} ({words(word_count(doc.content))} · "
                f"updated {relative_time(doc.updated, ctx.now)})")
        return Result.success(f"{head}\n{quote(summary or '(empty)')}", doc=doc.id)
    if cmd.lines is not None:
        a, b = cmd.lines
        if a < 1 or b < a:
            raise LoomError("INVALID_SYNTAX", f"bad line range {a}-{b}",
                            "use lines:START-END with 1 ≤ START ≤ END")
        if a > len(lines):
            raise LoomError("NOT_FOUND", f"{f.doc_ref(doc.name)} has {len(lines)} lines",
                            f"use lines:1-{len(lines)}")
        body = "\n".join(lines[a - 1:b])
        return Result.success(f"{f.doc_ref(doc.name)} lines:{a}-{min(b, len(lines))}\n\n{body}",
                              doc=doc.id)
    if cmd.section is not None:
        sec = _section(doc, cmd.section)
        body = "\n".join(lines[sec.start:sec.end]).rstrip("\n")
        shown = section_name(cmd.section)  # as the reader named it (SPEC-NOTES 16)
        return Result.success(f"{f.doc_ref(doc.name, shown)}\n\n{body}", doc=doc.id)
    return Result.success(f"{f.doc_ref(doc.name)}\n\n{text.rstrip(chr(10))}", doc=doc.id)


def write(ctx: Ctx, cmd: syntax.Write) -> Result:
    ws = ctx.ws
    try:
        doc = ws.document(cmd.doc)
    except LoomError as err:
        if cmd.mode == "replace" or err.code != "NOT_FOUND":
            raise
        doc = ws.create_document(cmd.doc, cmd.content, ctx.me)
        return Result.success(
            f.ok(f"created {f.doc_ref(doc.name)} ({words(word_count(doc.content))})"),
            doc=doc.id)
    lines = doc.content.split("\n") if doc.content else []
    if cmd.mode == "append":
        new = (doc.content.rstrip("\n") + "\n\n" + cmd.content) if doc.content.strip() \
            else cmd.content
        verb = "appended to"
    elif cmd.mode == "at":
        where = (cmd.at or "end").strip()
        if where == "start":
            new_lines = [*cmd.content.split("\n"), *lines]
        elif where == "end":
            new_lines = [*lines, *cmd.content.split("\n")]
        elif where.isdigit():
            k = int(where)
            if not 1 <= k <= len(lines) + 1:
                raise LoomError("NOT_FOUND", f"{f.doc_ref(doc.name)} has {len(lines)} lines",
                                f"use at:1 to at:{len(lines) + 1}, at:start or at:end")
            new_lines = [*lines[:k - 1], *cmd.content.split("\n"), *lines[k - 1:]]
        else:
            sec = _section(doc, where)
            end = sec.end
            while end > sec.start + 1 and not lines[end - 1].strip():
                end -= 1
            new_lines = [*lines[:end], *cmd.content.split("\n"), *lines[end:]]
        new = "\n".join(new_lines)
        verb = f"wrote at:{where} in"
    else:
        sec = _section(doc, cmd.section or "")
        body = cmd.content.split("\n")
        if not body or not body[0].lstrip().startswith("#"):
            # the section keeps its heading, and the blank line after it if it had one
            gap = [""] if sec.start + 1 < len(lines) and not lines[sec.start + 1].strip() \
                else []
            body = [lines[sec.start], *gap, *body]
        tail = lines[sec.end:]
        if tail and body and body[-1].strip():
            body.append("")
        new = "\n".join([*lines[:sec.start], *body, *tail])
        verb = f"replaced §{section_name(cmd.section or '')} in"
    ws.save_document(doc, new, ctx.me)
    return Result.success(
        f.ok(f"{verb} {f.doc_ref(doc.name)} (now {words(word_count(new))})"),
        doc=doc.id)
