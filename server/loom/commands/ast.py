"""The canonical form of every arrow command.

The parser turns a line such as ``→ show me node a7x2`` into one of these models; the
executor runs them. Node references are kept as typed (``a7x2``, ``ann-3``, ``a7x2'``):
resolving them needs the store, which the parser never touches.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field


class _Command(BaseModel):
    # A leaf module: the canonical text of a command is loom.commands.canonical.to_text(cmd).
    model_config = ConfigDict(frozen=True, populate_by_name=True)


class DocRef(BaseModel):
    """``doc:"name"`` with an optional ``section:id`` / ``§id``."""

    model_config = ConfigDict(frozen=True)
    name: str
    section: str | None = None


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


class Tree(_Command):
    verb: Literal["tree"] = "tree"
    from_: str | None = Field(default=None, alias="from")
    depth: int | None = None
    summary: bool = False


class Switch(_Command):
    verb: Literal["switch"] = "switch"
    node: str
    tree: str | None = None  # switch to X in tree:"name"


class Continue(_Command):
    verb: Literal["continue"] = "continue"
    from_: str | None = Field(default=None, alias="from")
    n: int | None = None
    tokens: int | None = None
    temperature: float | None = None


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


class Link(_Command):
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
    doc: str
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


class Pin(_Command):
    verb: Literal["pin"] = "pin"
    node: str | None = None
    doc: str | None = None
    section: str | None = None


class Stash(_Command):
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


Command = Annotated[
    View | List | Tree | Switch | Continue | Respond | Annotate | Link | Edit | Read | Write
    | Pin | Stash | Recall | Drop | Memory | Help | Think,
    Field(discriminator="verb"),
]

VERBS: tuple[str, ...] = (
    "view", "list", "tree", "switch", "continue", "respond", "annotate", "link", "edit",
    "read", "write", "pin", "stash", "recall", "drop", "memory", "help", "think",
)


class ParseError(BaseModel):
    """A line that is not a command: becomes ``✗ INVALID_SYNTAX: message`` + ``hint``."""

    model_config = ConfigDict(frozen=True)
    message: str
    hint: str | None = None
    candidates: tuple[str, ...] = ()
