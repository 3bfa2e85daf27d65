"""Shared by the interchange tests: fresh workspaces, the draft's examples rebuilt from its
text (shared/OPENLOOM-NOTES.md), media bytes of real formats, and a canonical dump of a
tree's rows to compare two databases."""

from __future__ import annotations

import base64
import copy
import gzip
import hashlib
import json
import struct
import zlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

from loom.store.db import open_database
from loom.store.schema import (
    Document,
    Edge,
    EdgeSource,
    Generation,
    Link,
    Node,
    Participant,
    RawResponse,
    Tree,
)
from loom.store.workspace import Workspace

FIXTURES = Path(__file__).resolve().parents[2].parent / "shared" / "fixtures"
DEMO = FIXTURES / "socketteer-loom-demo.json"


#: Where ``fresh`` makes a workspace instead of ``path``: a new PostgreSQL database each
#: time, when the run sets LOOM_INTERCHANGE_BACKEND=postgresql (tests/conftest.py).
DATABASES: Callable[[], str] | None = None


def fresh(path: Path) -> Workspace:
    """A workspace as the app opens one (the human and the subject model exist). The store
    binds one global database, so a test uses one workspace at a time."""
    ws = Workspace(open_database(DATABASES() if DATABASES else path))
    ws.human()
    ws.subject()
    return ws


def without_export_stamp(doc: dict[str, Any]) -> dict[str, Any]:
    """The document less what describes the act of exporting (when, and by which program):
    a re-export is a new export, by Loom."""
    out = copy.deepcopy(doc)
    out.pop("exportedAt", None)
    out.pop("generator", None)
    return out


def png(width: int = 1, height: int = 1) -> bytes:
    """A real PNG: one grey pixel per position."""
    def chunk(kind: bytes, data: bytes) -> bytes:
        body = kind + data
        return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body))
    raw = b"".join(b"\x00" + b"\x80" * width for _ in range(height))
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 0,
                                                            0, 0, 0))
            + chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b""))


def wav(samples: int = 8) -> bytes:
    """A real WAV: silence, 8 kHz mono 8-bit."""
    data = b"\x80" * samples
    fmt = struct.pack("<HHIIHH", 1, 1, 8000, 8000, 1, 8)
    return (b"RIFF" + struct.pack("<I", 36 + len(data)) + b"WAVE" + b"fmt "
            + struct.pack("<I", 16) + fmt + b"data" + struct.pack("<I", len(data)) + data)


def data_uri(mime: str, data: bytes) -> str:
    return f"data:{mime};base64,{base64.b64encode(data).decode()}"


MINIMAL: dict[str, Any] = {
    "format": "open-loom", "version": "2.0",
    "trees": [{
        "id": "t1", "title": "Hello", "rootNodeIds": ["a"], "currentNodeId": "c",
        "nodes": {
            "a": {"id": "a", "content": [{"type": "text", "text": "Once upon a time"}],
                  "author": {"role": "human"}},
            "b": {"id": "b", "content": [{"type": "text", "text": " there was a fox."}],
                  "author": {"role": "model"}},
            "c": {"id": "c", "content": [{"type": "text", "text": " there was a loom."}],
                  "author": {"role": "model"}}},
        "edges": [
            {"type": "continuation", "sources": [{"nodeId": "a"}], "targetNodeId": "b"},
            {"type": "continuation", "sources": [{"nodeId": "a"}], "targetNodeId": "c"}]}]}

RAW_BODY = json.dumps({"id": "gen-abc123", "model": "anthropic/claude-sonnet-4.5",
                       "choices": [{"text": "The rain had a grammar of its own…"}]})


def _sha(data: bytes) -> str:
    return "sha256:" + hashlib.sha256(data).hexdigest()


def rich() -> dict[str, Any]:
    """The draft's tree, node, edge, agent and generation examples in one document."""
    body = RAW_BODY.encode()
    return {
        "format": "open-loom", "version": "2.0", "exportedAt": "2026-07-08T21:14:00Z",
        "generator": {"name": "Aspen Grove", "version": "0.9.0"},
        "trees": [{
            "id": "01J8ZC3YV3N9K5T2W7QF4XH2MB", "title": "Marie Character Study",
            "description": "Exploring Marie's voice across models", "mode": "dialogue",
            "systemContext": "You are Marie, a painter in 1920s Paris.",
            "rootNodeIds": ["n-root"], "currentNodeId": "n-b3k9",
            "createdAt": "2026-06-30T10:00:00Z", "updatedAt": "2026-07-08T21:10:00Z",
            "nodes": {
                "n-root": {"id": "n-root",
                           "content": [{"type": "text", "text": "Tell me about the rain."}],
                           "author": {"role": "human", "agentId": "agent-asher"},
                           "createdAt": "2026-07-01T12:30:00Z"},
                "n-a7x1": {"id": "n-a7x1",
                           "content": [{"type": "text", "text": "The rain was loud."}],
                           "author": {"role": "model", "agentId": "agent-claude-creative"},
                           "createdAt": "2026-07-01T12:30:02.250Z",
                           "generation": {"provider": "openrouter",
                                          "model": "anthropic/claude-sonnet-4.5",
                                          "completionIndex": 0}},
                "n-a7x2": {
                    "id": "n-a7x2",
                    "content": [{"type": "text", "text": "The rain had a grammar of its own…"}],
                    "author": {"role": "model", "agentId": "agent-claude-creative"},
                    "createdAt": "2026-07-01T12:30:05Z", "editedFrom": "n-a7x1",
                    "meta": {"bookmarked": True, "bookmarkLabel": "tone shift",
                             "pruned": False, "excluded": False, "tags": ["research"],
                             "rating": 1, "note": "this is where it gets good"},
                    "generation": {
                        "provider": "openrouter", "model": "anthropic/claude-sonnet-4.5",
                        "parameters": {"temperature": 1.0, "maxTokens": 1024, "topP": None},
                        "requestId": "gen-abc123", "requestedAt": "2026-07-01T12:30:03Z",
                        "receivedAt": "2026-07-01T12:30:05Z", "latencyMs": 1830,
                        "usage": {"promptTokens": 912, "completionTokens": 208,
                                  "totalTokens": 1120},
                        "completionIndex": 0,
                        "contentHash": "sha256:9f2b" + "0" * 60,
                        "parentHashes": ["sha256:aa31" + "0" * 60],
                        "hashAlgorithm": "sha256",
                        "rawResponse": {
                            "bodyHash": _sha(body), "encoding": "gzip+base64",
                            "body": base64.b64encode(gzip.compress(body, mtime=0)).decode(),
                            "headers": {"x-request-id": "gen-abc123"}}},
                    "extensions": {}},
                "n-b3k9": {
                    "id": "n-b3k9",
                    "content": [
                        {"type": "text", "text": "Like this one?"},
                        {"type": "image", "ref": data_uri("image/png", png(2, 2)),
                         "mimeType": "image/png", "width": 2, "height": 2,
                         "altText": "Marie at the window"},
                        {"type": "audio", "ref": data_uri("audio/wav", wav()),
                         "mimeType": "audio/wav", "durationMs": 1,
                         "transcript": "rain on the glass"}],
                    "author": {"role": "human", "agentId": "agent-asher"},
                    "createdAt": "2026-07-02T08:00:00.123Z"},
                "n-note": {"id": "n-note",
                           "content": [{"type": "text", "text": "Compare with the draft."}],
                           "author": {"role": "human", "name": "Asher"}},
            },
            "edges": [
                {"id": "e-1", "type": "continuation",
                 "sources": [{"nodeId": "n-root", "role": "primary"}],
                 "targetNodeId": "n-a7x1", "createdAt": "2026-07-01T12:30:02Z",
                 "extensions": {}},
                {"id": "e-2", "type": "continuation",
                 "sources": [{"nodeId": "n-root", "role": "primary"}],
                 "targetNodeId": "n-a7x2", "createdAt": "2026-07-01T12:30:05Z"},
                {"id": "e-3", "type": "continuation",
                 "sources": [{"nodeId": "n-a7x2", "role": "primary"},
                             {"nodeId": "n-root", "role": "context"}],
                 "targetNodeId": "n-b3k9"},
                {"id": "e-4", "type": "annotation", "sources": [{"nodeId": "n-a7x2"}],
                 "targetNodeId": "n-note"},
            ],
            "tags": [{"name": "research", "color": "#7A9E7E"}],
            "extensions": {"aspen-grove": {"localId": "a7x2", "groveId": "g-1"},
                           "loomsidian": {"unread": False, "collapsed": True}},
        }],
        "agents": {
            "agent-claude-creative": {
                "name": "Claude Creative", "type": "model",
                "modelRef": "openrouter:anthropic/claude-sonnet-4.5",
                "configuration": {"temperature": 1.0, "systemPrompt": "Write vividly."}},
            "agent-asher": {"name": "Asher", "type": "human"},
        },
        "extensions": {},
    }


def _t(ts: float) -> float:
    return round(ts, 6)  # times travel as ISO-8601 with microseconds


def tree_rows(ws: Workspace, tree: Tree) -> dict[str, Any]:
    """Every row of a tree, with participants by name and documents by name, so that two
    databases can be compared (times to the microsecond, as Open Loom carries them)."""
    people = {p.id: p.name for p in Participant.select()}
    t = Tree.get_by_id(tree.id)
    nodes = list(Node.select().where(Node.tree == t.id).order_by(Node.id))
    ids = [n.id for n in nodes]
    out: dict[str, Any] = {
        "tree": {k: getattr(t, k) for k in ("id", "description", "summary", "summary_source",
                                             "mode", "system_context", "archived", "root",
                                             "ann_counter", "themes")},
        "times": (_t(t.created), _t(t.updated)),
        "nodes": [{**{f: getattr(n, f) for f in (
            "id", "local_id", "label", "content", "author_type", "kind", "parent", "depth",
            "summary", "summary_source", "edited_from", "version_of",
            "version_number", "ann_number", "bookmarked", "pruned", "excluded",
            "content_hash")}, "author": people[n.author_id],
            "created": _t(n.created),
            "extra": {k: v for k, v in (n.extra or {}).items() if k != "interchange"}}
            for n in nodes],
        "edges": sorted((e.target, e.kind, e.sibling_order)
                        for e in Edge.select().where(Edge.tree == t.id)),
        "sources": sorted((s.target, s.node, s.role, s.position)
                          for s in EdgeSource.select().where(EdgeSource.target.in_(ids))),
        "generations": sorted(
            (g.id, g.node, g.provider, g.model, json.dumps(g.params, sort_keys=True),
             json.dumps(g.usage, sort_keys=True), g.latency_ms, g.completion_index,
             json.dumps(g.logprobs), g.raw, _t(g.created))
            for g in Generation.select().where(Generation.node.in_(ids))),
        "links": sorted((k.id, k.source, k.target_kind, k.target_node, k.target_tree,
                         Document.get_by_id(k.target_doc).name if k.target_doc else None,
                         k.target_section, k.note, people[k.author], _t(k.created))
                        for k in Link.select().where(Link.tree == t.id)),
    }
    raw_ids = {g[9] for g in out["generations"] if g[9]}
    out["raws"] = sorted((r.id, r.body) for r in RawResponse.select().where(
        RawResponse.id.in_(list(raw_ids))))
    return out


def loom_doc(ws: Workspace, tree: Tree) -> dict[str, Any]:
    """The tree's Open Loom document as the export makes it (media "auto"), as plain JSON."""
    from loom.interchange.openloom import export_document

    doc, _ = export_document(ws, [tree])
    return json.loads(json.dumps(doc))  # type: ignore[no-any-return]


def ol_node(nid: str, text: str, role: str, agent: str, **more: Any) -> dict[str, Any]:
    """An Open Loom node of one text block (``more``: generation, meta, editedFrom…)."""
    return {"id": nid, "content": [{"type": "text", "text": text}],
            "author": {"role": role, "agentId": agent},
            "createdAt": "2026-07-01T12:30:00.250Z", **more}


def ol_tokens(text: str, cut: list[int], offsets: bool = False) -> list[dict[str, Any]]:
    """``text`` as Open Loom logprobs, split at ``cut``, each with its top-2 alternatives
    (``offsets``: and its character offset)."""
    return [{"token": text[a:b], "logprob": -0.25 * (a + 1), **({"offset": a} if offsets else {}),
             "top_logprobs": [{"token": text[a:b], "logprob": -0.25 * (a + 1)},
                              {"token": "?", "logprob": -3.5}]}
            for a, b in zip([0, *cut], [*cut, len(text)], strict=True)]
