"""The verb catalogue: every arrow tool as data.

One entry per verb of seed 000's tool reference: its category, the permission it needs,
the one-line description and the syntax lines exactly as the seed lists them, a short
note, the verb phrases that mean it (synonyms), its flags and its options. The grammar,
the help pages and the hints in parse errors all read this table; nothing else spells a
tool's syntax.

Synonyms are whole phrases (``"go to"``, ``"add note"``); a phrase never names two verbs
(``synonym_table`` refuses). Words that could mean two (``branch``: continue or respond?
``remove``: drop a pin or delete a node? ``check``, ``update``) are left out on purpose,
so the parser asks instead of guessing.

The small words the parser reads around the verbs (filler, politeness, count nouns) are
data too and live at the end of this module.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

CATEGORIES: tuple[str, ...] = ("Navigation", "Content", "Documents", "Memory", "Meta")

#: The permission names in the order help prints them.
PERMISSIONS: tuple[str, ...] = (
    "loom_aware", "loom_write", "loom_generate", "doc_read", "doc_write",
)

def _ro(mapping: dict[str, str]) -> Mapping[str, str]:
    return MappingProxyType(mapping)


@dataclass(frozen=True)
class Tool:
    """One verb of the arrow language."""

    name: str
    category: str
    permission: str
    description: str
    #: The syntax lines exactly as seed 000 lists them (arrow included).
    syntax: tuple[str, ...]
    note: str
    #: Verb phrases that mean this tool (``"show"``, ``"go to"``, ``"add note"``).
    synonyms: tuple[str, ...] = ()
    #: Bare words that set something, mapped to their canonical value
    #: (``"complete"`` → ``"full"``).
    flags: Mapping[str, str] = field(default_factory=lambda: _ro({}))
    #: ``key:value`` option names and their aliases, mapped to the canonical key.
    options: Mapping[str, str] = field(default_factory=lambda: _ro({}))
    #: Further forms the parser accepts (from seed 002 and the spec notes); shown in
    #: hints, not on the seed's help page.
    variants: tuple[str, ...] = ()

    @property
    def forms(self) -> tuple[str, ...]:
        """Every command form of the tool: the seed's lines, then the variants."""
        return tuple(s for s in self.syntax if s.startswith("→")) + self.variants


_VIEW_FLAGS = {
    "full": "full", "complete": "full", "whole": "full", "entire": "full",
    "summary": "summary", "summarized": "summary", "brief": "summary", "short": "summary",
    "with-annotations": "with-annotations", "with-annotation": "with-annotations",
    "annotations": "with-annotations", "annotated": "with-annotations",
    "with-links": "with-links", "links": "with-links", "linked": "with-links",
    "prose": "as:prose", "nodes": "as:nodes",
}
_LIST_FLAGS = {
    "continuations": "continuations", "continuation": "continuations",
    "children": "continuations", "child": "continuations", "replies": "continuations",
    "branches": "continuations", "kids": "continuations",
    "annotations": "annotations", "annotation": "annotations", "notes": "annotations",
    "comments": "annotations",
    "links": "links", "link": "links", "connections": "links",
    "documents": "documents", "document": "documents", "docs": "documents",
}
_MEMORY_FLAGS = {
    "trace": "trace", "history": "trace", "actions": "trace", "log": "trace",
    "stashed": "stashed", "stash": "stashed", "stashes": "stashed",
    "errors": "errors", "error": "errors", "failures": "errors",
    "state": "state", "status": "state",
}

TOOLS: tuple[Tool, ...] = (
    Tool(
        name="view", category="Navigation", permission="loom_aware",
        description="Inspect a node's content and metadata",
        syntax=(
            "→ view [localId]",
            "→ view [localId] full",
            "→ view [localId] with-annotations",
        ),
        note="Returns summary by default. Use 'full' for complete content.",
        synonyms=("show", "inspect", "open", "display", "look at", "see", "examine", "peek"),
        flags=_ro(_VIEW_FLAGS),
        options=_ro({"branch": "branch", "as": "as", "node": "node", "id": "node"}),
        variants=(
            "→ view [localId] summary",
            "→ view [localId] with-links",
            "→ view branch:[localId] as:prose",
            "→ view branch:[localId] as:nodes",
        ),
    ),
    Tool(
        name="list", category="Navigation", permission="loom_aware",
        description="See what's connected to a node",
        syntax=(
            "→ list [localId] continuations",
            "→ list [localId] annotations",
            "→ list [localId] links",
        ),
        note="Omit the localId to list what is at your current position.",
        synonyms=("ls", "enumerate"),
        flags=_ro(_LIST_FLAGS),
        variants=("→ list continuations of [localId]", "→ list annotations"),
    ),
    Tool(
        name="tree", category="Navigation", permission="loom_aware",
        description="Get an overview of tree structure",
        syntax=(
            "→ tree",
            "→ tree from:[localId] depth:[n]",
            "→ tree summary",
            "→ tree with-text",
        ),
        note="Draws 5 levels from your current position (* marks it); from:root draws the "
        "whole tree. Nodes are the root and its continuations (annotations and buffer "
        "versions are not counted). Use 'summary' for a condensed overview, 'with-text' "
        "for the whole tree with each node's text and its notes.",
        synonyms=("overview", "show tree", "view tree", "tree view"),
        flags=_ro({
            "summary": "summary", "overview": "summary", "brief": "summary",
            "condensed": "summary", "short": "summary",
            "with-text": "with-text", "text": "with-text", "with-texts": "with-text",
        }),
        options=_ro({
            "from": "from", "start": "from", "root": "from",
            "depth": "depth", "levels": "depth", "level": "depth",
        }),
    ),
    Tool(
        name="switch", category="Navigation", permission="loom_aware",
        description="Move active context to a different node",
        syntax=(
            "→ switch to [localId]",
            "→ switch to [localId] in tree:[treeId]",
        ),
        note="Switching into another tree needs cross-tree permission.",
        synonyms=(
            "go", "go to", "goto", "jump", "jump to", "move", "move to", "navigate",
            "navigate to", "cd", "checkout", "visit",
        ),
        options=_ro({"tree": "tree", "node": "node", "id": "node"}),
        variants=('→ switch to [localId] in tree:"[name]"',),
    ),
    Tool(
        name="respond", category="Content", permission="loom_write",
        description="Add the collaborator's own content as a node",
        syntax=(
            '→ respond [localId] "[content]"',
            '→ respond [localId] "[content]" as:[edge_type]',
        ),
        note="Edge types: continuation (default), context, instruction. "
        "Use → annotate for annotation-type content.",
        synonyms=("reply", "reply to", "add", "answer", "say"),
        options=_ro({"as": "as", "type": "as", "edge": "as"}),
    ),
    Tool(
        name="annotate", category="Content", permission="loom_write",
        description="Add an annotation to a node",
        syntax=('→ annotate [localId] "[content]"',),
        note="Annotations are excluded from subject model context by default.",
        synonyms=(
            "note", "comment", "remark", "add note", "add annotation", "add comment",
            "leave note", "leave annotation", "leave comment",
        ),
    ),
    Tool(
        name="link", category="Content", permission="loom_write",
        description="Create a link between a node and another node, tree, or document",
        syntax=(
            "→ link [localId] to [target]",
            '→ link [localId] to [target] note:"[description]"',
        ),
        note='Targets: another localId, doc:"name" [§section], tree:"name" [node:id]. '
        "Links are bidirectional.",
        synonyms=("connect", "add link", "relate", "associate", "cross-reference", "xref"),
        options=_ro({
            "note": "note", "because": "note", "description": "note", "desc": "note",
            "doc": "doc", "document": "doc", "tree": "tree", "node": "node",
            "section": "section", "sec": "section",
        }),
        variants=(
            '→ link [localId] to doc:"[name]" §[section]',
            '→ link [localId] to tree:"[name]" node:[localId]',
        ),
    ),
    Tool(
        name="edit", category="Content", permission="loom_write",
        description="Create an edited version of a node",
        syntax=('→ edit [localId] "[new_content]"',),
        note="Nodes are immutable: edit makes a version in buffer mode, "
        "a sibling branch in dialogue.",
        synonyms=("revise", "rewrite", "modify", "amend", "change"),
    ),
    Tool(
        name="continue", category="Content", permission="loom_generate",
        description="Generate new continuations by invoking the subject model",
        syntax=(
            "→ continue",
            "→ continue from [localId]",
            "→ continue from [localId] n:[count] tokens:[max]",
        ),
        note="Continues from your current position by default; n is 1 to 10.",
        synonyms=("generate", "gen", "extend", "expand", "keep going"),
        options=_ro({
            "from": "from", "node": "from",
            "n": "n", "count": "n", "num": "n", "number": "n",
            "tokens": "tokens", "max-tokens": "tokens", "max_tokens": "tokens",
            "length": "tokens",
            "temperature": "temperature", "temp": "temperature",
        }),
        variants=("→ continue n:[count]",),
    ),
    Tool(
        name="split", category="Content", permission="loom_write",
        description="Split a node in two at a character offset",
        syntax=(
            "→ split [localId] at:[offset]",
            '→ split [localId] at:[offset] alt:"[token]"',
        ),
        note="Both halves keep the node's author, provenance and token data; alt: adds an "
        "alternative in place of the second half and switches to it.",
        synonyms=("cut", "divide"),
        options=_ro({
            "at": "at", "offset": "at", "position": "at", "pos": "at",
            "alt": "alt", "alternative": "alt", "with": "alt", "instead": "alt",
        }),
        variants=("→ split [localId] [offset]",),
    ),
    Tool(
        name="read", category="Documents", permission="doc_read",
        description="View a document's contents",
        syntax=(
            '→ read doc:"[name]"',
            '→ read doc:"[name]" summary',
            '→ read doc:"[name]" lines:[start]-[end]',
            '→ read doc:"[name]" section:[id]',
        ),
        note="Returns the whole document by default; → read alone lists the documents.",
        synonyms=("peruse",),
        flags=_ro({
            "summary": "summary", "brief": "summary", "overview": "summary",
            "full": "full", "all": "full", "whole": "full",
        }),
        options=_ro({
            "doc": "doc", "document": "doc", "file": "doc",
            "lines": "lines", "line": "lines", "section": "section", "sec": "section",
        }),
        variants=('→ read doc:"[name]" §[section]',),
    ),
    Tool(
        name="write", category="Documents", permission="doc_write",
        description="Edit a document",
        syntax=(
            '→ write doc:"[name]" append "[content]"',
            '→ write doc:"[name]" at:[location] "[content]"',
            '→ write doc:"[name]" replace:[section] "[content]"',
        ),
        note="Locations: start, end, a line number, or a section.",
        synonyms=("append",),
        flags=_ro({"append": "append", "replace": "replace"}),
        options=_ro({
            "doc": "doc", "document": "doc", "file": "doc",
            "at": "at", "location": "at", "replace": "replace", "section": "section",
        }),
    ),
    Tool(
        name="pin", category="Memory", permission="loom_aware",
        description="Keep content in working memory across turns",
        syntax=(
            "→ pin [localId]",
            '→ pin doc:"[name]"',
            '→ pin doc:"[name]" section:[id]',
        ),
        note="Pinned content survives context pruning. Use sparingly.",
        synonyms=("keep", "hold"),
        options=_ro({
            "doc": "doc", "document": "doc", "section": "section", "sec": "section",
            "node": "node",
        }),
    ),
    Tool(
        name="stash", category="Memory", permission="loom_aware",
        description="Save content to medium-term memory, removed from active context",
        syntax=(
            '→ stash "[label]" "[content]"',
            '→ stash "[label]" content-of:[localId]',
            '→ stash "[label]" summary-of:[range]',
        ),
        note="Stashed content stays out of context until recalled.",
        synonyms=("save", "store", "shelve", "set aside"),
        options=_ro({
            "content-of": "content-of", "contents-of": "content-of",
            "content_of": "content-of",
            "summary-of": "summary-of", "summary_of": "summary-of",
            "label": "label", "as": "label", "name": "label", "called": "label",
        }),
    ),
    Tool(
        name="recall", category="Memory", permission="loom_aware",
        description="Retrieve stashed content back into working context",
        syntax=('→ recall "[label]"',),
        note="Brings a stash back into working context.",
        synonyms=("retrieve", "restore"),
        options=_ro({"label": "label", "stash": "label"}),
    ),
    Tool(
        name="drop", category="Memory", permission="loom_aware",
        description="Explicitly remove something from operational memory",
        syntax=(
            "→ drop pin:[localId]",
            '→ drop stash:"[label]"',
        ),
        note="Removes a pin or a stash from operational memory.",
        synonyms=("forget", "unpin", "discard", "release"),
        options=_ro({
            "pin": "pin", "stash": "stash", "doc": "doc", "pin:doc": "doc",
            "section": "section", "lines": "lines",
        }),
    ),
    Tool(
        name="memory", category="Memory", permission="loom_aware",
        description="Review current operational memory state",
        syntax=(
            "→ memory",
            "→ memory trace",
            "→ memory stashed",
        ),
        note="Shows pins and stashes by default. Use 'trace' for recent actions, "
        "'errors' for recent errors.",
        synonyms=("mem", "show memory", "view memory", "check memory", "working memory"),
        flags=_ro(_MEMORY_FLAGS),
        variants=("→ memory errors",),
    ),
    Tool(
        name="help", category="Meta", permission="loom_aware",
        description="Get information about available tools",
        syntax=(
            "→ help",
            "→ help [tool_name]",
        ),
        note="Lists the tools your permissions allow.",
        synonyms=("usage", "commands"),
    ),
    Tool(
        name="think", category="Meta", permission="loom_aware",
        description="A scratchpad for reasoning, collapsed in UI and excluded from "
        "subject model context",
        syntax=(
            "→ think",
            "[multi-line content]",
            "←",
        ),
        note="Everything between → think and ← stays in your memory, collapsed in the UI.",
        synonyms=("thinking", "reflect", "ponder", "thought", "thoughts"),
    ),
)

#: The reader's tools: what people coming from socketteer/loom or loomsidian expect
#: beside the seeds' tools, in the seeds' style. ``→ help`` keeps the seed's overview
#: (it lists ``TOOLS``); each has its page (``→ help bookmark``).
READER_TOOLS: tuple[Tool, ...] = (
    Tool(
        name="bookmark", category="Reader", permission="loom_write",
        description="Bookmark a node, optionally with a label",
        syntax=("→ bookmark [localId]", '→ bookmark [localId] "[label]"'),
        note="Bookmarks show in the tree overview, the tree picture and search.",
        synonyms=("star", "favorite", "favourite", "add bookmark"),
    ),
    Tool(
        name="unbookmark", category="Reader", permission="loom_write",
        description="Remove a node's bookmark",
        syntax=("→ unbookmark [localId]",),
        note="The node stays as it is; only the bookmark goes.",
        synonyms=("unstar", "remove bookmark"),
    ),
    Tool(
        name="tag", category="Reader", permission="loom_write",
        description="Tag a node",
        syntax=('→ tag [localId] "[tag]"', '→ tag [localId] "[tag]" "[tag]"'),
        note="Tags are lower case; #dream and Dream are the tag dream.",
        synonyms=("add tag",),
    ),
    Tool(
        name="untag", category="Reader", permission="loom_write",
        description="Remove tags from a node",
        syntax=('→ untag [localId] "[tag]"',),
        note="Without a tag, every tag of the node goes.",
        synonyms=("remove tag",),
    ),
    Tool(
        name="rate", category="Reader", permission="loom_write",
        description="Rate a node: +1 good, -1 bad, 0 clears",
        syntax=("→ rate [localId] +1", "→ rate [localId] -1", "→ rate [localId] 0"),
        note="good/bad and up/down work too.",
        synonyms=("rating", "vote"),
    ),
    Tool(
        name="prune", category="Reader", permission="loom_write",
        description="Hide a node and everything below it",
        syntax=("→ prune [localId]",),
        note="Pruned nodes leave views, pickers, search and model context; nothing is lost.",
        synonyms=("hide", "collapse branch"),
    ),
    Tool(
        name="unprune", category="Reader", permission="loom_write",
        description="Show a pruned node again",
        syntax=("→ unprune [localId]",),
        note="Brings back the node and everything below it.",
        synonyms=("unhide",),
    ),
    Tool(
        name="delete", category="Reader", permission="loom_write",
        description="Delete a subtree or a tree (undo with undelete for 30 days)",
        syntax=("→ delete [localId]", '→ delete tree:"[name]"'),
        note="A soft delete: → undelete brings it back within 30 days.",
        synonyms=("trash",),
        options=_ro({"tree": "tree", "node": "node"}),
    ),
    Tool(
        name="undelete", category="Reader", permission="loom_write",
        description="Bring back a deleted subtree or tree",
        syntax=("→ undelete [localId]", '→ undelete tree:"[name]"'),
        note="Within 30 days of the delete.",
        synonyms=("untrash", "undo delete"),
        options=_ro({"tree": "tree", "node": "node"}),
    ),
    Tool(
        name="rename", category="Reader", permission="loom_write",
        description="Rename a tree",
        syntax=('→ rename "[title]"', '→ rename tree:"[name]" "[title]"'),
        note="Renames the tree you are in unless tree: names another.",
        synonyms=("retitle",),
        options=_ro({"tree": "tree"}),
    ),
    Tool(
        name="search", category="Reader", permission="loom_aware",
        description="Full-text search over every tree",
        syntax=('→ search "[words]"', '→ search "[words]" in tree:"[name]"'),
        note="Every word must occur; the last may be the start of a word. "
        'Quotes in the words keep a phrase: → search "\"the key\" door".',
        synonyms=("find", "look for", "grep"),
        options=_ro({"tree": "tree"}),
    ),
)

ALL_TOOLS: tuple[Tool, ...] = TOOLS + READER_TOOLS

TOOLS_BY_NAME: Mapping[str, Tool] = MappingProxyType({t.name: t for t in ALL_TOOLS})


def tool(name: str) -> Tool | None:
    """The tool called ``name`` (canonical verb), or None."""
    return TOOLS_BY_NAME.get(name)


def synonym_table() -> dict[str, str]:
    """Every verb phrase (canonical names included) mapped to its verb.

    Raises ValueError if a phrase would name two verbs: the table is data, and that is a
    mistake in it.
    """
    table: dict[str, str] = {}
    for t in ALL_TOOLS:
        for phrase in (t.name, *t.synonyms):
            seen = table.setdefault(phrase, t.name)
            if seen != t.name:
                raise ValueError(f"synonym {phrase!r} names both {seen} and {t.name}")
    return table

#: The catalogue keyed by verb (the executor looks permissions up here).
CATALOGUE: Mapping[str, Tool] = TOOLS_BY_NAME


@dataclass(frozen=True)
class EditorVerb:
    """A verb editors and the CLI use besides the seeds' tools (``ast.EDITOR_VERBS``): it
    runs through the executor with a permission like any tool, but has no text form and
    is not listed by ``→ help``."""

    name: str
    permission: str
    description: str
    #: What a participant without the permission is told to ask the human to do.
    action: str


EDITOR_VERBS: Mapping[str, EditorVerb] = MappingProxyType({v.name: v for v in (
    EditorVerb("commit", "loom_write", "commit a buffer's typed text as nodes and versions",
               "commit the text"),
    EditorVerb("new", "loom_write", "create a tree", "create the tree"),
    EditorVerb("save", "doc_write", "save a whole document", "save the document"),
    EditorVerb("export", "loom_aware", "export a tree (to a file: needs doc_write)",
               "export the tree"),
    EditorVerb("import", "loom_write", "import trees from a file", "import the file"),
    EditorVerb("grant", "loom_aware", "set another participant's permissions",
               "change the permissions"),
)})


def permission_of(verb: str) -> str:
    """The permission a verb needs, seeds' tools and editor verbs alike."""
    if verb in TOOLS_BY_NAME:
        return TOOLS_BY_NAME[verb].permission
    return EDITOR_VERBS[verb].permission

# ----------------------------------------------------------------- the small words
# Words the parser reads around the verbs. A filler word is never a node reference.

#: Ignored between arguments (``show me the node a7x2``).
FILLER: frozenset[str] = frozenset({
    "me", "the", "node", "at", "of", "with", "for", "on", "in", "to", "as", "please",
    "pls", "plz", "kindly", "thanks", "thank", "you", "thx", "ty", "a", "an", "this",
    "that", "then", "now", "and", "my", "its", "just", "here", "there", "again", "up",
    "into", "onto", "about", "some", "also", "ok", "okay",
})
#: Further filler for one verb (``switch to branch 8.2``, ``pin a7x2 to memory``).
VERB_FILLER: Mapping[str, frozenset[str]] = MappingProxyType({
    "switch": frozenset({"branch", "position"}),
    "link": frozenset({"from", "between"}),
    "pin": frozenset({"memory", "working", "context"}),
    "drop": frozenset({"memory", "from", "context"}),
    "recall": frozenset({"from", "memory"}),
    "stash": frozenset({"memory"}),
    "help": frozenset({"tool", "command"}),
})
#: Skipped before the verb (``could you``, ``let's``, ``I'd like to``).
POLITE: frozenset[str] = frozenset({
    "please", "pls", "plz", "kindly", "could", "can", "would", "will", "you", "let's",
    "lets", "let", "us", "i'd", "i", "like", "to", "want", "wanna", "i'll", "i'm",
    "going", "we", "we'll", "me", "ok", "okay", "now", "then", "and", "so", "just", "also",
    "first", "next", "finally", "alright", "hey", "well", "yes", "sure", "maybe",
    "perhaps", "quickly", "quick",
})
#: Ignored inside a verb phrase (``add a note`` = ``add note``, ``go to`` = ``go``).
PHRASE_FILLER: frozenset[str] = frozenset({
    "a", "an", "the", "me", "my", "to", "at", "some", "of", "us",
})
#: ``continue … 3 continuations`` / ``40 tokens``: nouns that make a number a count.
COUNT_NOUNS: frozenset[str] = frozenset({
    "continuations", "continuation", "branches", "alternatives", "options", "variants",
    "versions", "completions", "samples", "times", "more", "ways", "takes", "drafts",
})
TOKEN_NOUNS: frozenset[str] = frozenset({"tokens", "token", "words"})
NUMBER_WORDS: Mapping[str, int] = MappingProxyType({
    "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7,
    "eight": 8, "nine": 9, "ten": 10,
})
#: ``respond … as:EDGE`` (seed 002's ``primary`` is a continuation).
EDGE_TYPES: Mapping[str, str] = MappingProxyType({
    "continuation": "continuation", "primary": "continuation", "reply": "continuation",
    "context": "context", "instruction": "instruction",
})
#: ``view branch:X as:SHAPE``.
VIEW_SHAPES: Mapping[str, str] = MappingProxyType({"prose": "prose", "nodes": "nodes"})
#: ``help tools``: words that ask for the overview.
HELP_ALL: frozenset[str] = frozenset({"tools", "commands", "all", "everything", "overview"})


def _reserved() -> frozenset[str]:
    words: set[str] = set(FILLER | POLITE | PHRASE_FILLER | COUNT_NOUNS | TOKEN_NOUNS)
    words |= set(NUMBER_WORDS) | set(EDGE_TYPES) | set(VIEW_SHAPES) | HELP_ALL | {"ahead"}
    for extra in VERB_FILLER.values():
        words |= extra
    for t in ALL_TOOLS:
        words |= set(t.flags) | set(t.options)
        for phrase in (t.name, *t.synonyms):
            words |= set(phrase.split())
    return frozenset(words)


#: Every word the grammar gives a meaning to. A node id spelt like one of these is
#: written ``[id]`` in canonical form so it reads back as a node.
RESERVED: frozenset[str] = _reserved()
