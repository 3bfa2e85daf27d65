"""The preference log as training data (``loom export-preferences``): pairs in the
``{"prompt", "chosen", "rejected"}`` shape preference-training libraries take (TRL's DPO
trainer), or the raw event log as JSON lines.

A pair is a choice between two continuations of one branch point: ``prompt`` is the text of
the path up to that point (buffer trees: the nodes' text as written; dialogue trees: the
messages, a blank line between), ``chosen`` and ``rejected`` the two nodes' own text. Pairs
come from a sibling picked in a picker or accepted as a suggestion (over each other one
shown), a switch from one sibling to another (over the one left; a switch the editor made
for a pick it recorded itself is not counted twice), an edit of a model's text (the human's
version over the model's), and marks: among one participant's siblings, each rated +1 or
bookmarked over each rated -1 or still pruned. Only trees the exporting participant may
read are read; deleted nodes are left out; every text is redacted."""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass

from pydantic import BaseModel

from loom.errors import LoomError
from loom.model import marks
from loom.model import permissions as perms
from loom.model import preferences as prefs
from loom.redact import redact, redact_obj
from loom.store.preferences import Event
from loom.store.schema import Node, Participant, Tree
from loom.store.workspace import Workspace

#: A switch this close to a pick or an accept of the same node by the same participant is
#: the editor carrying that choice out, not a second choice.
SAME_CHOICE_S = 5.0


class Pair(BaseModel):
    """One preference pair, as TRL's DPO trainer reads it."""

    prompt: str
    chosen: str
    rejected: str


@dataclass(frozen=True)
class Comparison:
    """One node preferred over a sibling (``parent`` their branch point)."""

    participant: str
    tree: str
    parent: str
    chosen: str
    rejected: str
    kind: str
    slot: int | None = None  # the chosen node's display slot (1-based), where known
    shown: int | None = None  # how many were shown
    event: int = 0  # the event it comes from (0: marks)


def readable_trees(ws: Workspace, participant: Participant, refs: Sequence[str] = ()
                   ) -> tuple[list[Tree], list[str]]:
    """The trees to export (``refs``, else every tree) that ``participant`` may read, and
    a line for each one left out. Named trees that may all not be read: the error."""
    trees = [ws.find_tree(r) for r in refs] if refs else [t for t, _ in ws.trees()]
    keep, left = [], []
    first_error: LoomError | None = None
    for tree in trees:
        try:
            perms.require_read(participant.permissions or [], tree=tree.id,
                               home=participant.current_tree or tree.id)
        except LoomError as err:
            first_error = first_error or err
            left.append(f'tree "{tree.title}" left out: {err.message}')
            continue
        keep.append(tree)
    if refs and not keep and first_error is not None:
        raise first_error
    return keep, left


def _same_choice(events: list[Event]) -> set[int]:
    """Switches that carried out a recorded pick or accept (their ids)."""
    picks = defaultdict(list)
    for e in events:
        if e.kind in (prefs.SIBLING_PICK, prefs.SUGGESTION_ACCEPTED) and e.chosen:
            picks[(e.participant, e.chosen)].append(e.created)
    return {e.id for e in events if e.kind == prefs.SWITCH and any(
        abs(t - e.created) <= SAME_CHOICE_S for t in picks.get((e.participant, e.chosen), ()))}


def comparisons(ws: Workspace, events: list[Event]) -> list[Comparison]:
    """Every (chosen, rejected) comparison the events say, in the events' order (marks'
    comparisons last)."""
    skip = _same_choice(events)
    out: list[Comparison] = []
    for e in events:
        if e.id in skip or not e.chosen or not e.parent:
            continue
        if e.kind in prefs.CHOICES or e.kind == prefs.EDIT_OF_MODEL_TEXT:
            slot = e.shown.index(e.chosen) + 1 if e.chosen in e.shown else None
            for r in e.rejected:
                if r != e.chosen:
                    out.append(Comparison(e.participant, e.tree, e.parent, e.chosen, r,
                                          e.kind, slot, len(e.shown) or None, e.id))
    out += _mark_comparisons(ws, events)
    return out


def _mark_comparisons(ws: Workspace, events: list[Event]) -> list[Comparison]:
    """Among one participant's siblings: rated +1 or bookmarked over rated -1 or pruned
    (each node's latest rating and bookmark; a prune counts while the node is pruned)."""
    verdict: dict[tuple[str, str, str], dict[str, int]] = {}
    where: dict[str, str] = {}
    for e in events:
        if e.kind not in (prefs.RATE, prefs.BOOKMARK, prefs.PRUNE) or not e.node \
                or not e.parent:
            continue
        marks_of = verdict.setdefault((e.participant, e.parent, e.node), {})
        where[e.node] = e.tree
        if e.kind == prefs.RATE:
            marks_of["rating"] = int(e.detail.get("rating", 0))
        elif e.kind == prefs.BOOKMARK:
            marks_of["bookmark"] = 1 if e.detail.get("on", True) else 0
        else:
            marks_of["pruned"] = 1
    pruned = {n.id for n in _nodes(ws, [k[2] for k, v in verdict.items() if "pruned" in v])
              if n.pruned}
    sides: dict[tuple[str, str], tuple[list[str], list[str]]] = defaultdict(lambda: ([], []))
    for (who, parent, node), v in verdict.items():
        rating = v.get("rating", 0)
        good = rating > 0 or (rating == 0 and v.get("bookmark") == 1)
        bad = rating < 0 or (rating == 0 and node in pruned)
        if good != bad:
            sides[(who, parent)][0 if good else 1].append(node)
    return [Comparison(who, where[g], parent, g, b, "marks")
            for (who, parent), (goods, bads) in sides.items() for g in goods for b in bads]


def _nodes(ws: Workspace, ids: Iterable[str]) -> list[Node]:
    unique = list(dict.fromkeys(ids))
    return [n for i in range(0, len(unique), 900) for n in ws.nodes_by_id(unique[i:i + 900])]


def prefix_text(ws: Workspace, tree: Tree, parent: Node) -> str:
    """The text of the path up to and including ``parent`` (a branch point)."""
    path = [n for n in ws.path(parent, prefer=(parent.id,))
            if not n.excluded and n.kind != "annotation"]
    if tree.mode == "buffer":
        return "".join(n.content for n in path)
    return "\n\n".join(n.content for n in path if n.content.strip())


def writers_events(ws: Workspace, trees: Sequence[Tree], participant: str | None = None
                   ) -> list[Event]:
    """The events of these trees that say what people chose: one participant's (an id),
    else every human's (a model's own moves, an exploration's prunes, are no writer's
    choice; the raw log keeps them)."""
    events = ws.preference_events([t.id for t in trees], participant)
    if participant is not None:
        return events
    models = {p.id for p in ws.participants(kind="model")}
    return [e for e in events if e.participant not in models]


def pairs(ws: Workspace, trees: Sequence[Tree], participant: str | None = None
          ) -> Iterator[Pair]:
    """The DPO pairs of these trees' events (of one participant id, if given; else of
    every human)."""
    events = writers_events(ws, trees, participant)
    found = comparisons(ws, events)
    nodes = {n.id: n for n in _nodes(ws, [i for c in found
                                          for i in (c.parent, c.chosen, c.rejected)])}
    by_id = {t.id: t for t in trees}
    prompts: dict[str, str] = {}
    for c in found:
        parent, chosen, rejected = nodes.get(c.parent), nodes.get(c.chosen), \
            nodes.get(c.rejected)
        if parent is None or chosen is None or rejected is None or any(
                marks.deleted_of(n.extra) for n in (parent, chosen, rejected)):
            continue
        if chosen.content == rejected.content:
            continue
        if c.parent not in prompts:
            prompts[c.parent] = redact(prefix_text(ws, by_id[c.tree], parent))
        yield Pair(prompt=prompts[c.parent], chosen=redact(chosen.content),
                   rejected=redact(rejected.content))


def event_lines(ws: Workspace, trees: Sequence[Tree], participant: str | None = None
                ) -> Iterator[str]:
    """The raw event log of these trees, one JSON object a line (redacted)."""
    for e in ws.preference_events([t.id for t in trees], participant):
        yield json.dumps(redact_obj(e.as_json()), ensure_ascii=False)


def pair_lines(ws: Workspace, trees: Sequence[Tree], participant: str | None = None
               ) -> Iterator[str]:
    for pair in pairs(ws, trees, participant):
        yield json.dumps(pair.model_dump(), ensure_ascii=False)
