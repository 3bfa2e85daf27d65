"""``→ split a7x2 at:57 [alt:"…"]``: cut a node in two, optionally branching there with an
alternative token (what the model almost wrote, one action away)."""

from __future__ import annotations

from loom.commands import syntax
from loom.commands.context import Ctx
from loom.commands.results import Result
from loom.errors import LoomError
from loom.model import tokens as T
from loom.render import formats as f
from loom.render.text import preview, quote
from loom.store import node_tokens as token_store
from loom.store.schema import Generation, Node, Participant


def split(ctx: Ctx, cmd: syntax.Split) -> Result:
    ws, tree = ctx.ws, ctx.tree
    node = ctx.text_node(cmd.node, "split a node of the text, such as the one it annotates: "
                         "→ split {on} at:[offset]")
    if node.parent is None or node.kind == "root":
        raise LoomError("INVALID_SYNTAX", "the root cannot be split",
                        "split a node below it")
    if node.pruned:
        raise LoomError("NOT_FOUND", f"[{node.label}] was already split or pruned",
                        "split the node the path shows now")
    size = len(node.content)
    if cmd.grow:
        return _grow(ctx, node, cmd)
    if cmd.at == 0 and cmd.alt:
        return _beside(ctx, node, cmd)
    if not 0 < cmd.at < size:
        where = f"1 to {size - 1}" if size > 1 else "it is too short to split"
        raise LoomError("LIMIT_EXCEEDED", f"at:{cmd.at} is outside [{node.label}] ({where})",
                        "give a character offset inside the node's text")
    if cmd.alt is not None and not cmd.alt:
        raise LoomError("INVALID_SYNTAX", "an alternative needs some text",
                        'use → split [localId] at:[offset] alt:"[token]"')
    ctx.guard(node, extends=False)
    tokens = token_store.tokens(ws, node) or []
    k = token_store.k_of(ws, node.id) or T.DEFAULT_K
    scorer = token_store.scorer_of(ws, node.id)
    head_tokens, tail_tokens = T.split(tokens, cmd.at)
    gens = ws.generations([node.id])
    alt: Node | None = None
    with ws.all_or_nothing():
        head, tail = ws.split_node(tree, node, cmd.at, ctx.me)
        token_store.save(ws, head.id, head_tokens, k, scorer)
        token_store.save(ws, tail.id, tail_tokens, k, scorer)
        for g in gens:
            for half in (head, tail):
                ws.copy_generation(g, half.id, ctx.now)
        if cmd.alt is not None:
            alt = _alternative(ctx, node, head, tokens, cmd, k, gens)
            ctx.ws.set_position(ctx.me, tree, alt, alt)
    lines = [f"split {f.ref(node.label)} at {cmd.at}: {f.ref(head.label)} "
             f"{quote(preview(head.content))} → {f.ref(tail.label)} "
             f"{quote(preview(tail.content))}"]
    created = [head.id, tail.id]
    if alt is not None:
        lines.append(f"alternative {f.ref(alt.label)} {quote(preview(alt.content))}, "
                     f"switched to {f.ref(alt.label)}")
        created.append(alt.id)
    return Result.success(f.ok(*lines), created=created, head=head.id, tail=tail.id,
                          alternative=alt.id if alt is not None else None,
                          node=(alt or tail).id, original=node.id)


def _grow(ctx: Ctx, tail: Node, cmd: syntax.Split) -> Result:
    """Move the cut between ``tail`` and the head before it ``cmd.at`` characters into the
    tail: the head takes them (the same two nodes, one node grown)."""
    ws = ctx.ws
    head = ws.node(tail.parent or "")
    why = ws.split_unbuilt(head, tail, ctx.me)
    if why is not None:
        raise LoomError("CONFLICT", why, f"split [{tail.label}] instead")
    if not 0 < cmd.at < len(tail.content):
        raise LoomError("LIMIT_EXCEEDED", f"at:{cmd.at} is outside [{tail.label}]",
                        "give a character offset inside the node's text")
    ctx.guard(tail, extends=False)
    original = ws.node((head.extra or {})["split_from"])
    at = len(head.content) + cmd.at
    tokens = token_store.tokens(ws, original) or []
    k = token_store.k_of(ws, original.id) or T.DEFAULT_K
    scorer = token_store.scorer_of(ws, original.id)
    head_tokens, tail_tokens = T.split(tokens, at)
    with ws.all_or_nothing():
        head, tail = ws.move_split(ctx.tree, head, tail, at, ctx.me)
        token_store.replace(ws, head.id, head_tokens, k, scorer)
        token_store.replace(ws, tail.id, tail_tokens, k, scorer)
    return Result.success(
        f.ok(f"{f.ref(head.label)} grew to {quote(preview(head.content))} → "
             f"{f.ref(tail.label)} {quote(preview(tail.content))}"),
        created=[], head=head.id, tail=tail.id, alternative=None, node=tail.id,
        original=original.id)


def _beside(ctx: Ctx, node: Node, cmd: syntax.Split) -> Result:
    """``at:0`` with an alternative: nothing to split, the alternative is a sibling of the
    node (the model's other choice for its first token)."""
    ctx.guard(node, extends=False)
    ws = ctx.ws
    tokens = token_store.tokens(ws, node) or []
    with ws.all_or_nothing():
        alt = _alternative(ctx, node, ws.node(node.parent or ""), tokens, cmd,
                           token_store.k_of(ws, node.id) or T.DEFAULT_K,
                           ws.generations([node.id]))
        ws.set_position(ctx.me, ctx.tree, alt, alt)
    return Result.success(
        f.ok(f"alternative {f.ref(alt.label)} {quote(preview(alt.content))} beside "
             f"{f.ref(node.label)}, switched to {f.ref(alt.label)}"),
        created=[alt.id], head=None, tail=None, alternative=alt.id, node=alt.id,
        original=node.id)


def _alternative(ctx: Ctx, original: Node, head: Node, tokens: list[T.Token],
                 cmd: syntax.Split, k: int, gens: list[Generation]) -> Node:
    """The alternative as a sibling of the tail. One the model weighed at that place (a
    stored alternative of the token starting there) is the model's text, with that
    token's probabilities: for scored text (a writer's words, ``→ score``) the subject
    model, whose choice it is, else the model that wrote the tokens (:func:`_weigher`);
    anything else is the actor's own text."""
    ws = ctx.ws
    here = T.token_at(tokens, cmd.at)
    weighed = dict(here.alternatives) if here is not None and here.start == cmd.at else {}
    if here is not None and cmd.alt in weighed:
        scorer = token_store.scorer_of(ws, original.id)
        source: Node | None = None
        if scorer is not None:  # a writer's words, scored: the subject model's choice
            author = ws.subject()
        else:
            author, source = _weigher(ctx, original)
        alt = ws.add_node(ctx.tree, head, cmd.alt, author)
        token_store.save(ws, alt.id, [T.Token(0, cmd.alt, weighed[cmd.alt],
                                              here.alternatives)], k, scorer)
        if source is not None:
            records = gens if source.id == original.id else ws.generations([source.id])
            for g in records[-1:]:
                ws.copy_generation(g, alt.id, ctx.now, alternative_of=original.id, at=cmd.at)
        return alt
    return ws.add_node(ctx.tree, head, cmd.alt or "", ctx.me)


def _weigher(ctx: Ctx, node: Node) -> tuple[Participant, Node]:
    """Who wrote an alternative the model weighed at a token of ``node``, and the node its
    generation is recorded on: the model that wrote the tokens — ``node``'s author, or for
    a person's version of model text, the author of the model text it was edited from
    (the person never wrote the alternative). Where this process may not write in that
    model's name (a collaborator with a database role of its own, on a team's database:
    docs/team.md), the workspace's model writes it: the generation still says which
    model weighed it."""
    ws, source = ctx.ws, node
    for _ in range(1000):  # (an edit of an edit of … model text)
        if source.author_type == "model" or not source.edited_from:
            break
        earlier = ws.find_node(source.edited_from)
        if earlier is None:
            break
        source = earlier
    author = ws.participant_by_id(source.author_id) if source.author_type == "model" \
        else None
    if author is None or author.kind != "model" or not ws.may_write_as(author):
        author = ws.subject()
    return author, source

