"""The canonical form of every arrow command.

The parser turns a line such as ``→ show me node a7x2`` into one of these models; the
executor runs them. Node references are kept as typed (``a7x2``, ``ann-3``, ``a7x2'``):
resolving them needs the store, which the parser never touches.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field

from loom.model.sampling import Sampling


class _Command(BaseModel):
    # A leaf module: the canonical text of a command is loom.commands.canonical.to_text(cmd).
    model_config = ConfigDict(frozen=True, populate_by_name=True)


class LinkTarget(BaseModel):
    """What ``link X to …`` points at: a node, a document (section), or a tree (node)."""

    model_config = ConfigDict(frozen=True)
    kind: Literal["node", "doc", "tree"]
    node: str | None = None  # node ref for kind=node, or the node inside tree:"…" node:…
    doc: str | None = None
    section: str | None = None
    tree: str | None = None


class View(_Command):
    verb: Literal["view"] = "view"
    node: str | None = None  # None with branch set, or "current position"
    detail: Literal["summary", "full", "with-annotations", "with-links"] = "summary"
    branch: str | None = None  # view branch:X as:prose|nodes
    as_: Literal["prose", "nodes"] | None = Field(default=None, alias="as")


class List(_Command):
    verb: Literal["list"] = "list"
    node: str | None = None  # None = current position
    what: Literal["continuations", "annotations", "links"] = "continuations"


class ShowTree(_Command):
    verb: Literal["tree"] = "tree"
    from_: str | None = Field(default=None, alias="from")
    depth: int | None = None
    summary: bool = False
    #: the tree as people read it (``loom tree``): each node's text beside its id, notes
    #: counted, the whole tree (bare ids five levels deep tell a reader little)
    text: bool = False


class Switch(_Command):
    verb: Literal["switch"] = "switch"
    node: str
    tree: str | None = None  # switch to X in tree:"name"
    #: The path's end after the switch (editor-only: ``loom.branch`` ends the path at the
    #: node itself). None: keep the current end when the node is on the current path, else
    #: follow first continuations down to a leaf.
    tip: str | None = None


class Continue(_Command, Sampling):
    """``continue [from X]`` and its sampling options (``n``, ``tokens``, ``temperature``…:
    the fields of ``Sampling``; ``.sampling()`` is them alone)."""

    verb: Literal["continue"] = "continue"
    from_: str | None = Field(default=None, alias="from")
    #: The models to ask by name as typed (``model:X``, ``models:a,b``); empty: the default.
    models: tuple[str, ...] = ()
    #: A sampler preset by name as typed (``preset:wild``); the options given beside it win.
    preset: str | None = None

    def total(self, default_n: int = 1) -> int:
        """How many continuations it makes: n (else ``default_n``) of each model asked."""
        return (default_n if self.n is None else self.n) * max(1, len(self.models))


class Fill(_Command, Sampling):
    """``fill NODE at:START-END``: ``n`` model-written alternatives for a span of a node's
    text, the text before and after it kept, as versions of the node.
    ``span`` is the text to replace instead of offsets (``fill a7x2 "the red door"``)."""

    verb: Literal["fill"] = "fill"
    node: str | None = None
    start: int | None = None
    end: int | None = None
    span: str | None = None
    models: tuple[str, ...] = ()
    preset: str | None = None

    def total(self, default_n: int = 1) -> int:
        """How many versions it makes: n (else ``default_n``) of each model asked."""
        return (default_n if self.n is None else self.n) * max(1, len(self.models))


class Split(_Command):
    """Cut a node in two at a character offset of its text: the head takes the
    node's place, the tail continues it and carries its continuations. ``alt`` adds a
    sibling of the tail (an alternative token the model weighed there) and switches to it."""

    verb: Literal["split"] = "split"
    node: str
    at: int
    alt: str | None = None
    #: ``node`` is the tail of a split nobody has built on (a suggestion taken a word at a
    #: time): move that cut ``at`` characters into the tail rather than cut the tail, so
    #: the head grows. Not in the arrow grammar: the editors' accepts set it.
    grow: bool = False


class Respond(_Command):
    verb: Literal["respond"] = "respond"
    node: str
    content: str
    as_: Literal["continuation", "context", "instruction"] = Field(
        default="continuation", alias="as"
    )


class Annotate(_Command):
    verb: Literal["annotate"] = "annotate"
    node: str
    content: str


class MakeLink(_Command):
    verb: Literal["link"] = "link"
    node: str
    target: LinkTarget
    note: str | None = None


class Edit(_Command):
    verb: Literal["edit"] = "edit"
    node: str
    content: str


class Read(_Command):
    verb: Literal["read"] = "read"
    doc: str | None = None  # None: the documents listed
    summary: bool = False
    lines: tuple[int, int] | None = None
    section: str | None = None


class Write(_Command):
    verb: Literal["write"] = "write"
    doc: str
    mode: Literal["append", "at", "replace"] = "append"
    at: str | None = None  # start | end | line number | section id (mode=at)
    section: str | None = None  # the section replaced (mode=replace)
    content: str


class PinBlock(_Command):
    verb: Literal["pin"] = "pin"
    node: str | None = None
    doc: str | None = None
    section: str | None = None


class StashBlock(_Command):
    verb: Literal["stash"] = "stash"
    label: str
    content: str | None = None  # stash "label" "literal"
    content_of: str | None = None  # content-of:NODE
    summary_of: tuple[str, str] | None = None  # summary-of:A-B (a path range)


class Recall(_Command):
    verb: Literal["recall"] = "recall"
    label: str


class Drop(_Command):
    verb: Literal["drop"] = "drop"
    pin: str | None = None  # a node ref or doc:"name"[ §section] as typed
    stash: str | None = None


class Memory(_Command):
    verb: Literal["memory"] = "memory"
    what: Literal["state", "trace", "stashed", "errors"] = "state"


class Help(_Command):
    verb: Literal["help"] = "help"
    tool: str | None = None


class Think(_Command):
    verb: Literal["think"] = "think"
    content: str = ""


# ── the reader's verbs ────────────────────────────────────────────────────────
# What loom readers expect beside the seeds' tools (socketteer/loom, loomsidian):
# bookmarks, tags, ratings, pruning, soft deletion, renaming, search. Arrow commands in the
# seeds' style, parsed like the seeds' tools (``catalogue.READER_TOOLS``).


class Bookmark(_Command):
    verb: Literal["bookmark"] = "bookmark"
    node: str | None = None  # None: the current position
    label: str | None = None


class Unbookmark(_Command):
    verb: Literal["unbookmark"] = "unbookmark"
    node: str | None = None


class Tag(_Command):
    verb: Literal["tag"] = "tag"
    node: str | None = None
    tags: tuple[str, ...] = ()


class Untag(_Command):
    verb: Literal["untag"] = "untag"
    node: str | None = None
    tags: tuple[str, ...] = ()


class Rate(_Command):
    verb: Literal["rate"] = "rate"
    node: str | None = None
    rating: int = 1  # +1 good, -1 bad, 0 clears


class Prune(_Command):
    """Hide a node and its subtree from views, pickers, search and model context."""

    verb: Literal["prune"] = "prune"
    node: str


class Regenerate(_Command):
    """Run the request that made a model's node again, as a new sibling."""

    verb: Literal["regenerate"] = "regenerate"
    node: str


class Score(_Command):
    """The log-probability a model gives each token of existing text (a writer's words,
    imported or edited text): ``node`` alone (None: the node at your position), or every
    node of the path through ``branch``; ``model`` names the profile that scores."""

    verb: Literal["score"] = "score"
    node: str | None = None
    branch: str | None = None
    model: str | None = None
    #: Leave out the nodes already scored (not in the arrow grammar: the editors' toggle
    #: scores only what is new).
    unscored: bool = False


class Unprune(_Command):
    verb: Literal["unprune"] = "unprune"
    node: str


class Delete(_Command):
    """Soft-delete a subtree (``node``) or a tree (``tree``); ``undelete`` brings it back
    within the undo window."""

    verb: Literal["delete"] = "delete"
    node: str | None = None
    tree: str | None = None


class Undelete(_Command):
    verb: Literal["undelete"] = "undelete"
    node: str | None = None
    tree: str | None = None


class Rename(_Command):
    verb: Literal["rename"] = "rename"
    title: str
    tree: str | None = None  # None: the actor's tree


class Search(_Command):
    verb: Literal["search"] = "search"
    query: str
    tree: str | None = None  # None: every tree


class Explore(_Command):
    """Let the collaborator explore on its own: breadth-first from ``from_``,
    ``n`` continuations a node, each scored by the judge against ``judge``, those below
    ``threshold`` pruned, the best ``n`` of each level expanded further, for ``depth``
    levels or until ``budget`` tokens are spent. ``end`` ends the tree's exploration
    (``→ explore end``; ``stop:`` is the stop string its continues pass on, as for
    ``continue``). None: the catalogue's default."""

    verb: Literal["explore"] = "explore"
    from_: str | None = Field(default=None, alias="from")
    depth: int | None = None
    n: int | None = None
    judge: str | None = None
    budget: int | None = None
    threshold: int | None = None
    end: bool = False
    #: what each of its ``continue``s asks beyond ``n``, as ``continue`` reads them: the
    #: models by name as typed (``model:X``, ``models:a,b``) and the sampling options
    models: tuple[str, ...] = ()
    #: a sampler preset by name (``preset:wild``), under the sampling options given
    preset: str | None = None
    sampling: Sampling = Field(default_factory=Sampling)


# ── editor verbs ──────────────────────────────────────────────────────────────
# What an editor does to the workspace besides the seeds' tools: committing typed text,
# making trees, saving documents, importing and exporting. The shells build these directly
# (they have no text form the parser reads, and `→ help` does not list them), so every
# change a participant makes still runs through `Executor.execute`: the same permission
# check, branch locks and trace as the seeds' tools.


class VersionEdit(BaseModel):
    """A node's new content, typed over its committed text in a buffer."""

    model_config = ConfigDict(frozen=True)
    node: str  # node id or reference
    content: str


class Commit(_Command):
    """The buffer's uncommitted work: pending node edits become versions, the working text
    a human node after ``after`` (the path's end); the position moves to the new end."""

    verb: Literal["commit"] = "commit"
    versions: tuple[VersionEdit, ...] = ()
    text: str | None = None
    after: str | None = None  # the node the working text continues (default: position)
    move: bool = True  # False: leave the position alone (recovering another session's text)


class NewTree(_Command):
    verb: Literal["new"] = "new"
    title: str
    mode: Literal["buffer", "dialogue"] = "buffer"
    text: str = ""  # the root's content
    description: str = ""
    system_context: str = ""


class Save(_Command):
    """A whole document written from an editor; ``expected`` is the ``updated`` stamp the
    editor read, so a save over someone else's newer save is a conflict, not a loss."""

    verb: Literal["save"] = "save"
    doc: str
    content: str
    expected: float | None = None


class Export(_Command):
    verb: Literal["export"] = "export"
    tree: str | None = None  # None: the actor's tree
    # the other looms' files: socketteer, loomsidian, miniloom, tapestry (interchange/foreign)
    format: Literal["openloom", "md", "loom", "bundle", "socketteer", "loomsidian", "miniloom",
                    "tapestry"] = "openloom"
    path: str | None = None  # None: the text is returned in the result's data
    node: str | None = None  # Markdown: the path through this node (default: position)
    system_context: bool = True  # what the Open Loom draft lets an export leave out
    raw_responses: bool = True
    agent_prompts: bool = True
    media: Literal["auto", "inline", "bundle"] = "auto"


class Import(_Command):
    verb: Literal["import"] = "import"
    path: str | None = None
    content: str | None = None  # the file's text, when the editor read it (no path)
    name: str | None = None  # what the content is called (for messages and format sniffing)
    trust: bool = False  # take the participants' permissions from the file
    max_mb: float | None = None  # read at most this much (default: LOOM_IMPORT_MAX_MB, 512)


class ChooseModel(_Command):
    """Pick the model ``continue`` asks in the actor's tree (None: the default again)."""

    verb: Literal["model"] = "model"
    profile: str | None = None
    #: A sampler preset to continue with there too (``""``: none again; None: as it is).
    preset: str | None = None


class TreeSettings(_Command):
    """Set the actor's tree's preference settings (``shuffle``, ``blind``: None leaves one
    as it is)."""

    verb: Literal["settings"] = "settings"
    shuffle: bool | None = None
    blind: bool | None = None


class Grant(_Command):
    """Set a participant's permissions (the human's configuration of a collaborator). The
    actor can give only permissions it holds, and never to itself."""

    verb: Literal["grant"] = "grant"
    participant: str
    permissions: tuple[str, ...]


Command = Annotated[
    View | List | ShowTree | Switch | Continue | Split | Respond | Annotate | MakeLink | Edit
    | Read | Write | PinBlock | StashBlock | Recall | Drop | Memory | Help | Think | Commit
    | NewTree | Save | Export | Import | Grant | Bookmark | Unbookmark | Tag | Untag | Rate
    | Prune | Unprune | Delete | Undelete | Rename | Search | Regenerate | ChooseModel
    | TreeSettings | Explore | Score | Fill,
    Field(discriminator="verb"),
]

VERBS: tuple[str, ...] = (
    "view", "list", "tree", "switch", "continue", "respond", "annotate", "link", "edit",
    "read", "write", "pin", "stash", "recall", "drop", "memory", "help", "think", "split",
)
#: Editor verbs: run through the executor like the seeds' tools, never parsed from text.
EDITOR_VERBS: tuple[str, ...] = ("commit", "new", "save", "export", "import", "grant",
                                  "model", "settings")


class ParseError(BaseModel):
    """A line that is not a command: becomes ``✗ INVALID_SYNTAX: message`` + ``hint``."""

    model_config = ConfigDict(frozen=True)
    message: str
    hint: str | None = None
    candidates: tuple[str, ...] = ()
