"""``loom stats TREE``: which models the writer's choices favour, and how much the display
slot sways them.

Every comparison the people's preference log holds (``preferences.comparisons``: picks,
accepted suggestions, switches, edits of model text, marks) is one game between the models that
wrote the two nodes (a human's text is the player ``human``; a game between two nodes of
one model says nothing about models and is left out). Each model's win rate is its wins
over its games; its Bradley–Terry strength is fitted with Hunter's MM algorithm, with one
virtual win and one virtual loss against a reference player of strength 1 (so a model
that never lost still has a finite strength, and one with few games stays near 1), and
shown also on the Elo scale (400·log10). The position effect is, per display slot, how
often the node shown there was the one chosen, beside the rate no bias would give (the
mean of 1/number shown over the showings that had that slot)."""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from loom.interchange.preferences import Comparison, comparisons, writers_events
from loom.store.schema import Tree
from loom.store.workspace import Workspace

HUMAN = "human"


@dataclass(frozen=True)
class ModelRow:
    model: str
    wins: int
    losses: int
    strength: float

    @property
    def win_rate(self) -> float:
        games = self.wins + self.losses
        return self.wins / games if games else 0.0

    @property
    def elo(self) -> float:
        return 400 * math.log10(self.strength)


@dataclass(frozen=True)
class SlotRow:
    slot: int
    chosen: int  # showings where the node in this slot was chosen
    showings: int  # showings with at least this many nodes
    expected: float  # the rate with no position bias

    @property
    def rate(self) -> float:
        return self.chosen / self.showings if self.showings else 0.0


@dataclass(frozen=True)
class Stats:
    choices: int
    models: list[ModelRow]
    slots: list[SlotRow]


def bradley_terry(games: Iterable[tuple[str, str]], iterations: int = 500,
                  prior: float = 1.0) -> dict[str, float]:
    """Strengths from (winner, loser) games by MM, each player given ``prior`` virtual
    wins and losses against a fixed reference of strength 1; geometric mean not forced
    (the reference anchors the scale)."""
    wins: dict[str, float] = defaultdict(float)
    met: dict[tuple[str, str], int] = defaultdict(int)
    players: set[str] = set()
    for winner, loser in games:
        wins[winner] += 1
        met[(winner, loser)] += 1
        met[(loser, winner)] += 1
        players |= {winner, loser}
    p = dict.fromkeys(players, 1.0)
    opponents: dict[str, list[tuple[str, int]]] = defaultdict(list)
    for (a, b), n in met.items():
        opponents[a].append((b, n))
    for _ in range(iterations):
        new = {}
        for i in players:
            denom = sum(n / (p[i] + p[j]) for j, n in opponents[i]) + 2 * prior / (p[i] + 1)
            new[i] = (wins[i] + prior) / denom
        change = max(abs(new[i] - p[i]) for i in players) if players else 0.0
        p = new
        if change < 1e-10:
            break
    return p


def position_effect(found: Sequence[Comparison]) -> list[SlotRow]:
    """Per display slot, how often the node shown there was chosen. A showing counts once
    however many nodes it rejected (its comparisons share the slot and the count)."""
    showings: dict[int, tuple[int, int]] = {}
    for c in found:
        if c.slot is not None and c.shown:
            showings.setdefault(c.event, (c.slot, c.shown))
    seen: dict[int, int] = defaultdict(int)
    chosen: dict[int, int] = defaultdict(int)
    expected: dict[int, float] = defaultdict(float)
    for slot, shown in showings.values():
        chosen[slot] += 1
        for s in range(1, shown + 1):
            seen[s] += 1
            expected[s] += 1 / shown
    return [SlotRow(s, chosen[s], seen[s], expected[s] / seen[s]) for s in sorted(seen)]


def stats(ws: Workspace, trees: Sequence[Tree]) -> Stats:
    """The per-model table and the position effect of these trees' recorded choices."""
    found = comparisons(ws, writers_events(ws, trees))
    ids = list({i for c in found for i in (c.chosen, c.rejected)})
    nodes = {n.id: n for i in range(0, len(ids), 900) for n in ws.nodes_by_id(ids[i:i + 900])}
    originals = {n.id: n.version_of or n.id for n in nodes.values()}
    made: dict[str, str] = {}
    for gen in ws.generations(list(set(originals.values()))):
        made.setdefault(gen.node, gen.model)

    def player(node_id: str) -> str | None:
        node = nodes.get(node_id)
        if node is None:
            return None
        if node.author_type != "model":
            return HUMAN
        return made.get(originals[node_id]) or ws.participant_name(node.author_id)

    games = []
    for c in found:
        a, b = player(c.chosen), player(c.rejected)
        if a is not None and b is not None and a != b:
            games.append((a, b))
    strengths = bradley_terry(games)
    tally: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    for winner, loser in games:
        tally[winner][0] += 1
        tally[loser][1] += 1
    rows = sorted((ModelRow(m, w, lost, strengths[m]) for m, (w, lost) in tally.items()),
                  key=lambda r: (-r.strength, r.model))
    return Stats(len(found), rows, position_effect(found))


def render(tree_titles: Sequence[str], s: Stats) -> str:
    """``loom stats``' text."""
    where = ", ".join(f'"{t}"' for t in tree_titles)
    lines = [f"✓ preferences in {where}: {s.choices} comparison"
             f"{'' if s.choices == 1 else 's'}"]
    if s.models:
        width = max(len("model"), *(len(r.model) for r in s.models))
        lines += ["", f"{'model':<{width}}  wins  losses  win rate  strength (BT)    elo"]
        for r in s.models:
            lines.append(f"{r.model:<{width}}  {r.wins:>4}  {r.losses:>6}  "
                         f"{r.win_rate:>7.0%}  {r.strength:>13.3f}  {r.elo:>+5.0f}")
    else:
        lines += ["", "no comparisons between different models yet"]
    if s.slots:
        lines += ["", "position (display slot)  chosen  shown  rate  with no bias"]
        for r in s.slots:
            lines.append(f"slot {r.slot:<19} {r.chosen:>6}  {r.showings:>5}  {r.rate:>4.0%}"
                         f"  {r.expected:>12.0%}")
    else:
        lines += ["", "no recorded display order yet (pickers and suggestions record it)"]
    return "\n".join(lines)
