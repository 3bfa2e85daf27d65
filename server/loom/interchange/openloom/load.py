"""An Open Loom 2.x document → Loom's rows, in one transaction.

After ``read`` has repaired each tree, this module plans every row (ids, localIds, labels,
versions, annotation numbers, depths, hashes, participants, provenance, media, links,
documents), renders the planned rows exactly as an export would, keeps where the file
differs (``loom.interchange.keep``), and writes everything at once: a file that fails
anywhere leaves the database as it was.

Decisions (docs/openloom.md has the full list):

- Ids are opaque. A tree's node ids are stored as they are when all are ULIDs and none is
  taken; otherwise the whole tree gets fresh ULIDs (in the file's creation order, which
  is how Loom orders versions) and each original is kept to be written back.
- A multi-root tree gets an empty root of Loom's own holding its roots in order; export
  leaves it out again. A root that is an edit of another root is that root's version.
- Authors: an ``agentId`` in the registry names a participant; else ``author.name``; else
  the importing person (human, mixed and system roles) or the subject model (model). A
  participant is matched by name and never changed; a new one gets no permissions unless
  the importer trusts the file.
- ``generation`` is kept as the file has it; Loom also stores what it understands of it
  (a generation record, the raw response when its body is there) for its own views.
"""

from __future__ import annotations

import base64
import binascii
import gzip
import hashlib
import re
import zlib
from collections import defaultdict, deque
from collections.abc import Callable
from dataclasses import dataclass, field
from operator import attrgetter, itemgetter
from typing import Any

import peewee as pw

import loom.interchange.jsontext as jsontext
import loom.interchange.keep as keep
import loom.interchange.openloom.verbatim as verbatim
from loom.errors import LoomError
from loom.interchange.files import ImportLimits, size_text
from loom.interchange.media import check, data_uri, digest, normal_mime, parse_data_uri
from loom.interchange.openloom.plain import PlainTreePlan
from loom.interchange.openloom.planning import (
    _ULID,
    SYNTHETIC,
    TreeStart,
    _int,
    _str,
    local_id_of,
    tree_row,
)
from loom.interchange.openloom.read import NS, DocumentIn, NodeIn, PlainTreeIn, TreeIn
from loom.interchange.openloom.render import (
    CONTAINER_OWN,
    ExportOptions,
    Renderer,
    block_text,
    container_fields,
)
from loom.interchange.openloom.snapshot import IC, Shared, Snap, sort_sources
from loom.interchange.report import ImportedTree, ImportReport
from loom.interchange.times import parse_iso
from loom.model.ids import new_ulid
from loom.render.text import extractive_summary
from loom.store.dialect import upsert
from loom.store.schema import (
    Document,
    Edge,
    EdgeSource,
    Generation,
    JSONField,
    Link,
    Media,
    Node,
    Participant,
    Position,
    RawResponse,
    Tree,
)
from loom.store.workspace import Workspace, content_hash

_LOCAL_ID = re.compile(r"^[0-9a-hjkmnp-tv-z]{3,16}$")
_CHUNK = 500
_DIALOGUE = {"dialogue", "chat", "conversation", "messages", "dialog"}

MediaSource = Callable[[str], bytes | None]  # a bundle member's bytes, None when absent


@dataclass
class Importer:
    """One document's import: ``run`` plans, checks and writes."""

    ws: Workspace
    doc: DocumentIn
    person: Participant  # who imports: unnamed human nodes are theirs, they are placed
    trust_permissions: bool = False
    media_source: MediaSource | None = None
    limits: ImportLimits = field(default_factory=ImportLimits)
    format: str = "Open Loom 2.0"
    now: float = 0.0
    issued: set[str] = field(default_factory=set)
    media_rows: dict[str, dict[str, Any]] = field(default_factory=dict)
    media_total: int = 0
    people: dict[str, Participant] = field(default_factory=dict)  # by name

    # ── participants ──────────────────────────────────────────────────────────
    def participant(self, name: str, kind: str, role: str, ext: dict[str, Any]) -> Participant:
        if name in self.people:
            return self.people[name]
        trusted = self.trust_permissions
        perms = ext.get("permissions") if trusted and isinstance(ext.get("permissions"),
                                                                 list) else ()
        p = self.ws.ensure_participant(  # an existing participant is left as it is
            name, kind, _str(ext.get("role")) or role, [x for x in perms if isinstance(x, str)],
            loom_aware=trusted and ext.get("loomAware") is True,
            profile=_str(ext.get("profile")))
        self.people[name] = p
        return p

    def author(self, node: NodeIn, registry: dict[str, dict[str, Any]]) -> Participant:
        kind = "model" if node.role == "model" else "human"
        agent = registry.get(node.agent_id or "") if node.agent_id else None
        if agent is not None:
            ext = agent.get("extensions") if isinstance(agent.get("extensions"), dict) else {}
            ext = ext.get(NS) if isinstance(ext.get(NS), dict) else {}
            name = _str(agent.get("name")) or node.agent_id or kind
            a_kind = agent.get("type") if agent.get("type") in ("human", "model") else kind
            return self.participant(name.strip() or kind, a_kind,
                                    "subject" if a_kind == "model" else "human", ext)
        if node.name:
            return self.participant(node.name.strip() or kind, kind,
                                    "subject" if kind == "model" else "human", {})
        if node.role == "model":
            return self.model_author()
        if node.role == "system":
            return self.participant("system", "human", "system", {})
        return self.person

    def model_author(self) -> Participant:
        """The subject model: a model's node that names nobody is its."""
        if "\x00model" not in self.people:  # (looked up once)
            self.people["\x00model"] = self.ws.subject()
        return self.people["\x00model"]

    def link_author(self, ref: str | None, registry: dict[str, dict[str, Any]]
                    ) -> Participant:
        """A link's author: an agent id of the registry, else a participant's name."""
        if ref and ref in registry:
            probe = NodeIn("", {}, [], "human", ref, None, None, None, False, False, False,
                           None, {})
            return self.author(probe, registry)
        return self.participant(ref, "human", "human", {}) if ref else self.person

    # ── media ─────────────────────────────────────────────────────────────────
    def media(self, block: dict[str, Any], where: str, repairs: list[str]
              ) -> dict[str, Any] | None:
        """The block's media entry (its bytes stored), or None when it has none to keep."""
        kind, ref = block.get("type"), block.get("ref")
        if kind not in ("image", "audio") or not isinstance(ref, str) or not ref:
            return None
        declared = block.get("mimeType")
        if ref.startswith("data:"):
            head_mime, data, head = parse_data_uri(ref, where)
            if isinstance(declared, str) and normal_mime(head_mime) != normal_mime(declared):
                raise LoomError("INVALID_SYNTAX", f'{where}.ref: the data: URI says '
                                f'"{head_mime}" but mimeType says "{declared}"',
                                "a media file must be what its mimeType says; nothing was "
                                "imported")
            # Canonical base64 is rebuilt from the stored bytes; anything else stays as the
            # file wrote it (the block keeps its ref).
            entry: dict[str, Any] = {"data": head} if data_uri(head, data) == ref else {}
        else:
            from loom.interchange.bundle import member_path

            path = member_path(ref)
            if path is None:
                repairs.append(f'{where}.ref "{ref[:80]}" is neither a data: URI nor a path '
                               "inside a bundle: kept as it is, not read")
                return None
            data = self.media_source(path) if self.media_source else None
            if data is None:
                repairs.append(f'{where}.ref "{ref}" is not in the bundle: kept as a '
                               "placeholder")
                return None
            entry = {"path": ref}
        if not isinstance(declared, str):
            repairs.append(f"{where} has no mimeType: its {kind} is not kept")
            return None
        if len(data) > self.limits.max_media_bytes:
            raise LoomError("LIMIT_EXCEEDED", f"{where}: the {kind} is {size_text(len(data))}, "
                            f"over the limit of {size_text(self.limits.max_media_bytes)}",
                            "nothing was imported")
        mime = check(data, declared, kind, where)
        sha = digest(data)
        if sha not in self.media_rows:
            self.media_total += len(data)
            if self.media_total > self.limits.max_media_total:
                raise LoomError("LIMIT_EXCEEDED", f"the media add up to more than "
                                f"{size_text(self.limits.max_media_total)}",
                                "nothing was imported")
            self.media_rows[sha] = dict(sha256=sha, mime=mime, size=len(data), data=data,
                                        created=self.now)
        entry["sha"] = sha
        entry["mime"] = mime
        return entry

    # ── the whole document ────────────────────────────────────────────────────
    def run(self) -> ImportReport:
        report = ImportReport(self.format, repairs=list(self.doc.repairs))
        used: set[str] = set()
        titles: set[str] = set()
        try:
            with self.ws.checkpoint_later(), self.ws.db.atomic():
                doc_rows, doc_ids = self.plan_documents()
                plans: list[TreePlan | PlainTreePlan] = []
                for tree in self.doc.trees:
                    plan = self.plan_tree(tree, used, titles)
                    used.update(plan.ids.values())
                    titles.add(plan.snap.tree["title"])
                    plans.append(plan)
                    report.repairs.extend(tree.repairs)
                self.plan_links(plans, doc_ids)
                shared = self.shared(plans, doc_rows)
                people: set[str] = set()
                docs: set[str] = set()
                agent_ids: dict[str, str] = {}
                for plan in plans:
                    used = self.keep_differences(plan, shared)
                    people |= used
                    docs |= {link["target_doc"] for link in plan.snap.links
                             if link["target_doc"]}
                    agent_ids.update(plan.snap.tree_ic.get("agentIds") or {})
                # The document's own fields, as Loom renders them for all its trees at once.
                rendered_file = container_fields(shared, people, agent_ids, docs)
                file_own = {k: v for k, v in self.doc.raw.items() if k not in CONTAINER_OWN}
                file_keep = keep.diff(rendered_file, file_own)
                for plan in plans:
                    if file_keep:
                        _tic(plan.snap.tree)["fileKeep"] = file_keep
                self.write(doc_rows, plans)
        except pw.IntegrityError as err:
            raise LoomError("CONFLICT", f"the file clashes with what is stored: {err}",
                            "nothing was imported; retry") from None
        for plan in plans:
            report.trees.append(ImportedTree(
                Tree.get_by_id(plan.snap.tree["id"]), plan.count, bookmarks=plan.bookmarks,
                images=plan.media_count.get("image", 0), audio=plan.media_count.get("audio", 0),
                unverified=plan.unverified))
        return report

    def shared(self, plans: list[TreePlan | PlainTreePlan], doc_rows: list[dict[str, Any]]
               ) -> Shared:
        people = {p.id: {"id": p.id, "name": p.name, "kind": p.kind, "role": p.role,
                         "permissions": list(p.permissions or []), "loom_aware": p.loom_aware,
                         "profile": p.profile} for p in Participant.select()}
        docs = {d.id: {"id": d.id, "name": d.name, "content": d.content, "summary": d.summary,
                       "summary_source": d.summary_source, "created": d.created,
                       "updated": d.updated} for d in Document.select()}
        for row in doc_rows:
            docs[row["id"]] = dict(row)
        return Shared(people, docs)

    # ── documents and links (Loom's, under extensions.loom) ───────────────────
    def plan_documents(self) -> tuple[list[dict[str, Any]], dict[str, str]]:
        """Rows to create and the map file doc id → stored doc id. A document of the same
        name and content is the same document; a different one of that name is
        ``name (2)``."""
        rows: list[dict[str, Any]] = []
        ids: dict[str, str] = {}
        docs = self.doc.loom.get("documents")
        names = {d.name: d for d in Document.select()}
        for d in docs if isinstance(docs, list) else []:
            if not isinstance(d, dict) or not _str(d.get("name")):
                continue
            did, content = _str(d.get("id")), _str(d.get("content")) or ""
            if did and did in ids:
                continue
            existing = Document.get_or_none(Document.id == did) if did else None
            same = names.get(d["name"])
            if existing is None and same is not None and same.content == content:
                existing = same
            if existing is not None:
                if did:
                    ids[did] = existing.id
                continue
            name, n = d["name"], 2
            while name in names:
                name, n = f"{d['name']} ({n})", n + 1
            new_id = did if did and _ULID.match(did) and did not in self.issued else new_ulid()
            self.issued.add(new_id)
            created = parse_iso(d.get("createdAt")) or self.now
            row = dict(id=new_id, name=name, content=content, summary=_str(d.get("summary")),
                       summary_source=_str(d.get("summarySource")), created=created,
                       updated=parse_iso(d.get("updatedAt")) or created)
            rows.append(row)
            names[name] = Document(**row)
            if did:
                ids[did] = new_id
        return rows, ids

    def plan_links(self, plans: list[TreePlan | PlainTreePlan], doc_ids: dict[str, str]) -> None:
        if not any(p.tree.loom.get("links") for p in plans):
            return  # (nearly every file: no id maps to build)
        node_ids = {old: new for p in plans for old, new in p.ids.items()}
        tree_ids = {p.file_tree_id: p.snap.tree["id"] for p in plans if p.file_tree_id}
        tree_of = {new: p.snap.tree["id"] for p in plans for new in p.ids.values()}
        for p in plans:
            links = p.tree.loom.get("links")
            for i, link in enumerate(links if isinstance(links, list) else []):
                at = f"{p.tree.where}.extensions.loom.links[{i}]"
                target = link.get("target") if isinstance(link, dict) else None
                source = p.ids.get(link.get("source")) if isinstance(link, dict) else None
                kind = target.get("kind") if isinstance(target, dict) else None
                if source is None or kind not in ("node", "tree", "doc") or \
                        not _str(target.get(kind)):
                    p.tree.repairs.append(f"{at} is not a link Loom can read: left out")
                    continue
                node = _str(target.get("node"))
                node = p.ids.get(node, node_ids.get(node, node)) if node else None
                tree = _str(target.get("tree"))
                tree = tree_ids.get(tree, tree) if tree else (tree_of.get(node) if node
                                                              else None)
                doc = _str(target.get("doc"))
                link_id = _str(link.get("id"))
                link_id = link_id if link_id and _ULID.match(link_id) and not p.clash and \
                    link_id not in self.issued else new_ulid()
                self.issued.add(link_id)
                who = self.link_author(_str(link.get("author")), p.registry)
                p.snap.links.append(dict(
                    id=link_id, tree=p.snap.tree["id"], source=source, target_kind=kind,
                    target_node=node, target_tree=tree,
                    target_doc=doc_ids.get(doc, doc) if doc else None,
                    target_section=_str(target.get("section")), note=_str(link.get("note")),
                    author=who.id, created=parse_iso(link.get("createdAt")) or self.now))
                p.agent_ids.setdefault(who.id, _str(link.get("author")) or who.id)

    # ── one tree ──────────────────────────────────────────────────────────────
    def plan_tree(self, tree: TreeIn | PlainTreeIn, used: set[str], titles: set[str]
                  ) -> TreePlan | PlainTreePlan:
        if isinstance(tree, PlainTreeIn):
            return PlainTreePlan(self, tree, used, titles)
        return TreePlan(self, tree, used, titles)

    def keep_differences(self, plan: TreePlan | PlainTreePlan, shared: Shared) -> set[str]:
        """Render the planned rows as an export would and keep where the file differs;
        the participants the rendering names."""
        snap = plan.snap
        tic = _tic(snap.tree)
        agent_ids = {pid: aid for pid, aid in plan.agent_ids.items() if pid != aid}
        if agent_ids:
            tic["agentIds"] = agent_ids
        if isinstance(plan, PlainTreePlan):  # (its nodes and edges are kept as planned)
            r = plan.renderer(shared)
            r.used_people |= plan.authors
        else:
            r = Renderer(snap, shared, ExportOptions(), {})
            self.keep_nodes(plan, r)
        return self.keep_tree(plan, r)

    def keep_nodes(self, plan: TreePlan, r: Renderer) -> None:
        """What the file says of each node and edge beyond the planned rows."""
        snap = plan.snap
        file_nodes = plan.tree.nodes
        # A file Loom wrote usually renders exactly as it reads (nothing to keep): it is
        # diffed now. Any other file's nodes are kept whole, diffed only if an export
        # finds one changed in Loom (``verbatim``).
        generator = self.doc.raw.get("generator")
        diffed = isinstance(generator, dict) and generator.get("name") == "Loom"
        for nid, row in snap.nodes.items():
            key = plan.keys.get(nid)
            if key is None or key == SYNTHETIC:
                continue  # Loom's own root of a multi-root tree
            if not diffed:
                r.used_people.add(row["author"])
                kept = verbatim.keep_node(file_nodes[key].raw, row)
                extra = row["extra"]
                if extra is None:  # (most nodes: the record is the kept node)
                    row["extra"] = {IC: kept}
                else:
                    extra.setdefault(IC, {}).update(kept)
                continue
            rendered = r.node(nid, kept=False)
            entries = keep.diff(rendered, file_nodes[key].raw)
            if entries:
                _ic(row)["keep"] = entries
        counters: dict[tuple[str, str], int] = defaultdict(int)
        edges_in, keys, sources, edges = plan.tree.edges, plan.keys, snap.sources, snap.edges
        for _, target, _demoted in r.edge_order():
            if target is None:
                continue
            srcs, edge = sources[target], edges[target]
            counter = (srcs[0]["node"], edge["kind"])
            counted = counters[counter]
            counters[counter] = counted + 1
            edge_in = edges_in.get(keys.get(target, ""))
            if edge_in is None:
                continue
            if not diffed:
                _ic(snap.nodes[target])["edge"] = {
                    "index": edge_in.index, "file": edge_in.raw,
                    "at": verbatim.edge_state(edge, counted, srcs)}
                continue
            entries = keep.diff(r.edge(target, counted, kept=False), edge_in.raw)
            ic = _ic(snap.nodes[target])
            ic.setdefault("edge", {})["index"] = edge_in.index
            if entries:
                ic["edge"]["keep"] = entries

    def keep_tree(self, plan: TreePlan | PlainTreePlan, r: Renderer) -> set[str]:
        """What the file says of the tree beyond its row; the participants rendered."""
        snap, tic = plan.snap, _tic(plan.snap.tree)
        original = {k: v for k, v in plan.tree.raw.items() if k not in ("nodes", "edges")}
        snap.position = plan.current  # as the export will see it
        tree_keep = keep.diff(r.tree_fields(kept=False), original)
        if tree_keep:
            tic["keep"] = tree_keep
        tic["person"] = self.person.id
        if self.doc.version != "2.0":
            tic["version"] = self.doc.version
        if plan.unverified:
            tic["unverified"] = plan.unverified[:50]
        tic["source"] = self.format
        return r.used_people | {link["author"] for link in snap.links}

    # ── writing ───────────────────────────────────────────────────────────────
    def write(self, doc_rows: list[dict[str, Any]], plans: list[TreePlan | PlainTreePlan]
              ) -> None:
        for row in doc_rows:
            Document.insert(**row).execute()
        fresh = [r for sha, r in self.media_rows.items()
                 if Media.get_or_none(Media.sha256 == sha) is None]
        _insert(self.ws, Media, fresh)
        with self.ws.nodes_indexed_after([plan.snap.tree["id"] for plan in plans]):
            self.write_trees(plans)

    def write_trees(self, plans: list[TreePlan | PlainTreePlan]) -> None:
        for plan in plans:
            snap = plan.snap
            t = dict(snap.tree)
            Tree.insert(**t).execute()
            if isinstance(plan, PlainTreePlan):
                plan.write(self.ws)
            else:
                _insert(self.ws, Node, list(snap.nodes.values()))
                _insert(self.ws, Edge, [dict(target=k, tree=t["id"], kind=e["kind"],
                                             sibling_order=e["sibling_order"])
                                        for k, e in snap.edges.items()])
                _insert(self.ws, EdgeSource, [dict(target=k, node=s["node"], role=s["role"],
                                                   position=s["position"])
                                              for k, srcs in snap.sources.items()
                                              for s in srcs])
                _insert(self.ws, RawResponse, [dict(id=k, body=v)
                                               for k, v in snap.raws.items()])
                _insert(self.ws, Generation, [g for gl in snap.generations.values()
                                              for g in gl])
            _insert(self.ws, Link, snap.links)
            self.ws.log_change(t["id"], "tree.create", t["id"], self.person.id,
                               {"title": t["title"], "mode": t["mode"], "import": self.format})
            self.ws.log_change(t["id"], "node.bulk", t["id"], None, {"count": plan.count})
            if plan.current is not None:
                upsert(Position, ("participant", "tree"), participant=self.person.id,
                       tree=t["id"], node=plan.current, tip=plan.current,
                       updated=self.now).execute()
                self.ws.log_change(t["id"], "position", plan.current, self.person.id,
                                   {"tip": plan.current})


def _ic(row: dict[str, Any]) -> dict[str, Any]:
    extra = row.get("extra")
    if extra is None:
        extra = row["extra"] = {}
    return extra.setdefault(IC, {})


def _tic(tree_row: dict[str, Any]) -> dict[str, Any]:
    return _ic(tree_row)


def _passes(f: pw.Field) -> tuple[type, ...]:
    """The value types a column's conversion returns unchanged (both backends take them as
    they are): none for blobs, which always convert."""
    if isinstance(f, pw.BlobField):
        return ()
    if isinstance(f, pw.ForeignKeyField):
        return _passes(f.rel_field)
    if isinstance(f, pw.CharField | pw.TextField):
        return (str, type(None))
    if isinstance(f, pw.BooleanField):
        return (bool, type(None))
    if isinstance(f, pw.IntegerField | pw.AutoField):
        return (int, bool, type(None))
    if isinstance(f, pw.FloatField):
        return (float, type(None))
    return ()


def _json(value: Any) -> str | None:
    return None if value is None else jsontext.dumps(value)


def _insert(ws: Workspace, model: type[pw.Model], rows: list[dict[str, Any]]) -> None:
    """Multi-row INSERTs (``Workspace.insert_rows``; peewee's insert_many spends most of an
    import building SQL text). The rows become tuples column by column, in C (``itemgetter``,
    ``zip``, ``map``): a 100,000-node import has millions of values, nearly all of them
    already what the column takes; a column converts through its field only when one of
    its values is not, and JSON columns are written by orjson (``jsontext.dumps``: what an
    import stores is JSON read from a file)."""
    if not rows:
        return
    names = list(rows[0])
    fields = [model._meta.fields[name] for name in names]
    columns = [f.column_name for f in fields]
    get = itemgetter(*names)
    for i in range(0, len(rows), 5000):
        batch = list(map(get, rows[i:i + 5000]))
        if len(names) == 1:
            batch = [(v,) for v in batch]
        cols: list[Any] = list(zip(*batch, strict=True))
        for j, f in enumerate(fields):
            if isinstance(f, JSONField):
                cols[j] = map(_json, cols[j])
            elif not set(map(type, cols[j])) <= set(_passes(f)):
                cols[j] = map(f.db_value, cols[j])
        ws.insert_rows(model._meta.table_name, columns, list(zip(*cols, strict=True)))


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
            ic = _ic(snap.nodes[ids[k]])
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


def import_document(ws: Workspace, doc: DocumentIn, *, person: Participant,
                    trust_permissions: bool = False, media_source: MediaSource | None = None,
                    limits: ImportLimits | None = None,
                    format: str = "Open Loom 2.0") -> ImportReport:
    """Plan, check and write a repaired document; nothing is written when anything fails."""
    imp = Importer(ws, doc, person, trust_permissions, media_source,
                   limits or ImportLimits(), format, now=ws.clock())
    return imp.run()

