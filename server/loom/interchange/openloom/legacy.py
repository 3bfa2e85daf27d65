"""Files written by earlier Loom versions: their own dialect of Open Loom, converted.

Before Loom wrote the published shape it wrote ``root``, ``created``/``updated``, string
``content``, ``author: {name, role}``, flags on the node, edges with ``target``/``kind``
and ``sources[].node``/``position``, ``links`` on the tree, raw responses in the tree's
``extensions.loom.rawResponses``, and ``documents``/``participants`` lists. A file in
that dialect is recognised by those fields and rewritten into Open Loom 2.0 with nothing
dropped, so every export a user made still imports.
"""

from __future__ import annotations

import hashlib
from typing import Any

NS = "loom"


def is_legacy(data: dict[str, Any]) -> bool:
    """Open Loom as Loom wrote it before the published draft."""
    trees = data.get("trees")
    if not isinstance(trees, list):
        return False
    for tree in trees:
        if not isinstance(tree, dict):
            continue
        if isinstance(tree.get("root"), str) and "rootNodeIds" not in tree:
            return True
        edges = tree.get("edges")
        if isinstance(edges, list) and any(isinstance(e, dict) and "target" in e and
                                           "targetNodeId" not in e for e in edges):
            return True
    return False


def _sha(text: str) -> str:
    return "sha256:" + hashlib.sha256(text.encode("utf-8")).hexdigest()


def _loom_gen(g: dict[str, Any], body: str | None, first: bool) -> dict[str, Any]:
    out = {"id": g.get("id"), "provider": g.get("provider") or "", "model": g.get("model") or "",
           "params": g.get("params") or {}, "usage": g.get("usage") or {},
           "latencyMs": g.get("latencyMs"), "completionIndex": g.get("completionIndex") or 0,
           "created": g.get("created")}
    if g.get("logprobs") is not None:
        out["logprobs"] = g["logprobs"]
    if g.get("rawId"):
        out["rawId"] = g["rawId"]
        if not first and body is not None:
            out["rawBody"] = body
    return {k: v for k, v in out.items() if v is not None}


def _core_gen(g: dict[str, Any], body: str | None) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if g.get("provider"):
        out["provider"] = g["provider"]
    if g.get("model"):
        out["model"] = g["model"]
    if g.get("params"):
        out["parameters"] = g["params"]
    if g.get("created"):
        out["receivedAt"] = g["created"]
    if g.get("latencyMs") is not None:
        out["latencyMs"] = g["latencyMs"]
    out["completionIndex"] = g.get("completionIndex") or 0
    if body is not None:
        out["rawResponse"] = {"bodyHash": _sha(body), "encoding": "identity", "body": body}
    return out


def _node(node: Any, raws: dict[str, str]) -> Any:
    if not isinstance(node, dict):
        return node
    out = {k: v for k, v in node.items() if k not in (
        "content", "author", "created", "summary", "summarySource", "editedFrom",
        "bookmarked", "pruned", "excluded", "contentHash", "kind", "generation",
        "extensions")}
    content = node.get("content")
    out["content"] = [{"type": "text", "text": content}] if isinstance(content, str) else content
    author = node.get("author") if isinstance(node.get("author"), dict) else {}
    out["author"] = {"role": author.get("role") or "human"}
    if author.get("name"):
        out["author"]["agentId"] = author["name"]
    if node.get("created"):
        out["createdAt"] = node["created"]
    if node.get("editedFrom"):
        out["editedFrom"] = node["editedFrom"]
    meta = {k: True for k in ("bookmarked", "pruned", "excluded") if node.get(k) is True}
    if meta:
        out["meta"] = meta
    ext = dict(node.get("extensions") or {}) if isinstance(node.get("extensions"), dict) else {}
    old = ext.pop(NS, None)
    loom: dict[str, Any] = {}
    if isinstance(old, dict):
        loom.update({k: v for k, v in old.items() if k != "moreGenerations" and v is not None})
        if loom.get("versionNumber") == 0:
            del loom["versionNumber"]
    for key, name in (("summary", "summary"), ("summarySource", "summarySource"),
                      ("contentHash", "contentHash"), ("kind", "kind")):
        if node.get(key) is not None:
            loom[name] = node[key]
    gens = [node["generation"]] if isinstance(node.get("generation"), dict) else []
    if isinstance(old, dict) and isinstance(old.get("moreGenerations"), list):
        gens += [g for g in old["moreGenerations"] if isinstance(g, dict)]
    if gens:
        loom["generations"] = [_loom_gen(g, raws.get(g.get("rawId") or ""), i == 0)
                               for i, g in enumerate(gens)]
        out["generation"] = _core_gen(gens[0], raws.get(gens[0].get("rawId") or ""))
    ext[NS] = loom
    out["extensions"] = ext
    return out


def _edge(edge: Any) -> Any:
    if not isinstance(edge, dict):
        return edge
    out = {k: v for k, v in edge.items() if k not in ("target", "kind", "sources",
                                                      "extensions")}
    kind = edge.get("kind", "continuation")
    out["type"] = "annotation" if kind == "annotation" else "continuation"
    sources = edge.get("sources") if isinstance(edge.get("sources"), list) else []
    out["sources"] = [{"nodeId": s.get("node"), "role": s.get("role") or "primary"}
                      for s in sources if isinstance(s, dict)]
    out["targetNodeId"] = edge.get("target")
    ext = dict(edge.get("extensions") or {}) if isinstance(edge.get("extensions"), dict) else {}
    old = ext.pop(NS, None)
    loom: dict[str, Any] = {}
    if kind == "version":
        loom["kind"] = "version"
    positions = [s.get("position", i) for i, s in enumerate(sources) if isinstance(s, dict)]
    if positions != list(range(len(positions))):
        loom["positions"] = positions
    if isinstance(old, dict) and isinstance(old.get("siblingOrder"), int):
        loom["siblingOrder"] = old["siblingOrder"]
    if loom:
        ext[NS] = loom
    if ext:
        out["extensions"] = ext
    return out


def _tree(tree: Any) -> Any:
    if not isinstance(tree, dict):
        return tree
    ext = dict(tree.get("extensions") or {}) if isinstance(tree.get("extensions"), dict) else {}
    old = ext.pop(NS, None) or {}
    raws = old.get("rawResponses") if isinstance(old.get("rawResponses"), dict) else {}
    out = {k: v for k, v in tree.items() if k not in (
        "summary", "summarySource", "archived", "created", "updated", "root", "nodes", "edges",
        "links", "extensions")}
    nodes = tree.get("nodes") if isinstance(tree.get("nodes"), dict) else {}
    edges = tree.get("edges") if isinstance(tree.get("edges"), list) else []
    targets = {e.get("target") for e in edges if isinstance(e, dict)}
    root = tree.get("root")
    roots = ([root] if isinstance(root, str) else []) + [
        k for k in nodes if k not in targets and k != root]
    out["rootNodeIds"] = roots
    if tree.get("created"):
        out["createdAt"] = tree["created"]
    if tree.get("updated"):
        out["updatedAt"] = tree["updated"]
    out["nodes"] = {k: _node(v, raws) for k, v in nodes.items()}
    out["edges"] = [_edge(e) for e in edges]
    loom: dict[str, Any] = {k: v for k, v in old.items() if k != "rawResponses"}
    for key in ("summary", "summarySource"):
        if tree.get(key) is not None:
            loom[key] = tree[key]
    if tree.get("archived"):
        loom["archived"] = True
    links = []
    for link in tree.get("links") or []:
        if not isinstance(link, dict):
            continue
        item = {k: v for k, v in link.items() if k != "created"}
        target = link.get("target")
        if isinstance(target, dict):
            item["target"] = {k: v for k, v in target.items() if v is not None}
        if link.get("created"):
            item["createdAt"] = link["created"]
        links.append({k: v for k, v in item.items() if v is not None})
    if links:
        loom["links"] = links
    if loom:
        ext[NS] = loom
    if ext:
        out["extensions"] = ext
    return out


def convert(data: dict[str, Any]) -> dict[str, Any]:
    """The same content in Open Loom 2.0."""
    out = {k: v for k, v in data.items() if k not in ("trees", "documents", "participants",
                                                      "version")}
    out["version"] = "2.0"
    out["trees"] = [_tree(t) for t in data.get("trees") or []]
    agents: dict[str, Any] = {}
    for p in data.get("participants") or []:
        if not isinstance(p, dict) or not p.get("name"):
            continue
        ext = {"role": p.get("role"), "permissions": p.get("permissions") or None,
               "loomAware": p.get("loomAware") or None, "profile": p.get("profile")}
        entry: dict[str, Any] = {"name": p["name"], "type": p.get("kind") or "human"}
        ext = {k: v for k, v in ext.items() if v}
        if ext:
            entry["extensions"] = {NS: ext}
        agents[p["name"]] = entry
    if agents:
        out["agents"] = agents
    docs = []
    for d in data.get("documents") or []:
        if isinstance(d, dict):
            item = {k: v for k, v in d.items() if k not in ("created", "updated")
                    and v is not None}
            for old, new in (("created", "createdAt"), ("updated", "updatedAt")):
                if d.get(old):
                    item[new] = d[old]
            docs.append(item)
    if docs:
        ext = dict(out.get("extensions") or {})
        ext[NS] = {**(ext.get(NS) or {}), "documents": docs}
        out["extensions"] = ext
    return out
