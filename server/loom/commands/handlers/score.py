"""``→ score a7x2`` / ``→ score branch:a7x2``: how likely a model finds existing text, a
token at a time (the writer's words, imported or edited text), stored as model text's
probabilities are (``store/node_tokens.py``), so the editors colour it, hover shows a
token's alternatives, and a split there can branch with the model's own choice.

It asks a model, as ``continue`` does, and writes only token data (no node, no move):
``loom_generate`` (the catalogue), and no branch lock. Model nodes keep the probabilities
their generation gave; every other node of the text is scored, again if it was before (the
text before it may have changed since). Scores belong to the node's text: a version is
new text and has none until it is scored itself; the original keeps its own.
"""

from __future__ import annotations

from loom.commands import syntax
from loom.commands.context import Ctx, Scorer, ScoreRequest
from loom.commands.handlers.content import named_models, picked_models
from loom.commands.results import Result
from loom.errors import LoomError
from loom.model import tokens as T
from loom.render import formats as f
from loom.render.text import odds, plural, quote, whole_words
from loom.store import node_tokens as token_store
from loom.store.schema import Node
from loom.store.workspace import NodeRow

#: The least likely spans the result names.
SHOWN = 3


def score(ctx: Ctx, cmd: syntax.Score) -> Result:
    tree = ctx.tree
    if tree.mode != "buffer":
        raise LoomError("INVALID_SYNTAX", "score reads a buffer tree's prose, and this tree "
                        "is a dialogue", "a dialogue's turns reach a model as chat "
                        "messages, whose probabilities no chat API gives")
    if not isinstance(ctx.subject, Scorer):
        raise LoomError("MODEL_ERROR", "no model here can score text",
                        "set up the local model (loom model setup)")
    path, targets = _targets(ctx, cmd)
    # the model named, else the one picked for this tree (as continue asks it)
    model = (named_models(ctx, (cmd.model,)) if cmd.model else picked_models(ctx) or (None,))[0]
    ws = ctx.ws
    keeps = _generated(ctx, targets)
    scorers = token_store.scorers(ws, [n.id for n in targets])
    todo = [n for n in targets if n.id not in keeps
            and not (cmd.unscored and scorers.get(n.id) is not None)]
    kept_lines = [f"{f.ref(n.label)} keeps its generation's probabilities"
                  for n in targets if n.id in keeps]
    if not todo:
        what = "already scored" if cmd.unscored and not keeps else "model text"
        return Result.success(f.ok(f"nothing to score: {_labels(targets)} "
                                   f"{'is' if len(targets) == 1 else 'are'} {what}",
                                   *kept_lines), scored=[], tokens=0)
    first = next(i for i, n in enumerate(path) if n.id == todo[0].id)
    last = next(i for i, n in enumerate(path) if n.id == todo[-1].id)
    wanted = {n.id for n in todo}
    before = "".join(n.content for n in path[:first])
    prefix = f"{tree.system_context}\n\n{before}" if tree.system_context else before
    pieces = [(n.content, n.id in wanted) for n in path[first:last + 1]]
    scored = ctx.subject.score(ScoreRequest(tree, prefix, pieces, model=model,
                                            cancel=ctx.cancel))
    if ctx.cancel is not None and ctx.cancel.is_set():
        raise LoomError("MODEL_ERROR", "the scoring was cancelled", "nothing was written")
    count = 0
    made: list[tuple[NodeRow, list[T.Token]]] = []
    with ws.all_or_nothing():
        for node, tokens in zip(todo, scored.tokens, strict=True):
            token_store.save_scores(ws, node, tokens, scored.k, scored.scorer, ctx.me.id)
            count += len(tokens)
            made.append((node, tokens))
    return Result.success(
        f.ok(f"scored {_labels(todo)} with {scored.scorer}: {plural(count, 'token')}"
             + _mean([t for _, ts in made for t in ts]), *_least(made), *kept_lines),
        scored=[n.id for n in todo], tokens=count, scorer=scored.scorer,
        kept=sorted(keeps))


def _targets(ctx: Ctx, cmd: syntax.Score) -> tuple[list[NodeRow], list[NodeRow]]:
    """The path the text is read along, and the nodes of it to score (in path order)."""
    if cmd.branch is not None:
        through = ctx.text_node(cmd.branch, "score the text: → score branch:{on}")
        path = [n for n in ctx.branch_path(through) if not n.excluded]
        targets = [n for n in path if n.content and n.kind != "annotation"]
        return path, targets
    node = ctx.in_place(ctx.text_node(cmd.node, "an annotation is not the text: → score {on}"))
    path = [n for n in ctx.branch_path(node) if not n.excluded or n.id == node.id]
    at = next((i for i, n in enumerate(path) if n.id == node.id), None)
    if at is None:  # (a node the path walk cannot reach: its own ancestors, then)
        path = ctx.ws.path(node)
        at = len(path) - 1
    path = path[:at + 1]
    if not path[at].content:
        raise LoomError("INVALID_SYNTAX", f"[{node.label}] has no text to score",
                        "→ score branch:[localId] scores every node of a path")
    return path, [path[at]]


def _generated(ctx: Ctx, nodes: list[NodeRow]) -> set[str]:
    """The model nodes with their generation's own token data (not versions)."""
    ws = ctx.ws
    rows = token_store.scorers(ws, [n.id for n in nodes])
    out = set()
    for n in nodes:
        if n.author_type != "model" or n.edited_from:
            continue
        if n.id in rows:
            if rows[n.id] is None:
                out.add(n.id)
        elif token_store.tokens(ws, n):  # stored before v6, or imported with logprobs
            out.add(n.id)
    return out


def _labels(nodes: list[NodeRow] | list[Node]) -> str:
    shown = " ".join(f.ref(n.label) for n in nodes[:6])
    return shown + (f" and {len(nodes) - 6} more" if len(nodes) > 6 else "")


def _mean(tokens: list[T.Token]) -> str:
    mean = T.mean_probability(tokens)
    return "" if mean is None else f", {odds(mean)} a token on average"


def _least(made: list[tuple[NodeRow, list[T.Token]]]) -> list[str]:
    found = [(s, node) for node, tokens in made for s in T.surprises(tokens)]
    found.sort(key=lambda pair: pair[0].logprob)
    if not found:
        return []
    parts = []
    for s, node in found[:SHOWN]:
        start, end = whole_words(node.content, s.start, s.end)
        text = node.content[start:end] or node.content[s.start:s.end]
        parts.append(f"{quote(text)} in {f.ref(node.label)} {odds(s.probability)}")
    more = len(found) - SHOWN
    return ["least likely: " + ", ".join(parts) + (f" (and {more} more)" if more > 0 else "")]
