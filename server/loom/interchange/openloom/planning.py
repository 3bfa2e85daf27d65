"""What an Open Loom import's two plans share (``load.TreePlan`` node by node,
``plain.PlainTreePlan`` for plain trees): the tree's ids and row, the nodes' ids and
localIds, the agents its nodes may name."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from typing import Any, Protocol

from loom.interchange.openloom.read import DocumentIn
from loom.interchange.openloom.snapshot import IC
from loom.interchange.times import parse_iso
from loom.model.ids import LOCAL_ID_LENGTH, local_id_candidates, new_ulid, new_ulids
from loom.store.schema import Node, Participant, Tree
from loom.store.workspace import Workspace

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

    def model_author(self) -> Participant: ...


def unique_title(title: str, reserved: Iterable[str] = ()) -> str:
    """``title``, or ``title (2)``, ``title (3)``… when a tree (or ``reserved``) has it."""
    title = " ".join(title.split()) or "Imported tree"
    taken = {t for (t,) in Tree.select(Tree.title).where(
        (Tree.title == title) | Tree.title.startswith(f"{title} (")).tuples()}
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
    return bool((file_id and Tree.get_or_none(Tree.id == file_id) is not None)
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
    return dict(id=tree_id, title=unique_title(title if isinstance(title, str) else "", titles),
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
