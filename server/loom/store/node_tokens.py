"""Nodes' per-token data as the store keeps it (schema v6 ``node_tokens``), and the reads
the editor needs: a node's tokens (hover, alternatives), its probability runs (colouring),
and why a model node has none.

A model node's data comes from its generation; any node's, a writer's text included, may
come from ``→ score`` (v16: the row names its ``scorer``). A node's content never changes
(but for the halves of a split a suggestion's accepts move, ``Workspace.move_split``), so
what is read is cached per process by node id; a score written later is news to the other
processes' caches: the scorer logs a ``node.tokens`` change, and each process's change
feed forgets the node (:func:`forget`). A node without a row of its own still has token data when:

- it is a human's version of model text: the original's generated tokens, minus those
  whose characters the human changed (``model.tokens.through_edit``); a version of scored
  text has none until it is scored itself (its words are new text, in a new context);
- its generation was stored before v6, or imported, with JSON ``logprobs``: read from there.
"""

from __future__ import annotations

import collections
import logging
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from loom.model import tokens as T
from loom.store.dialect import upsert
from loom.store.schema import Generation, Node, NodeTokens
from loom.store.workspace import Workspace

log = logging.getLogger(__name__)

_CACHE_SIZE = 4096
_tokens: collections.OrderedDict[str, tuple[int, list[T.Token] | None]] = \
    collections.OrderedDict()
_runs: collections.OrderedDict[str, list[tuple[int, int, int]] | None] = \
    collections.OrderedDict()
#: Counts the token data this process saw change (a save, a score read from the change
#: feed): what is cached by text revision alone (semantic tokens) is cached by this too.
_epoch = 0


def epoch() -> int:
    """How many times this process's token data changed under the same text."""
    return _epoch


def forget(node_ids: Iterable[str]) -> None:
    """Drop what is cached of these nodes' token data (another process scored them)."""
    global _epoch
    for nid in node_ids:
        _tokens.pop(nid, None)
        _runs.pop(nid, None)
    _epoch += 1


def _remember(cache: collections.OrderedDict[str, Any], key: str, value: Any) -> Any:
    cache[key] = value
    cache.move_to_end(key)
    while len(cache) > _CACHE_SIZE:
        cache.popitem(last=False)
    return value


def save(ws: Workspace, node_id: str, tokens: Sequence[T.Token], k: int,
         scorer: str | None = None) -> None:
    """Store a node's token data (in the caller's transaction, with the node); ``scorer``
    names the model that scored the text (None: the node's generation made them)."""
    if not tokens:
        return
    upsert(NodeTokens, ("node",), node=node_id, k=k, count=len(tokens),
           covered=tokens[-1].end, data=T.encode(tokens, k), scorer=scorer).execute()
    forget((node_id,))


def replace(ws: Workspace, node_id: str, tokens: Sequence[T.Token], k: int,
            scorer: str | None = None) -> None:
    """``save``, for a node whose text has moved (``Workspace.move_split``): no tokens
    left removes what was stored."""
    if tokens:
        save(ws, node_id, tokens, k, scorer)
        return
    NodeTokens.delete().where(NodeTokens.node == node_id).execute()
    forget((node_id,))


def save_scores(ws: Workspace, node: Any, tokens: Sequence[T.Token], k: int, scorer: str,
                actor: str | None) -> None:
    """A node's scores (replacing earlier ones), with a ``node.tokens`` change that tells
    the other processes to read them afresh (in the caller's transaction)."""
    if not tokens:
        return
    save(ws, node.id, tokens, k, scorer)
    ws.log_change(node.tree_id, "node.tokens", node.id, actor, {"scorer": scorer})


def scorers(ws: Workspace, node_ids: Sequence[str]) -> dict[str, str | None]:
    """``id → scorer`` for those of ``node_ids`` with a row of their own (None: their
    generation's tokens)."""
    found: dict[str, str | None] = {}
    ids = list(dict.fromkeys(node_ids))
    for i in range(0, len(ids), 900):
        chunk = ids[i:i + 900]
        marks = ",".join("?" * len(chunk))
        for nid, scorer in ws.db.execute_sql(
                f"SELECT node, scorer FROM node_tokens WHERE node IN ({marks})", chunk):
            found[nid] = scorer
    return found


def scorer_of(ws: Workspace, node_id: str) -> str | None:
    """The model that scored this node's text, or None (no scores of its own)."""
    return scorers(ws, [node_id]).get(node_id)


def save_entries(ws: Workspace, node: Node, entries: Iterable[Mapping[str, Any]] | None,
                 k: int) -> int:
    """A provider's per-token entries laid over ``node``'s text and stored; the number of
    tokens kept (0: the entries did not spell the text, nothing stored)."""
    aligned = T.align(entries, node.content, k)
    save(ws, node.id, aligned, k)
    return len(aligned)


def tokens(ws: Workspace, node: Any) -> list[T.Token] | None:
    """``node``'s token data (a ``Node`` or a ``NodeRow``), or None when it has none."""
    # cached with the text's length: the halves of a split that a suggestion's accepts move
    # keep their ids (``Workspace.move_split``), and another process may hold the old cut
    hit = _tokens.get(node.id)
    if hit is not None and hit[0] == len(node.content):
        _tokens.move_to_end(node.id)
        return hit[1]
    return _remember(_tokens, node.id, (len(node.content), _read(ws, node)))[1]


def runs(ws: Workspace, ids: Sequence[str]) -> dict[str, list[tuple[int, int, int]]]:
    """``id → [(start, end, bucket)]``: the probability runs of many nodes' committed
    content (those with token data), for colouring. Nodes not yet cached cost one query
    for their stored rows; only versions and older generations are read one by one."""
    missing = [nid for nid in dict.fromkeys(ids) if nid not in _runs]
    if missing:
        rows = _rows(ws, missing)
        maybe = _may_derive(ws, [nid for nid in missing if nid not in rows])
        for nid in missing:
            data = rows.get(nid)
            found: list[tuple[int, int, int]] | None = None
            if data is not None:
                try:
                    found = T.decode_runs(data)
                except ValueError:
                    log.warning("damaged token data of node %s", nid)
            elif nid in maybe:
                node = ws.find_node(nid)
                derived = tokens(ws, node) if node is not None else None
                found = T.runs(derived) if derived else None
            _remember(_runs, nid, found)
    out: dict[str, list[tuple[int, int, int]]] = {}
    for nid in ids:
        got = _runs.get(nid)
        if got:
            out[nid] = got
    return out


def _rows(ws: Workspace, ids: list[str]) -> dict[str, bytes]:
    found: dict[str, bytes] = {}
    for i in range(0, len(ids), 900):
        chunk = ids[i:i + 900]
        marks = ",".join("?" * len(chunk))
        for nid, data in ws.db.execute_sql(
                f"SELECT node, data FROM node_tokens WHERE node IN ({marks})", chunk):
            found[nid] = bytes(data)
    return found


def _may_derive(ws: Workspace, ids: list[str]) -> set[str]:
    """Those of ``ids`` (nodes without a row) whose data may come from elsewhere: versions,
    and model nodes (their generation's JSON logprobs); human text has none."""
    found: set[str] = set()
    for i in range(0, len(ids), 900):
        chunk = ids[i:i + 900]
        marks = ",".join("?" * len(chunk))
        found.update(r[0] for r in ws.db.execute_sql(
            f"SELECT id FROM node WHERE id IN ({marks}) AND (author_type = 'model' OR "
            "edited_from IS NOT NULL)", chunk))
    return found


def _read(ws: Workspace, node: Any) -> list[T.Token] | None:
    data = _rows(ws, [node.id]).get(node.id)
    if data is not None:
        try:
            return T.decode(data)[1]
        except ValueError:
            log.warning("damaged token data of node %s", node.id)
            return None
    if node.author_type != "model" and not node.edited_from:
        return None  # a writer's text, not scored
    if node.edited_from:  # a version: what survives of its original's generated tokens
        original = ws.find_node(node.edited_from)
        if original is None or scorer_of(ws, original.id) is not None:
            return None
        base = tokens(ws, original)
        return T.through_edit(base, original.content, node.content) if base else None
    legacy = Generation.select(Generation.logprobs, Generation.params).where(
        (Generation.node == node.id) & Generation.logprobs.is_null(False)).first()
    if legacy is not None and isinstance(legacy.logprobs, list):
        k = (legacy.params or {}).get("logprobs") or T.DEFAULT_K
        return T.align(legacy.logprobs, node.content, int(k)) or None
    return None


def k_of(ws: Workspace, node_id: str) -> int | None:
    """How many alternatives per token were asked for when ``node_id`` was generated."""
    row = NodeTokens.select(NodeTokens.k).where(NodeTokens.node == node_id).first()
    return row.k if row is not None else None


def entries(ws: Workspace, node_id: str) -> list[dict[str, Any]] | None:
    """A node's stored token data as provider-neutral entries (for exports), or None."""
    node = ws.find_node(node_id)
    found = tokens(ws, node) if node is not None else None
    return T.entries(found) if found else None


def missing_reason(ws: Workspace, node: Any) -> str:
    """Why a model node has no token data, in words for the editor."""
    if node.author_type != "model":
        return "written by a human"
    gens = ws.generations([node.id])
    if not gens:
        return "no generation record (imported or written without one)"
    g = gens[-1]
    params = g.params or {}
    if g.provider == "anthropic":
        return "Anthropic's API does not return token probabilities"
    if "logprobs" not in params:
        return f"a chat reply ({g.provider}, {g.model}): Loom asks chat models for none"
    if params.get("logprobs") is None:
        return f"{g.model}'s profile turns them off (logprobs = false)"
    return f"{g.provider} ({g.model}) returned none"
