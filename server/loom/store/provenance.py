"""How a model made a node, as the store keeps it: ``generation`` rows (provider, model,
parameters, usage, the completion's index in its request) and the raw responses they share
(``raw_response``: one per request, however many nodes it made). The content handlers
record them through ``Workspace`` in the transaction that adds the nodes; the purge
(``store/purge.py``) removes a raw response with the last generation that holds it."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from loom.model.ids import new_ulid
from loom.store.repository import Repository
from loom.store.schema import Generation, Node, RawResponse


class Provenance(Repository):
    """Generation records and raw responses (``Workspace``'s provenance methods)."""

    def generations(self, node_ids: Sequence[str]) -> list[Generation]:
        """The provenance records of these nodes (model, parameters, usage)."""
        return list(Generation.select().where(Generation.node.in_(list(node_ids)))
                    .order_by(Generation.created, Generation.id))

    def request_batch(self, node: Node) -> tuple[Generation | None, list[str]]:
        """A model node's provenance record and the ids of every node made by the same
        request (``continue n:3`` makes three), in completion order; ``(None, [])`` for a
        node no model generated."""
        gen = Generation.get_or_none(Generation.node == node.id)
        if gen is None:
            return None, []
        # One request's rows share its raw response (several models' too); without one,
        # the model. ``IS ?`` is SQLite's alone (PostgreSQL refused it): NULL apart.
        same = ["n.parent IS NULL" if node.parent is None else "n.parent = ?", "g.created = ?"]
        args: list[Any] = [*([] if node.parent is None else [node.parent]), gen.created]
        if gen.raw is None:
            same += ["g.raw IS NULL", "g.model = ?"]
            args.append(gen.model)
        else:
            same.append("g.raw = ?")
            args.append(gen.raw)
        rows = self.sql(
            "SELECT g.node FROM generation g JOIN node n ON n.id = g.node "
            f"WHERE {' AND '.join(same)} ORDER BY g.completion_index, g.id", args).fetchall()
        return gen, [r[0] for r in rows] or [node.id]

    def request_sizes(self, parent_id: str) -> dict[str, int]:
        """For every child of ``parent_id`` a model generated: node id → how many nodes
        its request made (what :meth:`request_batch` counts), in one query for them all."""
        out: dict[str, int] = {}
        rows = self.sql(
            "SELECT g.node, g.created, g.model, g.raw FROM generation g "
            "JOIN node n ON n.id = g.node WHERE n.parent = ?", (parent_id,)).fetchall()
        sizes: dict[tuple[Any, ...], int] = {}
        for _node, *key in rows:
            sizes[tuple(key)] = sizes.get(tuple(key), 0) + 1
        for node_id, *key in rows:
            out[node_id] = sizes[tuple(key)]
        return out

    def save_raw_response(self, body: str) -> str:
        """Keep a request's raw response (in the caller's transaction); its id."""
        raw_id = new_ulid()
        RawResponse.create(id=raw_id, body=body)
        return raw_id

    def record(self, node_id: str, **fields: Any) -> None:
        """How a model made ``node_id`` (``provider``, ``model``, ``params``, ``usage``,
        ``latency_ms``, ``completion_index``, ``raw``, ``created``: :class:`Generation`'s
        columns), in the caller's transaction."""
        Generation.create(id=new_ulid(), node=node_id, **fields)

    def copy(self, generation: Generation, node_id: str, created: float,
             **params: Any) -> None:
        """``generation``'s record for another node (a split half, an alternative the
        model weighed), with ``params`` added to its parameters."""
        merged = dict(generation.params or {})
        merged.update(params)
        self.record(node_id, provider=generation.provider, model=generation.model,
                    params=merged, usage=generation.usage, latency_ms=generation.latency_ms,
                    completion_index=generation.completion_index, logprobs=None,
                    raw=generation.raw, created=created)
