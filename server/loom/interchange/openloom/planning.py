"""An Open Loom import's tree plans: ``TreePlan``, which plans a tree's rows node by node
from the repaired file (ids, localIds, labels, versions, annotation numbers, depths,
hashes, authors, media, generations and raw responses, edges, provenance checks), and what
it shares with ``plain.PlainTreePlan``, the fast lane for plain trees: the tree's ids and
row, the nodes' ids and localIds, the agents its nodes may name.

``load`` runs the import around the plans (documents, links, keeping what the file says
beyond the rows, writing); a plan only decides rows, and reaches the import under way
through the ``Importer`` protocol."""

from __future__ import annotations

import base64
import binascii
import gzip
import hashlib
import re
import zlib
from collections import defaultdict, deque
from collections.abc import Callable, Iterable
from operator import attrgetter
from typing import Any, Protocol

from loom.interchange.openloom.read import DocumentIn, NodeIn, TreeIn
from loom.interchange.openloom.render import block_text
from loom.interchange.openloom.snapshot import IC, Snap, sort_sources
from loom.interchange.times import parse_iso
from loom.model.ids import LOCAL_ID_LENGTH, local_id_candidates, new_ulid, new_ulids
from loom.render.text import extractive_summary
from loom.store.schema import Generation, Node, Participant, RawResponse
from loom.store.workspace import Workspace, content_hash

_LOCAL_ID = re.compile(r"^[0-9a-hjkmnp-tv-z]{3,16}$")
_ULID = re.compile(r"^[0-9A-HJKMNP-TV-Z]{26}$")
_BUFFER = {"buffer", "text", "prose", "completion", "base", "document", "notebook"}
SYNTHETIC = "\x00root"  # the key of the root Loom adds to a multi-root tree


class Importer(Protocol):
    """What planning needs of the import under way (``load.Importer``)."""

    ws: Workspace
    doc: DocumentIn
    person: Participant  # who imports
    now: float
    issued: set[str]  # the ids given so far
    media_rows: dict[str, dict[str, Any]]  # the media rows to write, by sha256

    def model_author(self) -> Participant: ...

    def author(self, node: NodeIn, registry: dict[str, dict[str, Any]]) -> Participant: ...

    def media(self, block: dict[str, Any], where: str, repairs: list[str]
              ) -> dict[str, Any] | None: ...


def unique_title(ws: Workspace, title: str, reserved: Iterable[str] = ()) -> str:
    """``title``, or ``title (2)``, ``title (3)``… when a tree (or ``reserved``) has it."""
    title = " ".join(title.split()) or "Imported tree"
    taken = ws.bulk.titles_taken(title)
    taken.update(reserved)
    if title not in taken:
        return title
    n = 2
    while f"{title} ({n})" in taken:
        n += 1
    return f"{title} ({n})"


def _int(value: Any, minimum: int = 0) -> int | None:
    ok = isinstance(value, int) and not isinstance(value, bool) and value >= minimum
    return value if ok else None


def _str(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def node_ids(imp: Importer, keys: list[str], when: Callable[[], list[float]],
             clash: bool) -> dict[str, str]:
    """The file's ULIDs when none clashes, else fresh ULIDs in creation order (Loom takes
    the greatest id among an original's versions as the newest); ``when`` gives each key's
    creation time (SYNTHETIC's first)."""
    real = [k for k in keys if k != SYNTHETIC]
    if not clash and all(_ULID.match(k) and k not in imp.issued for k in real):
        out = {k: k for k in real}
        if len(real) < len(keys):
            out[SYNTHETIC] = new_ulid()
        imp.issued.update(out.values())
        return out
    if all(_ULID.match(k) for k in real):
        old = sorted(keys, key=lambda k: (k != SYNTHETIC, k))
    else:
        # (creation time, file order), decorated once: a key function building the pair
        # per node was a third of a second of a 100,000-node import.
        old = [keys[i] for _, i in sorted(zip(when(), range(len(keys)), strict=True))]
    out = dict(zip(old, sorted(new_ulids(len(old))), strict=True))
    imp.issued.update(out.values())
    return out


def local_id_of(seed: str, taken: set[str]) -> str:
    """A node's localId: the first of its ULID's candidates that ``taken`` has not (added
    to it)."""
    first = seed[10:10 + LOCAL_ID_LENGTH].lower()  # local_id_candidates(seed)[0]
    if first not in taken:  # nearly always: no list of candidates to make
        taken.add(first)
        return first
    while True:
        for candidate in local_id_candidates(seed):
            if candidate not in taken:
                taken.add(candidate)
                return candidate
        seed = new_ulid()  # every candidate taken (rare): another seed


def registry_of(imp: Importer, tree_raw: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """The agents a tree's nodes may name: the document's, and the tree's own."""
    registry = dict(imp.doc.agents)
    tree_agents = tree_raw.get("agents")
    if isinstance(tree_agents, dict):
        registry.update({k: v for k, v in tree_agents.items() if isinstance(v, dict)})
    return registry


def file_tree_id(tree_raw: dict[str, Any]) -> str | None:
    file_id = tree_raw.get("id")
    return file_id if isinstance(file_id, str) and file_id else None


def clashes(imp: Importer, file_id: str | None, keys: list[str], used: set[str]) -> bool:
    """Whether the file's tree id or a node id is taken (stored, or by an earlier tree of
    the file): then the tree gets fresh ids."""
    return bool((file_id and imp.ws.tree_or_none(file_id) is not None)
                or imp.ws.any_exists(Node, Node.id, keys) or any(k in used for k in keys))


def tree_id_of(imp: Importer, file_id: str | None, clash: bool) -> str:
    tree_id = file_id if (file_id and not clash and _ULID.match(file_id) and
                          file_id not in imp.issued) else new_ulid()
    imp.issued.add(tree_id)
    return tree_id


class TreeStart:
    """What both plans begin a tree with, in this order (ids are issued as they are made):
    the agents its nodes may name, the file's tree id, whether the file's ids clash with
    what is stored, the nodes' ids (``keys``: the file's, SYNTHETIC first if the tree gets
    Loom's own root; ``when``: their creation times, for fresh ids), the tree's id."""

    def __init__(self, imp: Importer, raw: dict[str, Any], keys: list[str], used: set[str],
                 when: Callable[[], list[float]]) -> None:
        self.registry = registry_of(imp, raw)
        self.file_tree_id = file_tree_id(raw)
        self.clash = clashes(imp, self.file_tree_id, [k for k in keys if k != SYNTHETIC],
                             used)
        self.ids = node_ids(imp, keys, when, self.clash)
        self.tree_id = tree_id_of(imp, self.file_tree_id, self.clash)


def tree_row(imp: Importer, raw: dict[str, Any], t_loom: dict[str, Any], tree_id: str,
             root: str, titles: set[str], file_id: str | None) -> dict[str, Any]:
    """The tree's row (its annotation counter set once its nodes are planned)."""
    title = raw.get("title")
    mode = raw.get("mode")
    mode = mode.lower() if isinstance(mode, str) else "dialogue"
    created = parse_iso(raw.get("createdAt")) or imp.now
    title = unique_title(imp.ws, title if isinstance(title, str) else "", titles)
    return dict(id=tree_id, title=title,
                description=_str(raw.get("description")) or "",
                summary=_str(t_loom.get("summary")),
                summary_source=_str(t_loom.get("summarySource")),
                mode="buffer" if mode in _BUFFER else "dialogue",
                system_context=_str(raw.get("systemContext")) or "",
                archived=t_loom.get("archived") is True, root=root, ann_counter=0,
                summary_counter=0, themes=t_loom.get("themes")
                if isinstance(t_loom.get("themes"), list) else None,
                created=created, updated=parse_iso(raw.get("updatedAt")) or created,
                extra={IC: {"id": file_id}} if file_id and file_id != tree_id else None)


def ic_of(row: dict[str, Any]) -> dict[str, Any]:
    """A planned row's Open Loom record (``extra[IC]``: what the file says beyond the
    row, kept for export), made when the row has none."""
    extra = row.get("extra")
    if extra is None:
        extra = row["extra"] = {}
    return extra.setdefault(IC, {})


def _decode_body(raw: dict[str, Any]) -> str | None:
    """A raw response's body as text (``identity``, or ``gzip+base64`` inflated)."""
    body = raw.get("body")
    if not isinstance(body, str):
        return None
    if raw.get("encoding", "identity") == "identity":
        return body
    if raw.get("encoding") == "gzip+base64":
        try:
            return gzip.decompress(base64.b64decode(body)).decode("utf-8")
        except (binascii.Error, OSError, EOFError, zlib.error, UnicodeDecodeError, ValueError):
            return None
    return None


def _body_bytes(raw: dict[str, Any]) -> bytes | None:
    body = raw.get("body")
    if not isinstance(body, str):
        return None
    if raw.get("encoding", "identity") == "identity":
        return body.encode("utf-8")
    if raw.get("encoding") == "gzip+base64":
        try:
            return gzip.decompress(base64.b64decode(body))
        except (binascii.Error, OSError, EOFError, zlib.error, ValueError):
            return None
    return None


class TreePlan(TreeStart):
    """One tree's rows, planned from the repaired file."""

    def __init__(self, imp: Importer, tree: TreeIn, used: set[str], titles: set[str]) -> None:
        self.imp, self.tree = imp, tree
        self.unverified: list[str] = []
        self.media_count: dict[str, int] = defaultdict(int)
        self.agent_ids: dict[str, str] = {}
        self.raw_ids: dict[str, str] = {}  # body → raw response id
        self.relabel = False
        nodes, now = tree.nodes, imp.now
        self.synthetic = len(tree.bases) > 1
        keys = ([SYNTHETIC] if self.synthetic else []) + list(nodes)
        super().__init__(imp, tree.raw, keys, used, lambda: [
            -1.0 if k == SYNTHETIC else (nodes[k].created or now) for k in keys])
        self.keys = {v: k for k, v in self.ids.items()}
        self.order = self.parents_first()
        self.current = self.ids[tree.current] if tree.current else None
        root = self.ids[SYNTHETIC] if self.synthetic else self.ids[tree.bases[0]]
        self.snap = Snap(
            tree=tree_row(imp, tree.raw, tree.loom, self.tree_id, root, titles,
                          self.file_tree_id),
            nodes={}, edges={}, sources={}, generations={}, raws={}, links=[], position=None)
        self.plan_nodes()
        self.count = len(nodes)
        self.bookmarks = sum(map(attrgetter("bookmarked"), nodes.values()))

    # ids ──────────────────────────────────────────────────────────────────────
    def parent_key(self, key: str) -> str | None:
        if key == SYNTHETIC:
            return None
        edge = self.tree.edges.get(key)
        if edge is not None:
            return edge.sources[0][0]
        if self.synthetic:
            return SYNTHETIC
        return None

    def parents_first(self) -> list[str]:
        kids: dict[str, list[str]] = defaultdict(list)
        keys = ([SYNTHETIC] if self.synthetic else []) + list(self.tree.nodes)
        starts = []
        for k in keys:
            parent = self.parent_key(k)
            (kids[parent].append(k) if parent is not None else starts.append(k))
        out: list[str] = []
        queue = deque(starts)
        while queue:
            k = queue.popleft()
            out.append(k)
            queue.extend(kids.get(k, ()))
        return out

    # nodes ────────────────────────────────────────────────────────────────────
    def plan_nodes(self) -> None:
        imp, tree, snap, ids = self.imp, self.tree, self.snap, self.ids
        nodes = tree.nodes
        loom = {k: nodes[k].loom for k in nodes}
        edge_kind: dict[str, str] = {}
        for k in nodes:
            edge = tree.edges.get(k)
            edge_kind[k] = edge.kind if edge else ("continuation" if self.synthetic else "")
        kinds: dict[str, str] = {}
        if self.synthetic:
            kinds[SYNTHETIC] = "root"
        for k in self.order:
            if k == SYNTHETIC:
                continue
            given = loom[k].get("kind")
            if given in ("root", "continuation", "annotation"):
                kinds[k] = given
            elif edge_kind[k] == "annotation":
                kinds[k] = "annotation"
            elif edge_kind[k] == "version":
                kinds[k] = kinds.get(nodes[k].edited_from or "", "continuation")
            elif edge_kind[k]:
                kinds[k] = "continuation"
            else:
                kinds[k] = "root"
        local_ids = self.local_ids(loom)
        anns = self.ann_numbers(kinds, loom)
        families = self.version_families(loom)
        given_labels = {k: _str(loom[k].get("label")) for k in nodes}
        if self.relabel:
            given_labels = dict.fromkeys(nodes)
        labels = self.labels(kinds, anns, families, local_ids, given_labels)
        depth: dict[str, int] = {}
        hashes: dict[str, str] = {}
        registry = self.registry
        tree_id = snap.tree["id"]
        for k in self.order:
            nid = ids[k]
            if k == SYNTHETIC:
                author = imp.person
                row = dict(id=nid, tree=snap.tree["id"], local_id=local_ids[k], label=labels[k],
                           content="", author=author.id, author_type="human", kind="root",
                           parent=None, depth=0, summary=None, summary_source=None,
                           created=snap.tree["created"], edited_from=None, version_of=None,
                           version_number=0, ann_number=None, bookmarked=False, pruned=False,
                           excluded=False, content_hash=content_hash("", ""),
                           extra={IC: {"synthetic": True}})
                depth[k], hashes[k] = 0, row["content_hash"]
                snap.nodes[nid] = row
                continue
            n = nodes[k]
            ext = loom[k]
            parent_k = self.parent_key(k)
            given_parent = _str(ext.get("parent"))
            if given_parent in nodes and given_parent != k and given_parent in depth:
                parent_k = given_parent
            ic: dict[str, Any] = {}
            if nid != k:
                ic["id"] = k
            if n.role not in ("human", "model"):
                ic["role"] = n.role
            blocks = n.blocks
            one = blocks[0] if len(blocks) == 1 else None
            # (one block {"type": "text", "text": …}, tested without building its twin)
            plain = one is not None and len(one) == 2 and one.get("type") == "text" and \
                "text" in one
            text = (one["text"] or "") if plain else block_text(blocks)  # type: ignore[index]
            if not plain:
                stored, media = [], {}
                for j, block in enumerate(n.blocks):
                    entry = imp.media(block, f'{tree.where}.nodes["{k}"].content[{j}]',
                                      tree.repairs)
                    block = dict(block)
                    if entry is not None:
                        self.media_count[block["type"]] += 1
                        sha, mime = entry["sha"], entry.pop("mime")
                        snap.media[sha] = (mime, imp.media_rows[sha]["data"])
                        if "data" in entry:  # the bytes live in the media table
                            block.pop("ref", None)
                        media[str(j)] = entry
                    stored.append(block)
                ic["blocks"] = stored
                if media:
                    ic["media"] = media
            extra = dict(ext["extra"]) if isinstance(ext.get("extra"), dict) else {}
            extra.pop(IC, None)
            if ic:
                extra[IC] = ic
            family, number = families[k]
            parent_hash = hashes[parent_k] if parent_k is not None else ""
            given_hash = _str(ext.get("contentHash"))
            author = imp.author(n, registry)
            if n.agent_id and n.agent_id in registry:
                self.agent_ids.setdefault(author.id, n.agent_id)
            has_loom = bool(ext)
            summary = _str(ext.get("summary")) if has_loom else (
                extractive_summary(text) or None)
            summary_source = _str(ext.get("summarySource")) if has_loom else (
                "extractive" if summary else None)
            created = n.created if n.created is not None else imp.now
            kind = kinds[k]
            row = {  # (a literal: a third cheaper than dict() with 23 keywords)
                "id": nid, "tree": tree_id, "local_id": local_ids[k], "label": labels[k],
                "content": text, "author": author.id,
                "author_type": "model" if n.role == "model" else "human", "kind": kind,
                "parent": ids[parent_k] if parent_k is not None else None,
                "depth": 0 if parent_k is None else depth[parent_k] + (kind != "annotation"),
                "summary": summary, "summary_source": summary_source, "created": created,
                "edited_from": ids[n.edited_from] if n.edited_from else None,
                "version_of": ids[family] if number and family else None,
                "version_number": number, "ann_number": anns.get(k),
                "bookmarked": n.bookmarked, "pruned": n.pruned, "excluded": n.excluded,
                "content_hash": given_hash or content_hash(parent_hash, text),
                "extra": extra or None}
            depth[k], hashes[k] = row["depth"], row["content_hash"]
            snap.nodes[nid] = row
            if n.generation is not None or "generations" in ext:
                self.plan_generation(k, n, ext, row)
        snap.tree["ann_counter"] = max([_int(tree.loom.get("annCounter")) or 0,
                                        *anns.values()])
        self.plan_edges()
        sort_sources(snap)
        self.verify(hashes)

    def plan_edges(self) -> None:
        snap, ids, tree = self.snap, self.ids, self.tree
        counters: dict[tuple[str, str], int] = defaultdict(int)
        edges, sources = snap.edges, snap.sources
        in_file = tree.edges
        # File order, decorated once (no key function per edge: an import has 100,000).
        for _, k in sorted(zip(map(attrgetter("index"), in_file.values()), in_file,
                               strict=True)):
            edge = in_file[k]
            counter = (edge.sources[0][0], edge.kind)
            counted = counters[counter]
            counters[counter] = counted + 1
            nid = ids[k]
            edges[nid] = {"kind": edge.kind, "sibling_order": edge.sibling_order
                          if edge.sibling_order is not None else counted}
            positions = edge.positions
            sources[nid] = [{"node": ids[src], "role": role,
                             "position": positions[i] if positions else i}
                            for i, (src, role) in enumerate(edge.sources)]
        if self.synthetic:
            for i, k in enumerate(tree.roots):
                snap.edges[ids[k]] = dict(kind="continuation", sibling_order=i)
                snap.sources[ids[k]] = [dict(node=ids[SYNTHETIC], role="primary", position=0)]
        for k, demoted in tree.demoted.items():
            ic = ic_of(snap.nodes[ids[k]])
            ic["demoted"] = [{"index": i, "edge": raw} for i, raw in demoted]

    def plan_generation(self, key: str, n: NodeIn, ext: dict[str, Any],
                        row: dict[str, Any]) -> None:
        imp, snap = self.imp, self.snap
        core = n.generation
        raw_core = core.get("rawResponse") if core and isinstance(core.get("rawResponse"),
                                                                  dict) else None
        rows: list[dict[str, Any]] = []
        given = ext.get("generations")
        if isinstance(given, list) and given and all(isinstance(g, dict) for g in given):
            for i, g in enumerate(given):
                gid = _str(g.get("id"))
                keep_id = bool(gid and _ULID.match(gid) and not self.clash and
                               gid not in imp.issued)
                gid = gid if keep_id and gid and not imp.ws.any_exists(
                    Generation, Generation.id, [gid]) else new_ulid()
                imp.issued.add(gid)
                raw_id = _str(g.get("rawId"))
                if raw_id:
                    body = _decode_body(raw_core) if (i == 0 and raw_core) else \
                        _str(g.get("rawBody"))
                    raw_id = self.raw_row(raw_id, body)
                rows.append(dict(
                    id=gid, node=row["id"], provider=_str(g.get("provider")) or "",
                    model=_str(g.get("model")) or "",
                    params=g.get("params") if isinstance(g.get("params"), dict) else {},
                    usage=g.get("usage") if isinstance(g.get("usage"), dict) else {},
                    latency_ms=float(g["latencyMs"]) if isinstance(g.get("latencyMs"),
                                                                  int | float) else None,
                    completion_index=_int(g.get("completionIndex")) or 0,
                    logprobs=g.get("logprobs"), raw=raw_id,
                    created=parse_iso(g.get("created")) or row["created"]))
        elif core is not None:
            usage = core.get("usage") if isinstance(core.get("usage"), dict) else {}
            u = {k2: usage[k1] for k1, k2 in (("promptTokens", "prompt_tokens"),
                                              ("completionTokens", "completion_tokens"))
                 if _int(usage.get(k1)) is not None}
            raw_id = None
            body = _decode_body(raw_core) if raw_core else None
            if body is not None:
                raw_id = self.raw_row(new_ulid(), body)
            gid = new_ulid()
            imp.issued.add(gid)
            latency = core.get("latencyMs")
            rows.append(dict(
                id=gid, node=row["id"], provider=_str(core.get("provider")) or "",
                model=_str(core.get("model")) or "",
                params=core.get("parameters") if isinstance(core.get("parameters"), dict)
                else {}, usage=u,
                latency_ms=float(latency) if isinstance(latency, int | float) and
                not isinstance(latency, bool) else None,
                completion_index=_int(core.get("completionIndex")) or 0, logprobs=None,
                raw=raw_id, created=parse_iso(core.get("receivedAt")) or parse_iso(
                    core.get("requestedAt")) or row["created"]))
        if rows:
            snap.generations[row["id"]] = rows

    def raw_row(self, wanted: str, body: str | None) -> str | None:
        """The stored id of a raw response (one row per body, shared by the n completions
        of one request), or None when the file does not carry the body."""
        if body is None:
            return None
        snap, imp = self.snap, self.imp
        if body in self.raw_ids:
            return self.raw_ids[body]
        rid = wanted if _ULID.match(wanted) and wanted not in imp.issued and not self.clash \
            and not imp.ws.any_exists(RawResponse, RawResponse.id, [wanted]) else new_ulid()
        imp.issued.add(rid)
        snap.raws[rid] = body
        self.raw_ids[body] = rid
        return rid

    # provenance checks ────────────────────────────────────────────────────────
    def verify(self, hashes: dict[str, str]) -> None:
        """Informational (§ 9): a failed check flags the tree, the tree still loads."""
        tree, nodes, problems = self.tree, self.tree.nodes, self.unverified
        generator = self.imp.doc.raw.get("generator")
        loom_scheme = isinstance(generator, dict) and generator.get("name") == "Loom"
        for k, n in nodes.items():
            g = n.generation
            if g is None:
                continue
            at = f'{tree.where}.nodes["{k}"].generation'
            raw = g.get("rawResponse")
            if isinstance(raw, dict) and isinstance(raw.get("bodyHash"), str) and \
                    raw["bodyHash"].startswith("sha256:") and raw.get("body") is not None:
                data = _body_bytes(raw)
                if data is None:
                    problems.append(f"{at}.rawResponse.body cannot be decoded")
                elif "sha256:" + hashlib.sha256(data).hexdigest() != raw["bodyHash"]:
                    problems.append(f"{at}.rawResponse.bodyHash does not match the body")
            parent = self.parent_key(k)
            parent_gen = nodes[parent].generation if parent in nodes else None
            want = parent_gen.get("contentHash") if parent_gen else None
            given = g.get("parentHashes")
            if isinstance(want, str) and isinstance(given, list) and given and \
                    want not in given:
                problems.append(f"{at}.parentHashes does not include the parent's "
                                "contentHash")
            if loom_scheme and isinstance(g.get("contentHash"), str) and \
                    g["contentHash"].startswith("sha256:") and \
                    g["contentHash"] != "sha256:" + hashes[k]:
                problems.append(f"{at}.contentHash does not match the node's text")

    # localIds, labels, versions, annotations ─────────────────────────────────
    def local_ids(self, loom: dict[str, dict[str, Any]]) -> dict[str, str]:
        """LocalIds kept where valid and unique in the tree, else allocated from the node's
        ULID; ``relabel`` says whether a given one had to be replaced."""
        out: dict[str, str] = {}
        taken: set[str] = set()
        for k in self.order:
            want = _str(loom[k].get("localId")) if k != SYNTHETIC else None
            if want and _LOCAL_ID.match(want) and want not in taken:
                out[k] = want
                taken.add(want)
        self.relabel = False
        for k in self.order:
            if k in out:
                continue
            self.relabel = self.relabel or (k != SYNTHETIC and "localId" in loom[k])
            out[k] = local_id_of(self.ids[k], taken)
        return out

    def ann_numbers(self, kinds: dict[str, str], loom: dict[str, dict[str, Any]]
                    ) -> dict[str, int]:
        out: dict[str, int] = {}
        used: set[int] = set()
        todo = [k for k in self.order if kinds.get(k) == "annotation"]
        for k in todo:
            number = _int(loom[k].get("annNumber"), 1)
            if number is not None and number not in used:
                out[k] = number
                used.add(number)
        nxt = max(used, default=0)
        for k in todo:
            if k not in out:
                nxt += 1
                out[k] = nxt
        return out

    def version_families(self, loom: dict[str, dict[str, Any]]
                         ) -> dict[str, tuple[str | None, int]]:
        """(family, number) per node: the original its versions descend from, and primes."""
        nodes = self.tree.nodes
        out: dict[str, tuple[str | None, int]] = dict.fromkeys(self.order, (None, 0))
        next_number: dict[str, int] = defaultdict(int)
        for k in nodes:
            fam, num = _str(loom[k].get("versionOf")), _int(loom[k].get("versionNumber"), 1)
            if fam in nodes and num:
                next_number[fam] = max(next_number[fam], num)
        versions = [k for k in self.order if k != SYNTHETIC and nodes[k].edited_from]
        versions.sort(key=lambda v: (_int(loom[v].get("versionNumber"), 1) is None,
                                     _int(loom[v].get("versionNumber"), 1) or 0))
        for k in versions:
            family = _str(loom[k].get("versionOf"))
            if family not in nodes or family == k:
                family = nodes[k].edited_from
                while family is not None and nodes[family].edited_from is not None:
                    up = _str(loom[family].get("versionOf"))
                    family = up if up in nodes and up != family else nodes[family].edited_from
            if family is None:
                continue
            number = _int(loom[k].get("versionNumber"), 1) or next_number[family] + 1
            next_number[family] = max(next_number[family], number)
            out[k] = (family, number)
        return out

    def labels(self, kinds: dict[str, str], anns: dict[str, int],
               families: dict[str, tuple[str | None, int]], local_ids: dict[str, str],
               given: dict[str, str | None]) -> dict[str, str]:
        """As the store labels nodes: ``ann-N``, the original's label with a prime per
        version number, else the localId; a label the file gives wins."""
        out: dict[str, str] = {}
        # Originals first (a stable sort by version number; nearly every node is one).
        versions = sorted((k for k in self.order if families[k][1]),
                          key=lambda x: families[x][1])
        for k in [k for k in self.order if not families[k][1]] + versions:
            family, number = families[k]
            if kinds.get(k) == "annotation":
                out[k] = f"ann-{anns[k]}"
            elif given.get(k):
                out[k] = given[k]  # type: ignore[assignment]
            elif number and family is not None:
                out[k] = out.get(family, local_ids[family]) + "'" * number
            else:
                out[k] = local_ids[k]
        return out
