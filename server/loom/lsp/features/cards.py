"""What a person sees of a node where they read (hover, pickers, the Loom view): its own
text first, then its summary labelled with where it came from, then how a model made it
(model, parameters, tokens, latency, when, and the request's other continuations), then
bookmarks, tags, rating and connections."""

from __future__ import annotations

import json
from typing import Any

from loom.lsp.documents import OpenDocuments
from loom.lsp.features import blind
from loom.model import marks
from loom.render.formats import node_header
from loom.render.text import one_line, plural, preview, quote, relative_time
from loom.store.schema import Node

EXCERPT_CHARS = 400


def excerpt(text: str, limit: int = EXCERPT_CHARS) -> str:
    """The start of a node's own text on one line, cut at a word with ``…``."""
    flat = one_line(text)
    if len(flat) <= limit:
        return flat
    cut = flat[:limit].rsplit(" ", 1)[0] if " " in flat[:limit] else flat[:limit]
    return cut.rstrip(",;:—-– ") + "…"


def summary_label(source: str | None) -> str:
    """Where a summary came from, in words."""
    if not source:
        return "summary"
    if source == "extractive":
        return "summary (its first sentence)"
    if source == "import":
        return "summary (from the imported file)"
    if source.startswith("model:"):
        return f"summary (written by {source.split(':', 1)[1]})"
    if source == "model":
        return "summary (written by a model)"
    return f"summary ({source})"


# The request's parameters hover leaves out: the count is the next line's, and logprobs
# show as the token colouring.
# The profile and the replay are said apart.
_NOT_SHOWN = frozenset({"n", "logprobs", "profile", "models", "replay_of", "replay_matched",
                        "fill"})


def _param(value: object) -> object:
    """A sampling parameter as a hover shows it: lists and tables as JSON, long text (a
    grammar) cut."""
    if isinstance(value, list):
        return " ".join(map(json.dumps, value))
    if isinstance(value, dict):
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, str) and len(value) > 60:
        return json.dumps(value[:59] + "…", ensure_ascii=False)
    return value


def generation_lines(docs: OpenDocuments, node: Node, hidden: bool = False) -> list[str]:
    """How a model made the node: model, parameters, tokens, latency, when; and the other
    continuations its request made. ``hidden``: the model is not named (a blind tree)."""
    ws = docs.ws
    gen, batch = ws.request_batch(node)
    if gen is None:
        return []
    params = dict(gen.params or {})
    usage = dict(gen.usage or {})
    parts = [blind.HIDDEN if hidden else
             f"`{gen.model}`" + (f" via {gen.provider}" if gen.provider else "")]
    for key, value in sorted(params.items(), key=lambda kv: kv[0] != "temperature"):
        if key not in _NOT_SHOWN and value is not None and value != []:
            parts.append(f"{key.replace('_', ' ')} {_param(value)}")
    tokens = usage.get("completion_tokens") or usage.get("output_tokens")
    prompt = usage.get("prompt_tokens") or usage.get("input_tokens")
    if tokens is not None or prompt is not None:
        parts.append(" + ".join(x for x in (
            f"{prompt} prompt" if prompt is not None else "",
            f"{tokens} completion" if tokens is not None else "") if x) + " tokens")
    if gen.latency_ms is not None:
        parts.append(f"{gen.latency_ms / 1000:.1f} s" if gen.latency_ms >= 1000
                     else f"{gen.latency_ms:.0f} ms")
    parts.append(relative_time(gen.created, ws.clock()))
    lines = ["Generated: " + " · ".join(parts)]
    original = ws.find_node(params["replay_of"]) if params.get("replay_of") else None
    if original is not None:
        lines.append(f"Replay of [{original.label}]: " + (
            "the same text" if params.get("replay_matched") else "a different text"))
    fill = params.get("fill")
    if isinstance(fill, dict):  # → fill: the span this version's text replaced
        filled = ws.find_node(str(fill.get("node") or ""))
        lines.append(f"Filled: characters {fill.get('start')}-{fill.get('end')}"
                     + (f" of [{filled.label}]" if filled is not None else "")
                     + f", in place of {quote(preview(str(fill.get('replaced') or '')))}")
    if len(batch) > 1:
        k = batch.index(node.id) + 1 if node.id in batch else gen.completion_index + 1
        others = [ws.find_node(i) for i in batch if i != node.id]
        labels = " ".join(f"[{o.label}]" for o in others if o is not None)
        what = "Version" if isinstance(fill, dict) else "Continuation"
        lines.append(f"{what} {k} of {len(batch)} from one request (with {labels})")
    return lines


def mark_line(node: Any) -> str:
    """``★ bookmarked "tone shift" · #dream #draft · rated +1``, or empty."""
    extra = getattr(node, "extra", None)
    parts = []
    if node.bookmarked:
        label = marks.bookmark_label(extra)
        parts.append("★ bookmarked" + (f' "{label}"' if label else ""))
    tags = marks.tags_of(extra)
    if tags:
        parts.append(" ".join(f"#{t}" for t in tags))
    rating = marks.rating_of(extra)
    if rating is not None:
        parts.append(f"rated {rating:+d}")
    if node.pruned:
        parts.append("pruned (hidden)")
    return " · ".join(parts)


def node_card(docs: OpenDocuments, node: Node) -> str:
    """The hover card of a node, as Markdown."""
    ws = docs.ws
    hidden = blind.hides(ws, docs.participant, node)
    header = node_header(node.label, "model" if hidden else ws.participant_name(node.author_id),
                         relative_time(node.created, ws.clock()), node.depth)
    lines = [f"**{header}**", ""]
    text = excerpt(node.content)
    lines.append(f"> {text}" if text else "> *(no text)*")
    summary = (node.summary or "").strip()
    if summary and one_line(summary) != one_line(node.content):
        lines += ["", f"*{summary_label(node.summary_source).capitalize()}:* {summary}"]
    gen = generation_lines(docs, node, hidden)
    if gen:
        lines += ["", *gen]
    marked = mark_line(node)
    if marked:
        lines += ["", marked]
    judged = marks.judge_line(node.extra)  # the exploration judge's (→ explore)
    if judged:
        lines += ["", f"Judge: {judged}"]
    conts = ws.count_children(node.id)
    anns = ws.count_children(node.id, "annotation")
    links = ws.count_links(node.id)
    counts = [plural(conts, "continuation")]
    if anns:
        counts.append(plural(anns, "annotation"))
    if links:
        counts.append(plural(links, "link"))
    lines += ["", " · ".join(counts)]
    return "\n".join(lines)
