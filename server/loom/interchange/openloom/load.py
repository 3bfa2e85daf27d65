"""An Open Loom 2.x document → Loom's rows, in one transaction.

After ``read`` has repaired each tree, this module has each tree's rows planned
(``planning.TreePlan``: ids, localIds, labels, versions, annotation numbers, depths,
hashes, provenance, media; ``plain.PlainTreePlan`` for plain trees), plans the
participants, links and documents itself, renders the planned rows exactly as an export
would, keeps where the file differs (``loom.interchange.keep``), and writes everything at
once: a file that fails anywhere leaves the database as it was.

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

from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import loom.interchange.jsontext as jsontext
import loom.interchange.keep as keep
import loom.interchange.openloom.verbatim as verbatim
from loom.errors import LoomError
from loom.interchange.files import ImportLimits, size_text
from loom.interchange.media import check, data_uri, digest, normal_mime, parse_data_uri
from loom.interchange.openloom.plain import PlainTreePlan
from loom.interchange.openloom.planning import _ULID, SYNTHETIC, TreePlan, _str, ic_of
from loom.interchange.openloom.read import NS, DocumentIn, NodeIn, PlainTreeIn, TreeIn
from loom.interchange.openloom.render import (
    CONTAINER_OWN,
    ExportOptions,
    Renderer,
    container_fields,
)
from loom.interchange.openloom.snapshot import IC, Shared
from loom.interchange.report import ImportedTree, ImportReport
from loom.interchange.times import parse_iso
from loom.model.ids import new_ulid
from loom.store.orm import pw
from loom.store.schema import (
    Document,
    Participant,
)
from loom.store.workspace import Workspace

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
            with self.ws.checkpoint_later(), self.ws.all_or_nothing():
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
                self.ws.tree(plan.snap.tree["id"]), plan.count, bookmarks=plan.bookmarks,
                images=plan.media_count.get("image", 0), audio=plan.media_count.get("audio", 0),
                unverified=plan.unverified))
        return report

    def shared(self, plans: list[TreePlan | PlainTreePlan], doc_rows: list[dict[str, Any]]
               ) -> Shared:
        people = {p.id: {"id": p.id, "name": p.name, "kind": p.kind, "role": p.role,
                         "permissions": list(p.permissions or []), "loom_aware": p.loom_aware,
                         "profile": p.profile} for p in self.ws.participants()}
        docs = {d.id: {"id": d.id, "name": d.name, "content": d.content, "summary": d.summary,
                       "summary_source": d.summary_source, "created": d.created,
                       "updated": d.updated} for d in self.ws.documents()}
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
        names = {d.name: d for d in self.ws.documents()}
        for d in docs if isinstance(docs, list) else []:
            if not isinstance(d, dict) or not _str(d.get("name")):
                continue
            did, content = _str(d.get("id")), _str(d.get("content")) or ""
            if did and did in ids:
                continue
            existing = self.ws.find_document(did) if did else None
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
                ic_of(row)["keep"] = entries
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
                ic_of(snap.nodes[target])["edge"] = {
                    "index": edge_in.index, "file": edge_in.raw,
                    "at": verbatim.edge_state(edge, counted, srcs)}
                continue
            entries = keep.diff(r.edge(target, counted, kept=False), edge_in.raw)
            ic = ic_of(snap.nodes[target])
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
        bulk = self.ws.bulk
        bulk.documents(doc_rows)
        bulk.new_media(list(self.media_rows.values()), jsontext.dumps)
        with self.ws.nodes_indexed_after([plan.snap.tree["id"] for plan in plans]):
            self.write_trees(plans)

    def write_trees(self, plans: list[TreePlan | PlainTreePlan]) -> None:
        bulk, dumps = self.ws.bulk, jsontext.dumps
        for plan in plans:
            snap = plan.snap
            t = dict(snap.tree)
            bulk.tree(t)
            if isinstance(plan, PlainTreePlan):
                plan.write(self.ws)
            else:
                bulk.nodes(list(snap.nodes.values()), dumps)
                bulk.edges([dict(target=k, tree=t["id"], kind=e["kind"],
                                 sibling_order=e["sibling_order"])
                            for k, e in snap.edges.items()], dumps)
                bulk.sources([dict(target=k, node=s["node"], role=s["role"],
                                   position=s["position"])
                              for k, srcs in snap.sources.items() for s in srcs], dumps)
                bulk.raws([dict(id=k, body=v) for k, v in snap.raws.items()], dumps)
                bulk.generations([g for gl in snap.generations.values() for g in gl], dumps)
            bulk.links(snap.links, dumps)
            self.ws.log_change(t["id"], "tree.create", t["id"], self.person.id,
                               {"title": t["title"], "mode": t["mode"], "import": self.format})
            self.ws.log_change(t["id"], "node.bulk", t["id"], None, {"count": plan.count})
            if plan.current is not None:
                bulk.place(self.person.id, t["id"], plan.current, self.now)
                self.ws.log_change(t["id"], "position", plan.current, self.person.id,
                                   {"tip": plan.current})


def _tic(tree_row: dict[str, Any]) -> dict[str, Any]:
    return ic_of(tree_row)


def import_document(ws: Workspace, doc: DocumentIn, *, person: Participant,
                    trust_permissions: bool = False, media_source: MediaSource | None = None,
                    limits: ImportLimits | None = None,
                    format: str = "Open Loom 2.0") -> ImportReport:
    """Plan, check and write a repaired document; nothing is written when anything fails."""
    imp = Importer(ws, doc, person, trust_permissions, media_source,
                   limits or ImportLimits(), format, now=ws.clock())
    return imp.run()

