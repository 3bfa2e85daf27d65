"""``→ fill``: branch the middle of a text.

``n`` model-written texts for a span of a node, the text before and after it kept, each a
version of the node: in a buffer tree a version's continuations stay shared (SPEC-NOTES,
buffer mode), so switching among them (the sibling picker lists a node's versions, and
``→ switch to`` picks one) swaps only the span. The subject model chooses how per model
(``llm/fill.py``); each version's provenance says which span it replaced, and with what
model, strategy and sampling. Like ``continue`` it holds the node's branch lock while the
model writes and needs ``loom_generate``."""

from __future__ import annotations

import json

from loom.commands import syntax
from loom.commands.context import Ctx, Filler, FillRequest
from loom.commands.handlers import content
from loom.commands.results import Result
from loom.errors import LoomError
from loom.model import tokens as T
from loom.model.sampling import Sampling
from loom.render import formats as f
from loom.render.text import plural, preview, quote
from loom.store import node_tokens as token_store
from loom.store.schema import Node

#: Characters of the path below the node the model reads after the span (the text right
#: after the gap matters; a long tail only costs prompt).
TAIL_CHARS = 4000
#: A span's default length budget: a token per three characters of what it holds, with
#: room to differ, within these bounds.
MIN_TOKENS, MAX_TOKENS = 16, 400


def span_of(node: Node, cmd: syntax.Fill) -> tuple[int, int]:
    """The span ``cmd`` names in ``node``'s text: its offsets, or where the quoted text
    is (once)."""
    text = node.content
    if cmd.span is not None:
        at = text.find(cmd.span)
        if at < 0:
            raise LoomError("NOT_FOUND", f"{quote(preview(cmd.span))} is not in "
                            f"[{node.label}]'s text", f"→ view {node.label} full shows it; "
                            f"or give offsets: → fill {node.label} at:START-END")
        if text.find(cmd.span, at + 1) >= 0:
            raise LoomError("INVALID_SYNTAX", f"{quote(preview(cmd.span))} occurs more than "
                            f"once in [{node.label}]", "quote more of it, or give offsets: "
                            f"→ fill {node.label} at:START-END")
        return at, at + len(cmd.span)
    assert cmd.start is not None and cmd.end is not None
    if cmd.end > len(text):
        raise LoomError("INVALID_SYNTAX", f"[{node.label}] has {len(text)} characters; "
                        f"at:{cmd.start}-{cmd.end} runs past its end",
                        f"use offsets within 0-{len(text)}")
    return cmd.start, cmd.end


def default_tokens(replaced: str) -> int:
    """How many tokens a span's new text may have when ``tokens:`` is not given."""
    return max(MIN_TOKENS, min(MAX_TOKENS, round(len(replaced) / 3 * 1.5) + 8))


def build_request(ctx: Ctx, node: Node, start: int, end: int,
                  sampling: Sampling) -> FillRequest:
    """The text before the span (the path to the node, then the node up to it) and after
    it (the rest of the node, then the path below it on the actor's path)."""
    path = ctx.ws.path(node, prefer=(node.id, *ctx.choices()))
    before = "".join(n.content for n in path[:-1] if not n.excluded) + node.content[:start]
    current = ctx.current_path()
    family = node.version_of or node.id
    at = next((i for i, n in enumerate(current)
               if n.id == node.id or (n.version_of or n.id) == family), None)
    tail = "" if at is None else "".join(n.content for n in current[at + 1:]
                                          if not n.excluded)
    after = node.content[end:] + tail[:TAIL_CHARS]
    return FillRequest(ctx.tree, node, sampling, before=before, after=after,
                       replaced=node.content[start:end],
                       system=ctx.tree.system_context or None)


def fill(ctx: Ctx, cmd: syntax.Fill) -> Result:
    node = ctx.text_node(cmd.node, "an annotation is edited by annotating again: "
                         "→ annotate {on} \"…\"")
    if ctx.tree.mode != "buffer":
        raise LoomError("INVALID_SYNTAX", "fill works in buffer trees (a version of a "
                        "message would be a branch of the conversation)",
                        f'in a dialogue, → edit {node.label} "…" rewrites a message')
    start, end = span_of(node, cmd)
    preset = content.preset_for(ctx, cmd.preset)
    sampling = content.checked_sampling(cmd, preset)  # type: ignore[arg-type]
    replaced = node.content[start:end]
    if sampling.tokens is None:
        sampling = sampling.model_copy(update={"tokens": default_tokens(replaced)})
    if not isinstance(ctx.subject, Filler):
        raise LoomError("MODEL_ERROR", "this subject model cannot fill the middle of a text"
                        if ctx.subject is not None else "no subject model is configured",
                        "set up the local model (loom model setup) or configure a profile "
                        "in config.toml")
    request = build_request(ctx, node, start, end, sampling)
    request.models = content.asked_models(ctx, cmd.models, sampling.count, "versions")
    request.cancel = ctx.cancel
    ctx.ws.acquire_turn(node, ctx.me)
    try:
        outcome = ctx.subject.fill(request, ctx.on_delta)
    finally:
        ctx.ws.release_turn(node, ctx.me)
    if ctx.cancel is not None and ctx.cancel.is_set():
        raise LoomError("MODEL_ERROR", "the fill was cancelled", "nothing was written")
    completions = sorted(outcome.completions, key=lambda c: c.index)
    if not completions:
        raise LoomError("MODEL_ERROR", "the subject model returned no text for the span",
                        "retry, or check the model profile")
    span = {"node": node.id, "start": start, "end": end, "replaced": replaced,
            **({"preset": preset.name} if preset is not None else {})}
    family = node.version_of or node.id
    on_path = any((n.version_of or n.id) == family for n in ctx.current_path())
    made = _store(ctx, node, start, end, outcome, completions, span)
    first = made[0]
    if ctx.ws.has_position(ctx.me, ctx.tree):  # the actor's paths show the first
        ctx.ws.choose_member(ctx.me, ctx.tree, first)
    models = [(getattr(c, "model", None) or "") if request.models else "" for c in completions]
    lines = [f"{f.ref(v.label)} {quote(preview(c.text) or '(empty)')}"
             + (f" ({m})" if m else "") for v, c, m in zip(made, completions, models,
                                                            strict=True)]
    lines += [f"✗ {failed}" for failed in getattr(outcome, "failures", None) or []]
    lines.append("downstream nodes preserved via hyperedge")
    if on_path:
        lines.append(f"showing {f.ref(first.label)}: → switch to one of the others, or "
                     "the sibling picker")
    return Result.success(
        f.ok(f"filling {start}-{end} of {f.ref(node.label)} ({quote(preview(replaced))}) "
             f"with {plural(len(made), 'version')}...", *lines),
        created=[v.id for v in made], node=node.id, start=start, end=end,
        middles=[c.text for c in completions], models=models)


def _store(ctx: Ctx, node: Node, start: int, end: int, outcome: object,
           completions: list, span: dict) -> list[Node]:
    """Each completion a version of ``node`` by the subject model, with its provenance
    (the span it replaced, the model, strategy and sampling) and its tokens' data laid
    over the span's new text, in one transaction."""
    subject = ctx.ws.subject()
    made: list[Node] = []
    with ctx.guarded((node, False)):
        raw = getattr(outcome, "raw", None)
        raw_id = None
        if raw:
            raw_id = ctx.ws.save_raw_response(json.dumps(
                content.without_logprobs(raw), ensure_ascii=False, default=str))
        usage = getattr(outcome, "usage", None)
        usage_d = usage.model_dump() if hasattr(usage, "model_dump") else (usage or {})
        params = dict(getattr(outcome, "params", {}) or {})
        for c in completions:
            text = node.content[:start] + c.text + node.content[end:]
            version = ctx.ws.add_version(ctx.tree, node, text, subject)
            by = c if getattr(c, "model", None) else outcome
            asked = {**(getattr(c, "params", None) or params),
                     "fill": {**span, "length": len(c.text)}}
            k = asked.get("logprobs") or 0
            c_usage = getattr(c, "usage", None)
            ctx.ws.record_generation(
                version.id, provider=str(getattr(by, "provider", "")),
                model=str(getattr(by, "model", "")), params=asked,
                usage=(c_usage.model_dump() if hasattr(c_usage, "model_dump") else usage_d),
                latency_ms=getattr(outcome, "latency_ms", None), completion_index=c.index,
                logprobs=None, raw=raw_id, created=ctx.now)
            tokens = T.align(getattr(c, "logprobs", None), c.text, k)
            token_store.save(ctx.ws, version.id, [
                T.Token(t.start + start, t.text, t.logprob, t.alternatives)
                for t in tokens], k)
            made.append(version)
    return made
