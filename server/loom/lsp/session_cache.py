"""Per-session caches of what editor requests read again and again: the path
root → tip, rendered views of ``loom:`` URIs, and model originals of version nodes.

A 2,000-node path is one recursive query (~20 ms) and its rendering a few more; opening,
status, hovers and the change-log loop would each pay that again. The caches are checked
against the change log on every use (``Workspace.follow``: one ``max(seq)`` read when
nothing happened): a change that can alter a path (a version, a split, a prune, an
import, a tree's mode…) drops the entries of its tree; the kinds that cannot (a new
continuation, a summary, a position, a lock, memory, links…) keep them. A tip that
moved to a new child or a sibling of a cached path extends that path by one step instead
of walking it again: nothing here is O(path) per request once a path is known.
"""

from __future__ import annotations

import dataclasses
from collections import OrderedDict
from collections.abc import Callable, Sequence
from typing import Any

from loom.lsp.views import RenderedView, render
from loom.store.schema import Node, Participant
from loom.store.workspace import Workspace

#: Change kinds that never change which nodes a path root → tip holds, nor their text.
#: (A continuation adds a node below or beside a path; a version or split of a node on it
#: does change it, and is not here.)
PATH_SAFE = ("node.continuation", "node.annotation", "node.summary", "tree.summary",
             "lock.", "memory.", "agent.turn", "participant.", "link.", "document.",
             "position")
MAX_PATHS = 32
MAX_VIEWS = 16
EXTEND_STEPS = 64  # how far up a new tip is walked to meet a cached path


class SessionCache:
    """One editor session's caches over ``ws`` for ``participant``."""

    def __init__(self, ws: Workspace, participant: Participant) -> None:
        self.ws = ws
        self.participant = participant
        self.feed = ws.follow()  # misses no change, even one committed out of order
        #: (tip id, prefer) → (tree id, the path's rows, id → index)
        self._paths: OrderedDict[tuple[str, tuple[str, ...]],
                                 tuple[str, list[Any], dict[str, int]]] = OrderedDict()
        #: (uri, tip id or "") → (tree id or "", view)
        self._views: OrderedDict[tuple[str, str], tuple[str, RenderedView]] = OrderedDict()
        self._originals: dict[str, str | None] = {}  # immutable: never invalidated
        self._filled: dict[str, tuple[int, int] | None] = {}  # immutable too
        #: (what, tree id, …) → a value read from a tree, dropped by any change in it
        self._memo: dict[tuple[str, ...], Any] = {}
        self.hits = self.misses = 0

    # ── invalidation ──
    def check(self) -> None:
        """Drop what the changes since the last check can have made stale."""
        changes = self.feed.poll()  # (one max(seq) read when nothing happened)
        if not changes:
            return
        stale: set[str | None] = set()  # trees whose paths may have changed (None: all)
        moved: set[str | None] = set()  # trees where someone moved (views use positions)
        touched = {change.tree for change in changes}
        if None in touched:
            self._memo.clear()
        else:
            for key in [k for k in self._memo if k[1] in touched]:
                del self._memo[key]
        for change in changes:
            if change.kind == "position":
                moved.add(change.tree)
            elif not change.kind.startswith(PATH_SAFE):
                stale.add(change.tree)
        if stale:
            every = None in stale
            for key in [k for k, v in self._paths.items() if every or v[0] in stale]:
                del self._paths[key]
        gone = stale | moved
        if gone:
            every = None in gone
            for key in [k for k, v in self._views.items() if every or v[0] in gone
                        or not v[0]]:
                del self._views[key]

    def clear(self) -> None:
        self._paths.clear()
        self._views.clear()
        self._memo.clear()

    def memo(self, key: tuple[str, ...], compute: Callable[[], Any]) -> Any:
        """``compute()``, remembered until any change in the tree ``key[1]`` (a status
        line asks for the same facts many times a second)."""
        self.check()
        if key not in self._memo:
            self._memo[key] = compute()
        return self._memo[key]

    # ── paths ──
    def path(self, tip: Node | Any, prefer: Sequence[str] = ()) -> list[Any]:
        """``Workspace.path(tip, prefer)``, from the cache when it can be."""
        self.check()
        key = (tip.id, tuple(prefer))
        hit = self._paths.get(key)
        if hit is not None:
            self._paths.move_to_end(key)
            self.hits += 1
            return list(hit[1])
        self.misses += 1
        rows = self._extend(tip, key[1])
        if rows is None:  # a path with no choices on it is read without the walk's rules
            rows = self.ws.single_source_path(tip) or self.ws.path(tip, prefer=key[1])
        self._remember(key, rows)
        return list(rows)

    def _remember(self, key: tuple[str, tuple[str, ...]], rows: list[Any]) -> None:
        tree = rows[-1].tree_id if rows else ""
        self._paths[key] = (tree, rows, {r.id: i for i, r in enumerate(rows)})
        while len(self._paths) > MAX_PATHS:
            self._paths.popitem(last=False)

    def _extend(self, tip: Node | Any, prefer: tuple[str, ...]) -> list[Any] | None:
        """The path to ``tip`` from a cached path it branches off (a child, a sibling, a
        few nodes below one), walking up single-source nodes only: where a node has
        several sources the preference rules choose, and the full query runs."""
        if not self._paths:
            return None
        chain: list[Any] = []
        node_id = tip.id
        for _ in range(EXTEND_STEPS):
            row, sources = self.ws.path_step(node_id)
            if row is None or len(sources) != 1:
                return None
            chain.append(row)
            parent = sources[0]
            for (_tip, old_prefer), (_tree, rows, index) in reversed(self._paths.items()):
                k = index.get(parent)
                if k is None:
                    continue
                extra = set(prefer) - set(old_prefer) - {c.id for c in chain}
                if any(p not in index for p in extra):
                    continue  # a preference the cached walk did not have: ask the store
                return rows[:k + 1] + chain[::-1]
            node_id = parent
        return None

    # ── views ──
    def view(self, uri: str, tip: Node | None = None) -> RenderedView:
        """``views.render`` for this participant, from the cache when it can be. The view
        is a copy: callers may set its fields (the segments list is shared, and never
        changed in place by anyone)."""
        self.check()
        key = (uri, tip.id if tip is not None else "")
        hit = self._views.get(key)
        if hit is None:
            view = render(self.ws, uri, self.participant, tip, paths=self.path)
            cacheable = view.kind == "path"
            if not cacheable:
                return view
            hit = self._views[key] = (view.tree.id if view.tree else "", view)
            while len(self._views) > MAX_VIEWS:
                self._views.popitem(last=False)
        else:
            self._views.move_to_end(key)
        return dataclasses.replace(hit[1])

    # ── immutable facts ──
    def filled_spans(self, ids: list[str]) -> dict[str, tuple[int, int]]:
        """``Workspace.filled_spans``, each node asked once (nodes never change)."""
        unknown = [i for i in ids if i not in self._filled]
        if unknown:
            found = self.ws.filled_spans(unknown)
            for i in unknown:
                self._filled[i] = found.get(i)
        return {i: span for i in ids if (span := self._filled.get(i)) is not None}

    def model_originals(self, ids: list[str]) -> dict[str, str]:
        """``Workspace.model_originals``, each node asked once (nodes never change)."""
        unknown = [i for i in ids if i not in self._originals]
        if unknown:
            found = self.ws.model_originals(unknown)
            for i in unknown:
                self._originals[i] = found.get(i)
        return {i: text for i in ids if (text := self._originals.get(i)) is not None}
