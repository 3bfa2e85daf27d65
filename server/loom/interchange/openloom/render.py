"""Rows → Open Loom 2.0, exactly the published shape (see docs/openloom.md for the
field-by-field mapping).

Loom renders what it models in the core fields, and what the core lacks — localIds,
labels like ``a7x2'``, annotation numbers, summaries, links, documents, participants'
roles and permissions, the exact generation records — under ``extensions.loom``, leaving
out whatever the core fields already imply. Then each object's kept entries (see
``loom.interchange.keep``) put back what an imported file said differently.
"""

from __future__ import annotations

import hashlib
import json
from collections import defaultdict, deque
from operator import itemgetter
from typing import Any, Literal

from pydantic import BaseModel

import loom.interchange.keep as keep
import loom.interchange.openloom.verbatim as verbatim
from loom import __version__
from loom.interchange.media import data_uri, extension
from loom.interchange.openloom.read import FORMAT, NS
from loom.interchange.openloom.snapshot import IC, Shared, Snap
from loom.interchange.times import format_time
from loom.store.workspace import content_hash

BASE_VERSION = "2.0"
_KIND_RANK = {"continuation": 0, "version": 1, "annotation": 2}
_NONE: dict[str, Any] = {}  # read only: what a missing extra or interchange record reads as
CONTAINER_OWN = ("format", "version", "exportedAt", "generator", "trees")  # never kept


class ExportOptions(BaseModel):
    """What an export leaves out (the draft asks exporters to offer each), and how media
    travel: ``auto`` keeps each block as the file had it (a bundle when any block named a
    bundle member), ``inline`` makes every media block a ``data:`` URI, ``bundle`` writes
    every media file into the ZIP."""

    system_context: bool = True
    raw_responses: bool = True  # generation tier 3
    agent_prompts: bool = True  # agents' configuration.systemPrompt
    media: Literal["auto", "inline", "bundle"] = "auto"
    participant: str | None = None  # whose position is currentNodeId (None: the importer's,
    # else the human's)


def block_text(blocks: list[dict[str, Any]]) -> str:
    """A node's text in Loom: text blocks as they are, other blocks as a placeholder with
    their alt text or transcript (``[image: a fox at dusk]``)."""
    parts = []
    for block in blocks:
        kind = block.get("type")
        if kind == "text":
            parts.append(block.get("text") or "")
            continue
        label = block.get("altText") if kind == "image" else \
            block.get("transcript") if kind == "audio" else None
        label = label if isinstance(label, str) and label.strip() else None
        parts.append(f"[{kind}: {' '.join(label.split())}]" if label else f"[{kind}]")
    return "".join(parts)


def _sha(text: str) -> str:
    return "sha256:" + hashlib.sha256(text.encode("utf-8")).hexdigest()


def _number(value: float | None) -> int | float | None:
    if value is None:
        return None
    return int(value) if float(value).is_integer() else value


class Renderer:
    """Renders one tree; ``keep=False`` gives Loom's own rendering (what an import diffs
    the file against)."""

    def __init__(self, snap: Snap, shared: Shared, options: ExportOptions,
                 members: dict[str, bytes] | None = None) -> None:
        self.snap, self.shared, self.options = snap, shared, options
        self.members = members if members is not None else {}
        tic = snap.tree_ic
        # (Snap.ic inlined in the loops over every node: an import renders 100,000)
        ics = [((row.get("extra") or _NONE).get(IC) or _NONE) for row in snap.nodes.values()]
        self.ids = {nid: ic.get("id", nid) for nid, ic in zip(snap.nodes, ics, strict=True)}
        self.agent_ids: dict[str, str] = dict(tic.get("agentIds") or {})
        self.tree_id = tic.get("id", snap.tree["id"])
        self.used_people: set[str] = set()
        self._as_imported: Renderer | None = None  # made when a verbatim node changed
        self.omit_root = self._synthetic_root()
        self.bundle = options.media == "bundle" or (options.media == "auto" and any(
            "path" in m for ic in ics for m in (ic.get("media") or _NONE).values()))

    # ── ids ───────────────────────────────────────────────────────────────────
    def node_id(self, nid: str | None) -> str | None:
        return None if nid is None else self.ids.get(nid, nid)

    def agent(self, pid: str) -> str:
        self.used_people.add(pid)
        return self.agent_ids.get(pid, pid)

    # ── structure ─────────────────────────────────────────────────────────────
    def _synthetic_root(self) -> bool:
        """An import made an empty root to hold a multi-root tree: it is left out again
        while it is still only that (nobody annotated, linked or edited it)."""
        snap = self.snap
        root = snap.tree["root"]
        if root not in snap.nodes or not snap.ic(root).get("synthetic") or \
                snap.nodes[root]["content"]:
            return False
        for target, srcs in snap.sources.items():
            if any(s["node"] == root for s in srcs) and (
                    snap.edges[target]["kind"] != "continuation" or srcs[0]["node"] != root
                    or len(srcs) > 1):
                return False
        if any(nid not in snap.edges and nid != root for nid in snap.nodes):
            return False  # a version of the root
        return not any(link["source"] == root or link["target_node"] == root
                       for link in snap.links)

    def root_ids(self) -> list[str]:
        snap = self.snap
        root = snap.tree["root"]
        if self.omit_root:
            kids = [t for t, srcs in snap.sources.items() if srcs[0]["node"] == root]
            kids.sort(key=lambda t: (snap.edges[t]["sibling_order"], t))
            return [self.ids[t] for t in kids]
        others = sorted((nid for nid in snap.nodes if nid not in snap.edges and nid != root),
                        key=lambda n: (snap.nodes[n]["version_number"], n))
        return [self.ids[n] for n in ([root] if root in snap.nodes else []) + others]

    def edge_order(self) -> list[tuple[tuple[int, int], str | None, dict[str, Any] | None]]:
        """(sort key, target, demoted edge) in file order: imported edges where the file had
        them, then Loom's own breadth-first, each node's children in sibling order."""
        snap = self.snap
        edges, nodes = snap.edges, snap.nodes
        kids: dict[str, list[str]] = defaultdict(list)
        for target, srcs in snap.sources.items():
            if target in nodes and target in edges:
                for s in srcs:
                    kids[s["node"]].append(target)
        # Each edge's sort key made once (an import orders 100,000 edges).
        rank = {t: (_KIND_RANK.get(e["kind"], 9), e["sibling_order"], t)
                for t, e in edges.items()}
        for lst in kids.values():
            if len(lst) > 1:
                lst.sort(key=rank.__getitem__)
        root = snap.tree["root"]
        starts = ([root] if root in nodes else []) + sorted(
            (n for n in nodes if n not in edges and n != root),
            key=lambda n: (nodes[n]["version_number"], n))
        seen: set[str] = set()
        bfs: list[str] = []
        queue = deque(starts)
        while queue:
            nid = queue.popleft()
            if nid in seen:
                continue
            seen.add(nid)
            if nid in edges:
                bfs.append(nid)
            if nid in kids:  # (one seen already is skipped when it comes off the queue)
                queue.extend(kids[nid])
        bfs.extend(sorted(t for t in snap.edges if t not in seen and t in snap.nodes))
        out: list[tuple[tuple[int, int], str | None, dict[str, Any] | None]] = []
        for pos, target in enumerate(bfs):
            if self.omit_root and snap.sources[target][0]["node"] == root:
                continue
            ic = (nodes[target].get("extra") or _NONE).get(IC) or _NONE  # snap.ic(target)
            index = (ic.get("edge") or _NONE).get("index")
            out.append(((0, index) if isinstance(index, int) else (1, pos), target, None))
        for row in nodes.values():
            for item in ((row.get("extra") or _NONE).get(IC) or _NONE).get("demoted") or ():
                out.append(((0, item["index"]), None, item["edge"]))
        out.sort(key=itemgetter(0))
        return out

    # ── nodes ─────────────────────────────────────────────────────────────────
    def derived_kind(self, nid: str) -> str:
        snap = self.snap
        edge = snap.edges.get(nid)
        if edge is None:
            return "root"
        if edge["kind"] == "annotation":
            return "annotation"
        if edge["kind"] == "version":
            original = snap.nodes.get(snap.nodes[nid]["edited_from"] or "")
            return original["kind"] if original else "continuation"
        return "continuation"

    def derived_label(self, nid: str) -> str:
        n = self.snap.nodes[nid]
        if n["ann_number"] is not None and n["kind"] == "annotation":
            return f"ann-{n['ann_number']}"
        family = self.snap.nodes.get(n["version_of"] or "")
        if n["version_number"] and family is not None:
            return family["label"] + "'" * n["version_number"]
        return n["local_id"]

    def blocks(self, nid: str) -> list[dict[str, Any]]:
        n, ic = self.snap.nodes[nid], self.snap.ic(nid)
        stored = ic.get("blocks")
        if stored is None or block_text(stored) != n["content"]:
            return [{"type": "text", "text": n["content"]}]
        out = json.loads(json.dumps(stored))
        for index, m in (ic.get("media") or {}).items():
            block = out[int(index)]
            mime, data = self.snap.media.get(m["sha"], (block.get("mimeType", ""), None))
            if data is None:
                continue  # the bytes were never there (a missing bundle member): as it was
            if "data" not in m and "path" not in m:  # the file's own data: URI, as it was
                if self.options.media != "bundle":
                    continue
            elif "data" in m and self.options.media != "bundle":
                block["ref"] = data_uri(m["data"], data)
                continue
            elif self.options.media == "inline" or not self.bundle:
                block["ref"] = data_uri(f"data:{mime};base64", data)
                continue
            path = m.get("path") or f"media/{m['sha'][:16]}.{extension(mime)}"
            block["ref"] = path
            self.members[path] = data
        return out

    def generation(self, nid: str, g: dict[str, Any]) -> dict[str, Any]:
        snap, n = self.snap, self.snap.nodes[nid]
        out: dict[str, Any] = {}
        if g["provider"]:
            out["provider"] = g["provider"]
        if g["model"]:
            out["model"] = g["model"]
        if g["params"]:
            out["parameters"] = g["params"]
        body = snap.raws.get(g["raw"]) if g["raw"] else None
        if body is not None:
            try:
                request_id = json.loads(body).get("id")
            except (ValueError, AttributeError):
                request_id = None
            if isinstance(request_id, str) and request_id:
                out["requestId"] = request_id
        out["receivedAt"] = format_time(g["created"])
        if g["latency_ms"] is not None:
            out["latencyMs"] = _number(g["latency_ms"])
        usage = g["usage"] or {}
        prompt, completion = usage.get("prompt_tokens"), usage.get("completion_tokens")
        if isinstance(prompt, int) or isinstance(completion, int):
            u = {k: v for k, v in (("promptTokens", prompt), ("completionTokens", completion))
                 if isinstance(v, int)}
            if isinstance(prompt, int) and isinstance(completion, int):
                u["totalTokens"] = prompt + completion
            out["usage"] = u
        out["completionIndex"] = g["completion_index"]
        out["contentHash"] = "sha256:" + n["content_hash"]
        parent = snap.nodes.get(n["parent"] or "")
        out["parentHashes"] = ["sha256:" + parent["content_hash"]] if parent else []
        out["hashAlgorithm"] = "sha256"
        if body is not None and self.options.raw_responses:
            out["rawResponse"] = {"bodyHash": _sha(body), "encoding": "identity", "body": body}
        return out

    def loom_node(self, nid: str) -> dict[str, Any]:
        snap, n = self.snap, self.snap.nodes[nid]
        ext: dict[str, Any] = {"localId": n["local_id"]}
        if n["label"] != self.derived_label(nid):
            ext["label"] = n["label"]
        if n["version_number"]:
            ext["versionOf"] = self.node_id(n["version_of"])
            ext["versionNumber"] = n["version_number"]
        if n["ann_number"] is not None:
            ext["annNumber"] = n["ann_number"]
        srcs = snap.sources.get(nid)
        if n["parent"] != (srcs[0]["node"] if srcs else None):
            ext["parent"] = self.node_id(n["parent"])
        if n["kind"] != self.derived_kind(nid):
            ext["kind"] = n["kind"]
        if n["summary"] is not None:
            ext["summary"] = n["summary"]
            if n["summary_source"] is not None:
                ext["summarySource"] = n["summary_source"]
        parent = snap.nodes.get(n["parent"] or "")
        if n["content_hash"] != content_hash(parent["content_hash"] if parent else "",
                                             n["content"]):
            ext["contentHash"] = n["content_hash"]
        extra = {k: v for k, v in (n["extra"] or {}).items() if k != "interchange"}
        if extra:
            ext["extra"] = extra
        gens = snap.generations.get(nid) or []
        if gens:
            ext["generations"] = [self._loom_generation(g) for g in gens]
        return ext

    def _loom_generation(self, g: dict[str, Any]) -> dict[str, Any]:
        out = {"id": g["id"], "provider": g["provider"], "model": g["model"],
               "params": g["params"] or {}, "usage": g["usage"] or {},
               "latencyMs": _number(g["latency_ms"]), "completionIndex": g["completion_index"],
               "created": format_time(g["created"])}
        if g["logprobs"] is not None:
            out["logprobs"] = g["logprobs"]
        if g["raw"] and self.options.raw_responses and g["raw"] in self.snap.raws:
            out["rawId"] = g["raw"]
        return out

    def node(self, nid: str, *, kept: bool = True) -> dict[str, Any]:
        n, ic = self.snap.nodes[nid], self.snap.ic(nid)
        if kept and verbatim.kept(ic):
            return self._verbatim_node(nid, n, ic)
        role = ic.get("role") or n["author_type"]
        out: dict[str, Any] = {
            "id": self.ids[nid], "content": self.blocks(nid),
            "author": {"role": role, "agentId": self.agent(n["author"])},
            "createdAt": format_time(n["created"]),
        }
        if n["edited_from"]:
            out["editedFrom"] = self.node_id(n["edited_from"])
        meta = {k: True for k in ("bookmarked", "pruned", "excluded") if n[k]}
        if meta:
            out["meta"] = meta
        gens = self.snap.generations.get(nid)
        if gens:
            out["generation"] = self.generation(nid, gens[0])
        out["extensions"] = {NS: self.loom_node(nid)}
        if kept:
            out = keep.apply(out, ic.get("keep") or [])
        return out

    def _verbatim_node(self, nid: str, n: dict[str, Any], ic: dict[str, Any]
                       ) -> dict[str, Any]:
        """A node a foreign file gave whole (``verbatim``): as the file had it while Loom
        changed nothing about it and the options render it as the import did; else
        today's rendering with what the file said differently where Loom did not change
        it."""
        neutral = not ic.get("media") and (self.options.raw_responses or
                                           not self.snap.generations.get(nid))
        if neutral and verbatim.unchanged(n, ic):
            self.agent(n["author"])
            return verbatim.original(n, ic)
        out = self.node(nid, kept=False)
        if self._as_imported is None:  # the options an import renders with
            self._as_imported = Renderer(self.snap, self.shared, ExportOptions(), {})
        self.snap.nodes[nid] = verbatim.as_imported(n, ic)
        try:
            base = self._as_imported.node(nid, kept=False)
        finally:
            self.snap.nodes[nid] = n
        return keep.apply(out, keep.diff(base, verbatim.original(n, ic)))

    # ── edges ─────────────────────────────────────────────────────────────────
    def edge(self, target: str, counted: int, *, kept: bool = True) -> dict[str, Any]:
        snap = self.snap
        e, srcs = snap.edges[target], snap.sources[target]
        if kept:
            eic = snap.ic(target).get("edge") or {}
            if verbatim.kept(eic):
                return self._verbatim_edge(target, counted, eic)
        out: dict[str, Any] = {
            "id": "e-" + self.ids[target],
            "type": "annotation" if e["kind"] == "annotation" else "continuation",
            "sources": [{"nodeId": self.ids.get(s["node"], s["node"]), "role": s["role"]}
                        for s in srcs],
            "targetNodeId": self.ids[target],
            # Loom makes a node's edge with the node: the edge is as old as its target.
            "createdAt": format_time(snap.nodes[target]["created"]),
        }
        ext: dict[str, Any] = {}
        if e["kind"] == "version":
            ext["kind"] = "version"
        positions = [s["position"] for s in srcs]
        if positions != list(range(len(srcs))):
            ext["positions"] = positions
        if e["sibling_order"] != counted:
            ext["siblingOrder"] = e["sibling_order"]
        if ext:
            out["extensions"] = {NS: ext}
        if kept:
            out = keep.apply(out, (self.snap.ic(target).get("edge") or {}).get("keep") or [])
        return out

    def _verbatim_edge(self, target: str, counted: int, eic: dict[str, Any]
                       ) -> dict[str, Any]:
        """An edge a foreign file gave whole: as the file had it while its state is as
        imported; else today's rendering with the file's differences from the edge as it
        was imported, where Loom did not change them."""
        snap = self.snap
        e, srcs = snap.edges[target], snap.sources[target]
        if verbatim.edge_state(e, counted, srcs) == eic["at"]:
            return verbatim.copy_json(eic["file"])  # type: ignore[no-any-return]
        out = self.edge(target, counted, kept=False)
        order, was_counted, count = eic["at"]
        raw = eic["file"]
        if len(srcs) != count:  # the sources it was imported with: those the file names
            named = {s.get("nodeId") for s in raw.get("sources") or []
                     if isinstance(s, dict)}
            snap.sources[target] = [s for s in srcs if self.ids.get(s["node"], s["node"])
                                    in named]
        snap.edges[target] = {**e, "sibling_order": order}
        try:
            base = self.edge(target, was_counted, kept=False)
        finally:
            snap.edges[target], snap.sources[target] = e, srcs
        return keep.apply(out, keep.diff(base, verbatim.copy_json(raw)))

    def edges(self, *, kept: bool = True) -> list[dict[str, Any]]:
        counters: dict[tuple[str, str], int] = defaultdict(int)
        out = []
        for _, target, demoted in self.edge_order():
            if target is None:
                out.append(json.loads(json.dumps(demoted)))
                continue
            srcs, kind = self.snap.sources[target], self.snap.edges[target]["kind"]
            counted = counters[(srcs[0]["node"], kind)]
            counters[(srcs[0]["node"], kind)] += 1
            out.append(self.edge(target, counted, kept=kept))
        return out

    # ── the tree ──────────────────────────────────────────────────────────────
    def links(self) -> list[dict[str, Any]]:
        out = []
        for link in self.snap.links:
            target: dict[str, Any] = {"kind": link["target_kind"]}
            if link["target_node"]:
                target["node"] = self.node_id(link["target_node"])
            if link["target_tree"]:
                target["tree"] = self.tree_id if link["target_tree"] == self.snap.tree["id"] \
                    else link["target_tree"]
            if link["target_doc"]:
                target["doc"] = link["target_doc"]
            if link["target_section"]:
                target["section"] = link["target_section"]
            item: dict[str, Any] = {"id": link["id"], "source": self.node_id(link["source"]),
                                    "target": target}
            if link["note"] is not None:
                item["note"] = link["note"]
            item["author"] = self.agent(link["author"])
            item["createdAt"] = format_time(link["created"])
            out.append(item)
        return out

    def tree_fields(self, *, kept: bool = True) -> dict[str, Any]:
        """The tree without its nodes and edges."""
        t, snap = self.snap.tree, self.snap
        out: dict[str, Any] = {"id": self.tree_id, "title": t["title"]}
        if t["description"]:
            out["description"] = t["description"]
        out["mode"] = t["mode"]
        if t["system_context"]:
            out["systemContext"] = t["system_context"]
        out["rootNodeIds"] = self.root_ids()
        if snap.position is not None and snap.position in snap.nodes and not (
                self.omit_root and snap.position == t["root"]):
            out["currentNodeId"] = self.ids[snap.position]
        out["createdAt"] = format_time(t["created"])
        out["updatedAt"] = format_time(t["updated"])
        ext: dict[str, Any] = {}
        if t["summary"] is not None:
            ext["summary"] = t["summary"]
            if t["summary_source"] is not None:
                ext["summarySource"] = t["summary_source"]
        if t["archived"]:
            ext["archived"] = True
        anns = [n["ann_number"] for n in snap.nodes.values() if n["ann_number"] is not None]
        if t["ann_counter"] != max(anns, default=0):
            ext["annCounter"] = t["ann_counter"]
        if t["themes"] is not None:
            ext["themes"] = t["themes"]
        links = self.links()
        if links:
            ext["links"] = links
        if ext:
            out["extensions"] = {NS: ext}
        if kept:
            out = keep.apply(out, snap.tree_ic.get("keep") or [])
            if not self.options.system_context:
                out.pop("systemContext", None)
            if not self.options.agent_prompts:
                _drop_prompts(out.get("agents"))
        return out

    def tree(self) -> dict[str, Any]:
        order = [nid for nid in self.snap.nodes
                 if not (self.omit_root and nid == self.snap.tree["root"])]
        nodes = {self.ids[nid]: self.node(nid) for nid in order}
        if not self.options.raw_responses:
            for node in nodes.values():
                if isinstance(node.get("generation"), dict):
                    node["generation"].pop("rawResponse", None)
        out = self.tree_fields()
        out["nodes"] = nodes
        out["edges"] = self.edges()
        return out


def _drop_prompts(agents: Any) -> None:
    if isinstance(agents, dict):
        for agent in agents.values():
            config = agent.get("configuration") if isinstance(agent, dict) else None
            if isinstance(config, dict):
                config.pop("systemPrompt", None)


def agents(shared: Shared, people: set[str], agent_ids: dict[str, str]) -> dict[str, Any]:
    """The document's agent registry: one entry per participant who wrote something."""
    out: dict[str, Any] = {}
    for pid in sorted(people, key=lambda p: (shared.participants.get(p, {}).get("name", p), p)):
        p = shared.participants.get(pid)
        if p is None:
            continue
        entry: dict[str, Any] = {"name": p["name"],
                                 "type": p["kind"] if p["kind"] in ("human", "model")
                                 else "human"}
        ext: dict[str, Any] = {}
        if p["role"]:
            ext["role"] = p["role"]
        if p["permissions"]:
            ext["permissions"] = p["permissions"]
        if p["loom_aware"]:
            ext["loomAware"] = True
        if p["profile"]:
            ext["profile"] = p["profile"]
        if ext:
            entry["extensions"] = {NS: ext}
        out[agent_ids.get(pid, pid)] = entry
    return out


def documents(shared: Shared, doc_ids: set[str]) -> list[dict[str, Any]]:
    out = []
    for did in sorted(doc_ids, key=lambda d: (shared.documents.get(d, {}).get("name", d), d)):
        d = shared.documents.get(did)
        if d is None:
            continue
        item: dict[str, Any] = {"id": d["id"], "name": d["name"], "content": d["content"]}
        if d["summary"] is not None:
            item["summary"] = d["summary"]
            if d["summary_source"] is not None:
                item["summarySource"] = d["summary_source"]
        item["createdAt"] = format_time(d["created"])
        item["updatedAt"] = format_time(d["updated"])
        out.append(item)
    return out


def container_fields(shared: Shared, people: set[str], agent_ids: dict[str, str],
                     doc_ids: set[str]) -> dict[str, Any]:
    """The document's own fields other than those in CONTAINER_OWN."""
    out: dict[str, Any] = {}
    registry = agents(shared, people, agent_ids)
    if registry:
        out["agents"] = registry
    docs = documents(shared, doc_ids)
    if docs:
        out["extensions"] = {NS: {"documents": docs}}
    return out


def _version_key(version: str) -> tuple[int, int]:
    major, _, minor = version.partition(".")
    try:
        return int(major), int(minor or 0)
    except ValueError:
        return 2, 0


def render_document(snaps: list[Snap], shared: Shared, options: ExportOptions,
                    now: float) -> tuple[dict[str, Any], dict[str, bytes]]:
    """The whole document and the media files a bundle needs (empty: plain JSON)."""
    members: dict[str, bytes] = {}
    trees, people, agent_ids, doc_ids = [], set(), {}, set()
    version = BASE_VERSION
    bundle = False
    for snap in snaps:
        r = Renderer(snap, shared, options, members)
        trees.append(r.tree())
        bundle = bundle or r.bundle
        people |= r.used_people
        agent_ids.update(r.agent_ids)
        doc_ids |= {link["target_doc"] for link in snap.links if link["target_doc"]}
        wrote = snap.tree_ic.get("version")
        if isinstance(wrote, str) and _version_key(wrote) > _version_key(version):
            version = wrote  # the minor version whose fields the file kept
    body = container_fields(shared, people, agent_ids, doc_ids)
    applied: set[str] = set()
    for snap in snaps:  # the trees of one file carry the same entries: applied once
        entries = snap.tree_ic.get("fileKeep") or []
        key = json.dumps(entries, sort_keys=True)
        if key not in applied:
            applied.add(key)
            body = keep.apply(body, entries)
    if not options.agent_prompts:
        _drop_prompts(body.get("agents"))
    doc: dict[str, Any] = {"format": FORMAT, "version": version,
                           "exportedAt": format_time(now),
                           "generator": {"name": "Loom", "version": __version__},
                           "trees": trees}
    doc.update({k: v for k, v in body.items() if k not in CONTAINER_OWN})
    return doc, (members if bundle or options.media == "bundle" else {})
