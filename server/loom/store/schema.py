"""The peewee schema: one SQLite file holds every tree, participant and document.

Times are Unix seconds (float). JSON columns hold small lists/dicts. A node has exactly one
incoming hyperedge (``Edge``, keyed by its target); the edge's sources (``EdgeSource``) are
the nodes it continues, so a version node made by ``edit`` can share its original's
descendants by being added as a source of their edges.
"""

from __future__ import annotations

import json
from typing import Any

from loom.store.orm import pw

database_proxy = pw.DatabaseProxy()


_ENCODE = json.JSONEncoder(ensure_ascii=False).encode  # one encoder, not one a value


class JSONField(pw.TextField):
    def db_value(self, value: Any) -> str | None:
        return None if value is None else _ENCODE(value)

    def python_value(self, value: str | None) -> Any:
        return None if value is None else json.loads(value)


class Base(pw.Model):
    class Meta:
        database = database_proxy
        legacy_table_names = False


class Meta(Base):
    key = pw.CharField(primary_key=True)
    value = pw.TextField()


class Participant(Base):
    id = pw.CharField(primary_key=True)
    name = pw.CharField(unique=True)
    kind = pw.CharField()  # human | model
    role = pw.CharField(default="")  # subject | collaborator | human
    permissions = JSONField(default=list)
    loom_aware = pw.BooleanField(default=False)
    profile = pw.CharField(null=True)  # model profile name (models only)
    current_tree = pw.CharField(null=True)
    created = pw.FloatField()


class Tree(Base):
    id = pw.CharField(primary_key=True)
    title = pw.CharField(index=True)
    description = pw.TextField(default="")
    summary = pw.TextField(null=True)
    summary_source = pw.CharField(null=True)  # model | extractive | import
    mode = pw.CharField()  # buffer | dialogue — fixed at creation
    system_context = pw.TextField(default="")
    archived = pw.BooleanField(default=False)
    root = pw.CharField(null=True)
    ann_counter = pw.IntegerField(default=0)
    summary_counter = pw.IntegerField(default=0)  # new nodes since the last tree summary
    themes = JSONField(null=True)  # from a structured tree summary
    created = pw.FloatField()
    updated = pw.FloatField()
    extra = JSONField(null=True)  # v6: what an imported file says that Loom does not model


class Node(Base):
    id = pw.CharField(primary_key=True)
    tree = pw.ForeignKeyField(Tree, backref="nodes", on_delete="CASCADE", column_name="tree_id")
    local_id = pw.CharField()
    label = pw.CharField()  # how it is shown: the localId, a7x2' for versions, ann-3
    content = pw.TextField()
    author = pw.ForeignKeyField(Participant, column_name="author_id")
    author_type = pw.CharField()  # human | model
    kind = pw.CharField()  # root | continuation | annotation
    parent = pw.CharField(null=True, index=True)  # the source it was created from
    depth = pw.IntegerField()
    summary = pw.TextField(null=True)
    summary_source = pw.CharField(null=True)  # model | extractive | import
    created = pw.FloatField()
    edited_from = pw.CharField(null=True)
    version_of = pw.CharField(null=True, index=True)  # the original a version descends from
    version_number = pw.IntegerField(default=0)  # primes shown after the original's localId
    ann_number = pw.IntegerField(null=True)
    bookmarked = pw.BooleanField(default=False)
    pruned = pw.BooleanField(default=False)
    excluded = pw.BooleanField(default=False)
    content_hash = pw.CharField()
    extra = JSONField(null=True)  # importer leftovers, Open Loom extensions

    class Meta:
        indexes = ((("tree", "local_id"), True), (("tree", "ann_number"), False))


class Edge(Base):
    target = pw.CharField(primary_key=True)
    tree = pw.ForeignKeyField(Tree, on_delete="CASCADE", column_name="tree_id")
    kind = pw.CharField()  # continuation | annotation
    sibling_order = pw.IntegerField(default=0)


class EdgeSource(Base):
    target = pw.CharField(index=True)
    node = pw.CharField(index=True)
    role = pw.CharField(default="primary")  # primary | context | instruction
    position = pw.IntegerField(default=0)

    class Meta:
        primary_key = pw.CompositeKey("target", "node")


class Document(Base):
    id = pw.CharField(primary_key=True)
    name = pw.CharField(unique=True)
    content = pw.TextField(default="")
    summary = pw.TextField(null=True)
    summary_source = pw.CharField(null=True)
    created = pw.FloatField()
    updated = pw.FloatField()


class Link(Base):
    id = pw.CharField(primary_key=True)
    tree = pw.ForeignKeyField(Tree, on_delete="CASCADE", column_name="tree_id")
    source = pw.CharField(index=True)  # node id
    target_kind = pw.CharField()  # node | tree | doc
    target_node = pw.CharField(null=True, index=True)
    target_tree = pw.CharField(null=True)
    target_doc = pw.CharField(null=True)
    target_section = pw.CharField(null=True)
    note = pw.TextField(null=True)
    author = pw.CharField()
    created = pw.FloatField()


class Position(Base):
    """Where a participant is in a tree: the node, and the tip of the path they see; and
    (v14) the members of version families they chose to see on their paths (a JSON list
    of node ids: ``→ switch to a7x2`` brings the original back in place of ``a7x2'``)."""

    participant = pw.CharField()
    tree = pw.CharField()
    node = pw.CharField()
    tip = pw.CharField()
    updated = pw.FloatField()
    chosen = pw.TextField(null=True)

    class Meta:
        primary_key = pw.CompositeKey("participant", "tree")


class Pin(Base):
    """A participant's pin in a tree (v6: every pin has its tree)."""

    id = pw.AutoField()
    participant = pw.CharField(index=True)
    tree = pw.CharField(null=True)
    kind = pw.CharField()  # node | doc
    ref = pw.CharField()  # node id or document id
    section = pw.CharField(null=True)
    created = pw.FloatField()


class Stash(Base):
    """A participant's stash in a tree (v6); ``tree`` is None only for a stash from before
    v6 whose participant had no tree (it shows in every tree)."""

    id = pw.AutoField()
    participant = pw.CharField()
    tree = pw.CharField(null=True)
    label = pw.CharField()
    content = pw.TextField()
    tokens = pw.IntegerField()
    source = pw.CharField(default="literal")
    recalled = pw.BooleanField(default=False)
    created = pw.FloatField()

    class Meta:
        indexes = ((("participant", "tree", "label"), True),)


class TraceEntry(Base):
    id = pw.AutoField()
    participant = pw.CharField(index=True)
    tree = pw.CharField(null=True)
    command = pw.TextField()
    ok = pw.BooleanField()
    code = pw.CharField(null=True)
    message = pw.TextField(default="")
    created = pw.FloatField()


class RawResponse(Base):
    id = pw.CharField(primary_key=True)
    body = pw.TextField()


class Generation(Base):
    id = pw.CharField(primary_key=True)
    node = pw.CharField(index=True)
    provider = pw.CharField()
    model = pw.CharField()
    params = JSONField(default=dict)
    usage = JSONField(default=dict)
    latency_ms = pw.FloatField(null=True)
    completion_index = pw.IntegerField(default=0)
    logprobs = JSONField(null=True)
    raw = pw.CharField(null=True)  # RawResponse id; pruning deletes the body, keeps the record
    created = pw.FloatField()


class BranchLock(Base):
    """A turn lock on a branch (SPEC-NOTES decision 10), keyed by the node generated from."""

    node = pw.CharField(primary_key=True)
    participant = pw.CharField()
    expires = pw.FloatField()
    #: the process holding it (v15): a lock whose process has died is free before it expires
    host = pw.CharField(null=True)
    pid = pw.IntegerField(null=True)


class Change(Base):
    """The change log: a monotonic sequence of every mutation, for other processes to catch up."""

    seq = pw.AutoField()
    tree = pw.CharField(null=True, index=True)
    kind = pw.CharField()
    entity = pw.CharField()
    actor = pw.CharField(null=True)
    payload = JSONField(null=True)
    created = pw.FloatField()


class BufferState(Base):
    """An open buffer's uncommitted work, so nothing typed is lost across a restart. One row
    per editor session (v5): two editors on one buffer never overwrite each other's text."""

    uri = pw.CharField()
    participant = pw.CharField()
    session = pw.CharField(default="")
    tree = pw.CharField()
    tip = pw.CharField()
    pending = JSONField(default=list)  # [{"node": id, "content": text}]
    working = pw.TextField(default="")
    updated = pw.FloatField()

    class Meta:
        primary_key = pw.CompositeKey("uri", "participant", "session")


class EditorSession(Base):
    """A running language server (v5): its buffer states are its own while it lives; a dead
    session's uncommitted text is recovered by the next editor that opens the buffer."""

    id = pw.CharField(primary_key=True)
    participant = pw.CharField()
    host = pw.CharField()
    pid = pw.IntegerField()
    started = pw.FloatField()
    heartbeat = pw.FloatField()


class SummaryJob(Base):
    """Pending summary work (survives restarts). kind: node | tree | doc."""

    id = pw.AutoField()
    kind = pw.CharField()
    entity = pw.CharField()
    tree = pw.CharField(null=True)
    priority = pw.IntegerField(default=5)  # lower runs first; lazy reads use 0
    attempts = pw.IntegerField(default=0)
    not_before = pw.FloatField(default=0)
    created = pw.FloatField()

    class Meta:
        indexes = ((("kind", "entity"), True), (("priority", "created"), False))


class AgentTurn(Base):
    """One collaborator turn (v4): the columns to query by, the full record as JSON."""

    id = pw.CharField(primary_key=True)
    agent = pw.CharField(index=True)  # the collaborator's name
    tree = pw.CharField(index=True)
    trigger = pw.CharField()  # ask | annotation | autonomous
    input_node = pw.CharField(null=True)
    started = pw.FloatField()
    ended = pw.FloatField(null=True)
    stop_reason = pw.CharField()
    seen_seq = pw.IntegerField(default=0)
    record = JSONField()


class Media(Base):
    """An image or audio file an imported tree holds (v6), stored once per content: nodes'
    content blocks refer to it by its SHA-256, so paths never load the bytes."""

    sha256 = pw.CharField(primary_key=True)
    mime = pw.CharField()
    size = pw.IntegerField()
    data = pw.BlobField()
    created = pw.FloatField()


class NodeTokens(Base):
    """A node's per-token data (v8): each token's text and probability and the top-k
    alternatives, in ``loom.model.tokens``' compact form, tied to the node's content (a
    node's content never changes; a version's data is derived from its original's). A
    model node's come from its generation; any node's may come from ``→ score`` (v16:
    ``scorer`` names the model that scored the text, NULL for a generation's)."""

    node = pw.CharField(primary_key=True)
    k = pw.IntegerField()  # alternatives asked for per token
    count = pw.IntegerField()  # tokens kept
    covered = pw.IntegerField()  # characters of the content the tokens spell
    data = pw.BlobField()
    scorer = pw.CharField(null=True)  # v16: who scored it ("local (SmolLM2…)"), else NULL


class ModelChoice(Base):
    """The model a participant picked for a tree (v12): ``continue`` there asks it unless
    the command names another (``""``: the default); and (v16) the sampler preset it
    continues with there unless the command names one."""

    participant = pw.CharField()
    tree = pw.CharField()
    profile = pw.CharField()
    updated = pw.FloatField()
    preset = pw.CharField(null=True)

    class Meta:
        primary_key = pw.CompositeKey("participant", "tree")


class PreferenceEvent(Base):
    """What a participant was shown and what they chose (v13): a suggestion shown,
    accepted (whole or partly) or dismissed, a sibling picked in a picker, a switch, a
    prune, a rating, a bookmark, an edit of model text. ``shown`` is the node ids in the
    order they were displayed; ``parent`` the branch point the nodes continue."""

    id = pw.AutoField()
    participant = pw.CharField(index=True)
    tree = pw.CharField(index=True)
    kind = pw.CharField()
    parent = pw.CharField(null=True)
    node = pw.CharField(null=True)  # the node acted on
    shown = JSONField(null=True)  # [node id] as displayed
    chosen = pw.CharField(null=True)
    rejected = JSONField(null=True)  # [node id]
    detail = JSONField(null=True)  # how much was accepted, the rating, an edit's two texts
    created = pw.FloatField()


MODELS: tuple[type[Base], ...] = (
    Meta, Participant, Tree, Node, Edge, EdgeSource, Document, Link, Position, Pin, Stash,
    TraceEntry, RawResponse, Generation, BranchLock, Change,
)
V2_MODELS: tuple[type[Base], ...] = (BufferState,)
V3_MODELS: tuple[type[Base], ...] = (SummaryJob,)
V4_MODELS: tuple[type[Base], ...] = (AgentTurn,)
V5_MODELS: tuple[type[Base], ...] = (EditorSession,)
V6_MODELS: tuple[type[Base], ...] = (Media,)
V8_MODELS: tuple[type[Base], ...] = (NodeTokens,)
V12_MODELS: tuple[type[Base], ...] = (ModelChoice,)
V13_MODELS: tuple[type[Base], ...] = (PreferenceEvent,)
