"""Content tools: continue, respond, annotate, link, edit."""

from __future__ import annotations

import json
import os
from collections.abc import Iterable

from loom.commands import syntax
from loom.commands.catalogue import TOOLS_BY_NAME, Option
from loom.commands.context import (
    ContinueRequest,
    Ctx,
    ModelChoices,
    PresetChoice,
    SamplerPresets,
)
from loom.commands.results import Result
from loom.errors import CrossTree, LoomError
from loom.model import permissions as perms
from loom.model.sampling import Sampling
from loom.render import formats as f
from loom.render.text import plural, preview, quote
from loom.store import node_tokens as token_store
from loom.store.schema import Node, Participant, Tree
from loom.store.workspace import Workspace

MAX_N = 10


def build_request(ctx: Ctx, source: Node, sampling: Sampling) -> ContinueRequest:
    """Buffer: the path's text with no system prompt unless the tree has one. Dialogue: the
    path as chat messages; annotations and excluded nodes left out."""
    tree = ctx.tree
    path = ctx.ws.path(source, prefer=(source.id, *ctx.choices()))
    system = tree.system_context or None
    if tree.mode == "buffer":
        prompt = "".join(n_.content for n_ in path if not n_.excluded)
        return ContinueRequest(tree, source, sampling, prompt=prompt, system=system)
    messages = []
    for node in path:
        if node.excluded or node.kind == "annotation" or not node.content.strip():
            continue
        role = "assistant" if node.author_type == "model" else "user"
        if messages and messages[-1]["role"] == role:
            messages[-1]["content"] += "\n\n" + node.content
        else:
            messages.append({"role": role, "content": node.content})
    return ContinueRequest(tree, source, sampling, messages=messages, system=system)


def check_limits(values: object, options: Iterable[Option]) -> None:
    """Each of ``options`` that ``values`` gives within the bounds its declaration gives."""
    for option in options:
        value = getattr(values, option.name, None) if option.limits else None
        if value is None or option.limits is None:
            continue
        low, high = option.limits
        if not low <= value <= high:
            raise LoomError("LIMIT_EXCEEDED", f"{option.name} must be between {low:,} and "
                            f"{high:,}", option.limit_hint or None)


def within_limits(sampling: Sampling) -> None:
    """Each sampling option within the bounds its declaration gives."""
    check_limits(sampling, TOOLS_BY_NAME["continue"].options)


def named_models(ctx: Ctx, typed: tuple[str, ...]) -> tuple[str, ...]:
    """The profiles ``model:``/``models:`` name: each a name, or the start of just one."""
    if not typed:
        return ()
    if not isinstance(ctx.subject, ModelChoices):
        raise LoomError("MODEL_ERROR", "this subject model serves one model",
                        "leave model: out")
    names = [c.name for c in ctx.subject.choices()]
    chosen: list[str] = []
    for name in typed:
        found = [n for n in names if n == name] or [n for n in names if n.startswith(name)]
        if len(found) != 1:
            what = "no model" if not found else f"{len(found)} models"
            raise LoomError("INVALID_SYNTAX", f'{what} named "{name}"',
                            f"the models: {', '.join(found or names)}")
        if found[0] in chosen:
            raise LoomError("INVALID_SYNTAX", f"{found[0]} is named twice",
                            "ask for more of one model with n:")
        chosen.append(found[0])
    return tuple(chosen)


def asked_models(ctx: Ctx, models: Iterable[str], n: int, what: str) -> tuple[str, ...]:
    """The models a request asks (those named, else the tree's pick), refused with
    ``LIMIT_EXCEEDED`` when ``n`` of each would be more ``what`` than one request makes."""
    named = tuple(models)
    asked = named_models(ctx, named) if named else picked_models(ctx)
    if n * max(1, len(asked)) > MAX_N:
        raise LoomError("LIMIT_EXCEEDED", f"max {what} per request is {MAX_N} "
                        f"({len(asked)} models × n:{n})",
                        f"use n:{MAX_N // max(1, len(asked))} or fewer models")
    return asked


def picked_models(ctx: Ctx) -> tuple[str, ...]:
    """The model the actor picked for this tree, while it is still one there is."""
    if not isinstance(ctx.subject, ModelChoices):
        return ()
    picked = ctx.ws.model_choice(ctx.me, ctx.tree)
    names = {c.name for c in ctx.subject.choices()} if picked else set()
    return (picked,) if picked in names else ()


def choose_model(ctx: Ctx, cmd: syntax.ChooseModel) -> Result:
    """The model ``continue`` asks in this tree for this participant, until changed; and,
    where ``preset`` is given, the sampler preset it continues with there."""
    tree = ctx.tree
    if cmd.preset is not None:
        return _choose_preset(ctx, cmd.preset)
    if cmd.profile is None:
        ctx.ws.choose_model(ctx.me, tree, None)
        return Result.success(f.ok("continue asks the default model here"), profile=None)
    (name,) = named_models(ctx, (cmd.profile,))
    ctx.ws.choose_model(ctx.me, tree, name)
    return Result.success(f.ok(f"continue asks {name} in {quote(tree.title)}",
                               "model: in a command asks another for that command"),
                          profile=name)


def _choose_preset(ctx: Ctx, typed: str) -> Result:
    tree = ctx.tree
    profile = ctx.ws.model_choice(ctx.me, tree)
    if typed in ("", "none", "default"):
        ctx.ws.choose_model(ctx.me, tree, profile, None, keep_preset=False)
        return Result.success(f.ok(f"continue samples as the model's defaults in "
                                   f"{quote(tree.title)}"), preset=None)
    chosen = preset_named(ctx, typed)
    ctx.ws.choose_model(ctx.me, tree, profile, chosen.name, keep_preset=False)
    return Result.success(f.ok(f"continue samples with preset {chosen.name} in "
                               f"{quote(tree.title)} ({chosen.description})",
                               "options in a command win over it; preset: names another"),
                          preset=chosen.name)


def _presets(ctx_subject: object) -> list[PresetChoice]:
    if not isinstance(ctx_subject, SamplerPresets):
        return []
    return ctx_subject.presets()


def preset_named(ctx: Ctx, typed: str) -> PresetChoice:
    """The preset ``preset:`` names: its name, or the start of just one."""
    return _named_preset(_presets(ctx.subject), typed)


def _named_preset(presets: list[PresetChoice], typed: str) -> PresetChoice:
    found = [p for p in presets if p.name == typed] or \
        [p for p in presets if p.name.startswith(typed)]
    if len(found) != 1:
        what = "no preset" if not found else f"{len(found)} presets"
        names = ", ".join(p.name for p in found or presets)
        raise LoomError("INVALID_SYNTAX", f'{what} named "{typed}"',
                        f"the presets: {names}" if names else
                        "define one as [presets.NAME] in config.toml (README: Samplers)")
    return found[0]


def preset_for(ctx: Ctx, typed: str | None) -> PresetChoice | None:
    """The preset a ``continue`` samples with: the one it names, else the one the actor
    picked for the tree while the configuration still has it, else none."""
    return preset_of(ctx.ws, ctx.subject, ctx.me, ctx.tree, typed)


def preset_of(ws: Workspace, subject: object, me: Participant, tree: Tree,
              typed: str | None) -> PresetChoice | None:
    """:func:`preset_for` for a caller without a command's context (the editor, checking
    a generation before it commits the typed text)."""
    if typed is not None:
        return _named_preset(_presets(subject), typed)
    picked = ws.preset_choice(me, tree)
    if picked is None:
        return None
    return next((p for p in _presets(subject) if p.name == picked), None)


def checked_sampling(cmd: syntax.Continue, preset: PresetChoice | None = None) -> Sampling:
    """``cmd``'s sampling over ``preset``'s, each option within its declared bounds and n
    within 1..10 (SPEC-NOTES 9); a ``LIMIT_EXCEEDED`` error otherwise. The editor asks it
    before it commits the typed text for a generation, as the executor does before
    generating."""
    sampling = cmd.sampling() if preset is None else cmd.sampling().over(preset.sampling)
    if sampling.count > MAX_N:
        raise LoomError("LIMIT_EXCEEDED", f"max continuations per request is {MAX_N}",
                        f"use n:{MAX_N} or less")
    if sampling.count < 1:
        raise LoomError("LIMIT_EXCEEDED", "n must be at least 1", "use n:1 to n:10")
    within_limits(sampling)
    return sampling


def continue_(ctx: Ctx, cmd: syntax.Continue) -> Result:
    preset = preset_for(ctx, cmd.preset)
    sampling = checked_sampling(cmd, preset)
    source = ctx.text_node(cmd.from_, "continue from the node it annotates: → continue from {on}")
    return _generate(ctx, source, sampling, cmd.models,
                     preset=None if preset is None else preset.name)


def _generate(ctx: Ctx, source: Node, sampling: Sampling, models: tuple[str, ...],
              replay_of: Node | None = None, preset: str | None = None) -> Result:
    """Ask the subject model for continuations of ``source`` and store them as its
    children (``replay_of``: the node whose request this runs again)."""
    if ctx.subject is None:
        if os.environ.get("LOOM_SUBJECT", "").strip().lower() == "none":
            # turned off, not missing: installing the local model would not help
            raise LoomError("MODEL_ERROR", "the subject model is turned off (LOOM_SUBJECT=none)",
                            "unset LOOM_SUBJECT to use the configured or local model")
        raise LoomError("MODEL_ERROR", "no subject model is configured",
                        "set up the local model (loom model setup) or set "
                        "ANTHROPIC_API_KEY / OPENAI_API_KEY, or configure a profile in "
                        "config.toml")
    request = build_request(ctx, source, sampling)
    request.models = asked_models(ctx, models, sampling.count, "continuations")
    request.cancel = ctx.cancel
    ctx.ws.acquire_turn(source, ctx.me)
    try:
        outcome = ctx.subject.generate(request, ctx.on_delta)
    finally:
        ctx.ws.release_turn(source, ctx.me)
    if ctx.cancel is not None and ctx.cancel.is_set():  # cancelled as the model finished
        raise LoomError("MODEL_ERROR", "the generation was cancelled", "nothing was written")
    completions = sorted(outcome.completions, key=lambda c: c.index)
    if not completions:
        raise LoomError("MODEL_ERROR", "the subject model returned no continuations",
                        "retry, or check the model profile")
    replay = None if replay_of is None else {
        "replay_of": replay_of.id, "replay_matched": completions[0].text == replay_of.content}
    if preset is not None:
        replay = {**(replay or {}), "preset": preset}
    created = _store_generation(ctx, source, outcome, completions, replay)
    first = created[0]
    models = [(getattr(c, "model", None) or "") if request.models else "" for c in completions]
    by = [f" ({m})" if m else "" for m in models]
    lines = [f"{f.ref(c.label)} {quote(preview(c.content) or '(empty)')}{m}"
             for c, m in zip(created, by, strict=True)]
    failures = [str(failed) for failed in getattr(outcome, "failures", None) or []]
    lines += [f"✗ {failed}" for failed in failures]
    if replay is not None and replay_of is not None:
        lines.append(_replay_line(replay_of, completions[0].text, sampling))
    # Continuing where you stand moves you to the first result (buffer mode shows the
    # first), said as respond says it; continuing elsewhere leaves you where you are. A
    # model asking for several stays where it is (else its next turn's path runs
    # through an arbitrary option): they are options, it switches to the one it picks.
    current = ctx.current_path()
    moved = any(x.id == source.id for x in current) or ctx.position()[0].id == source.id
    if moved and ctx.me.kind == "model" and len(created) > 1:
        moved = False
        lines.append(f"you stay at {f.ref(source.label)}: → switch to the one you choose")
    if moved:
        ctx.ws.set_position(ctx.me, ctx.tree, first, first)
        lines.append(f"switched to {f.ref(first.label)}")
    return Result.success(
        f.ok(f"generating {plural(len(created), 'continuation')} from {f.ref(source.label)}...",
             *lines),
        created=[c.id for c in created], source=source.id, moved=moved,
        models=models, failures=failures,
    )


def _replay_line(original: Node, text: str, sampling: Sampling) -> str:
    """Whether a replay made the original's text again, and where it parted if not."""
    if text == original.content:
        return f"the same text as {f.ref(original.label)}"
    common = next((i for i, (a, b) in enumerate(zip(text, original.content, strict=False))
                   if a != b), min(len(text), len(original.content)))
    why = "" if sampling.seed is not None else " (it had no seed: → continue seed:N)"
    return f"not the text of {f.ref(original.label)}: they part after {common} characters{why}"


def regenerate(ctx: Ctx, cmd: syntax.Regenerate) -> Result:
    """The request that made a model's node, again: the same model (profile), prompt
    (the path to its parent) and settings, its seed included, as a new sibling."""
    node = ctx.text_node(cmd.node, "an annotation is not generated: → continue from {on} "
                         "makes new continuations of the node it annotates")
    made = ctx.ws.generations([node.id])
    if not made or node.parent is None:
        raise LoomError("NOT_FOUND", f"[{node.label}] was not made by a model request",
                        "→ continue from its parent makes new ones")
    gen = made[0]
    params = dict(gen.params or {})
    fill = params.get("fill")
    if isinstance(fill, dict):  # a version → fill made: not a continuation of its parent
        original = ctx.ws.find_node(str(fill.get("node") or ""))
        label = original.label if original is not None else node.label
        raise LoomError("INVALID_SYNTAX", f"[{node.label}] was made by → fill, not by a "
                        "continue", f"→ fill {label} at:{fill.get('start')}-{fill.get('end')}"
                        " makes new versions of the span")
    asked = Sampling.asked_in(params)
    sampling = asked.model_copy(update={  # this one continuation, as it was sampled
        "n": 1, "logprobs": None,
        "seed": None if asked.seed is None else asked.seed + gen.completion_index})
    profile = params.get("profile")
    same = (profile,) if isinstance(profile, str) and isinstance(ctx.subject, ModelChoices) \
        else ()
    return _generate(ctx, ctx.ws.node(node.parent), sampling, same, replay_of=node)


def _store_generation(ctx: Ctx, source: Node, outcome: object,
                      completions: list, extra: dict | None = None) -> list[Node]:
    """The n results become model-authored children with provenance, in one transaction.
    Token logprobs go to the compact per-token store (``store/node_tokens.py``), not the JSON."""
    subject = ctx.ws.subject()
    created: list[Node] = []
    with ctx.ws.all_or_nothing():
        raw_id = None
        raw = getattr(outcome, "raw", None)
        if raw:
            raw_id = ctx.ws.save_raw_response(json.dumps(without_logprobs(raw),
                                                         ensure_ascii=False, default=str))
        usage = getattr(outcome, "usage", None)
        usage_d = usage.model_dump() if hasattr(usage, "model_dump") else (usage or {})
        params = dict(getattr(outcome, "params", {}) or {})
        for c in completions:
            node = ctx.ws.add_node(ctx.tree, source, c.text, subject)
            c_usage = getattr(c, "usage", None)
            made = c if getattr(c, "model", None) else outcome  # one of several models
            asked = {**(getattr(c, "params", None) or params), **(extra or {})}
            k = asked.get("logprobs") or 0
            ctx.ws.record_generation(
                node.id, provider=str(getattr(made, "provider", "")),
                model=str(getattr(made, "model", "")),
                params=asked,
                usage=(c_usage.model_dump() if hasattr(c_usage, "model_dump") else usage_d),
                latency_ms=getattr(outcome, "latency_ms", None), completion_index=c.index,
                logprobs=None, raw=raw_id, created=ctx.now,
            )
            token_store.save_entries(ctx.ws, node, getattr(c, "logprobs", None), k)
            created.append(node)
    return created


def without_logprobs(raw: list) -> list:
    """The raw chunks without their logprobs, which the token store keeps compactly (in
    the chunks they are most of the bytes: every token with its k alternatives as JSON)."""
    out = []
    for chunk in raw:
        choices = chunk.get("choices") if isinstance(chunk, dict) else None
        if isinstance(choices, list) and any(isinstance(c, dict) and c.get("logprobs")
                                             for c in choices):
            chunk = {**chunk, "choices": [
                {**c, "logprobs": "(in node_tokens)"} if isinstance(c, dict) and
                c.get("logprobs") else c for c in choices]}
        out.append(chunk)
    return out


def respond(ctx: Ctx, cmd: syntax.Respond) -> Result:
    source = ctx.text_node(cmd.node, 'nothing continues from a note: respond to the node it '
                           'annotates, → respond {on} "…", or add a note: → annotate {on} "…"')
    if not cmd.content.strip():
        raise LoomError("INVALID_SYNTAX", "respond needs some content",
                        'use → respond [localId] "[content]"')
    with ctx.guarded((source, True)):
        node = ctx.ws.add_node(ctx.tree, source, cmd.content, ctx.me, role=_ROLE[cmd.as_])
    ctx.ws.set_position(ctx.me, ctx.tree, node, node)
    return Result.success(
        f.ok(f"created {f.ref(node.label)} as {cmd.as_} from {f.ref(source.label)}",
             f"switched to {f.ref(node.label)}"),
        created=[node.id], node=node.id,
    )


_ROLE = {"continuation": "primary", "context": "context", "instruction": "instruction"}


def annotate(ctx: Ctx, cmd: syntax.Annotate) -> Result:
    target = ctx.resolve(cmd.node)
    if not cmd.content.strip():
        raise LoomError("INVALID_SYNTAX", "an annotation needs some content",
                        'use → annotate [localId] "[content]"')
    with ctx.guarded((target, False)):
        ann = ctx.ws.add_node(ctx.tree, target, cmd.content, ctx.me, kind="annotation")
    return Result.success(f.ok(f"annotation {f.ref(ann.label)} added to {f.ref(target.label)}"),
                          created=[ann.id], node=target.id)


def link(ctx: Ctx, cmd: syntax.MakeLink) -> Result:
    source = ctx.resolve(cmd.node)
    t = cmd.target
    ws = ctx.ws
    if t.kind == "doc":
        ctx.require(perms.DOC_READ, "link documents")
        doc = ws.document(t.doc or "")
        if t.section:
            from loom.model.documents import find_section, section_name

            sec = find_section(doc.content, t.section)
            if isinstance(sec, list):
                raise LoomError("NOT_FOUND", f"section §{t.section} is not in "
                                f"{f.doc_ref(doc.name)}", _section_hint(sec))
            section = section_name(t.section)  # kept as named, found by it (SPEC-NOTES 16)
        else:
            section = None
        ws.add_link(ctx.tree, source, ctx.me, target_kind="doc", target_doc=doc,
                    section=section, note=cmd.note)
        shown = f.doc_ref(doc.name, section)
    elif t.kind == "tree":
        other = ws.find_tree(t.tree or "")
        if other.id != ctx.tree.id:
            ctx.require(perms.CROSS_TREE, "link across trees")
        if t.node:
            target = ws.resolve(other, t.node)
            ws.add_link(ctx.tree, source, ctx.me, target_kind="node", target_node=target,
                        note=cmd.note)
            shown = f'{f.ref(target.label)} in tree:"{other.title}"'
        else:
            ws.add_link(ctx.tree, source, ctx.me, target_kind="tree", target_tree=other,
                        note=cmd.note)
            shown = f'tree:"{other.title}"'
    else:
        try:
            target = ctx.resolve(t.node)
        except CrossTree as err:  # link reaches other trees by naming them
            raise LoomError("CROSS_TREE", err.message,
                            f'use → link {source.label} to tree:"{err.tree_title}" '
                            f"node:{err.node} (requires cross-tree permission)") from None
        if target.id == source.id:
            raise LoomError("INVALID_SYNTAX", "a node cannot link to itself")
        ws.add_link(ctx.tree, source, ctx.me, target_kind="node", target_node=target,
                    note=cmd.note)
        shown = f.ref(target.label)
    return Result.success(f.ok(f"linked {f.ref(source.label)} ↔ {shown}"), node=source.id)


def _section_hint(candidates: list) -> str | None:
    if not candidates:
        return "the document has no headings; use lines:A-B instead"
    return "sections: " + ", ".join(f"§{s.id}" for s in candidates[:8])


def edit(ctx: Ctx, cmd: syntax.Edit) -> Result:
    original = ctx.text_node(cmd.node, 'annotations are edited by annotating again: '
                             '→ annotate {on} "[content]"')
    if not cmd.content.strip():  # (as respond and annotate refuse empty content)
        raise LoomError("INVALID_SYNTAX", "an edit needs some content",
                        f'use → edit {original.label} "[new_content]"; to hide a node: '
                        f"→ prune {original.label}")
    if cmd.content == original.content:
        return Result.success(f.ok(f"{f.ref(original.label)} unchanged (same content)"),
                              node=original.id)
    current = ctx.current_path()
    on_path = any(n.id == original.id for n in current)
    with ctx.guarded((original, False)):
        version = ctx.ws.add_version(ctx.tree, original, cmd.content, ctx.me)
    if ctx.tree.mode == "buffer":
        if on_path:  # the version takes the original's place on your path; you stay put
            node, tip = ctx.position()
            ctx.ws.set_position(ctx.me, ctx.tree,
                                version if node.id == original.id else node,
                                version if tip.id == original.id else tip)
        return Result.success(
            f.ok(f"created version {f.ref(version.label)} from {f.ref(original.label)}",
                 "downstream nodes preserved via hyperedge"),
            created=[version.id], node=version.id,
        )
    ctx.ws.set_position(ctx.me, ctx.tree, version, version)
    return Result.success(
        f.ok(f"created branch {f.ref(version.label)} from {f.ref(original.label)}",
             "conversation continues from edit point"),
        created=[version.id], node=version.id,
    )
