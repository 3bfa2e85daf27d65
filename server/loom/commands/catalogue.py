"""The verb catalogue: every arrow tool as data.

One entry per verb of seed 000's tool reference: its category, the permission it needs,
the one-line description and the syntax lines exactly as the seed lists them, a short
note, the handler that runs it, the verb phrases that mean it (synonyms), and each flag
and option with its help text, spellings, the kind of value it takes and the values worth
offering. The grammar, the lexicon (completion and highlighting), the help pages, the hints
in parse errors and the executor's table of handlers all read this table; nothing else
spells a tool's syntax or its options.

Synonyms are whole phrases (``"go to"``, ``"add note"``); a phrase never names two verbs
(``synonym_table`` refuses). Words that could mean two (``branch``: continue or respond?
``remove``: drop a pin or delete a node? ``check``, ``update``) are left out on purpose,
so the parser asks instead of guessing.

The small words the parser reads around the verbs (filler, politeness, count nouns) are
data too and live at the end of this module.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Literal

CATEGORIES: tuple[str, ...] = ("Navigation", "Content", "Documents", "Memory", "Meta")

#: The permission names in the order help prints them.
PERMISSIONS: tuple[str, ...] = (
    "loom_aware", "loom_write", "loom_generate", "doc_read", "doc_write",
)

#: What an option's value (or a quoted string) is: completion offers accordingly.
ValueKind = Literal["node", "range", "doc", "tree", "stash", "section", "text", "model",
                    "preset", "value"]


@dataclass(frozen=True, slots=True)
class Flag:
    """A bare word a verb takes (``full``), by its canonical name."""

    name: str
    #: Shown beside completions and on help pages.
    description: str
    #: Every word that sets it (the name first unless the name is no word of its own,
    #: as ``as:prose`` is set by ``prose``).
    words: tuple[str, ...] = ()

    def spellings(self) -> tuple[str, ...]:
        return self.words or (self.name,)


@dataclass(frozen=True, slots=True)
class Option:
    """A ``key:value`` option of a verb, by its canonical key."""

    name: str
    #: Shown beside completions; empty: the grammar reads it only to explain a mistake
    #: (``drop lines:``) and it is never offered.
    description: str
    aliases: tuple[str, ...] = ()
    #: What its value is (``node`` values are resolved as references).
    value: ValueKind = "value"
    #: Values worth offering after ``key:`` (any value of the right type is accepted).
    hints: tuple[str, ...] = ()
    #: How the value is read: as typed, a number, a stop string (``stop:"\\n"`` →
    #: ``["\\n"]``), token biases (``"50256:-100,13:2.5"`` → ``{"50256": -100.0,
    #: "13": 2.5}``), strings (``"very, suddenly"`` → ``["very", "suddenly"]``) or request
    #: keys (``"top_n_sigma:1.5,samplers:[\"top_k\"]"`` → ``{"top_n_sigma": 1.5,
    #: "samplers": ["top_k"]}``); a value that does not read is a clear error.
    reads: Literal["text", "int", "float", "stop", "bias", "strings", "extra"] = "text"
    #: Inclusive bounds the value must keep (``LIMIT_EXCEEDED`` when the command runs),
    #: and the hint that error gives.
    limits: tuple[float, float] | None = None
    limit_hint: str = ""
    #: True for the options that travel to the model as the request's sampling
    #: (``model/sampling.py`` has a field of the same name).
    sampling: bool = False

    def spellings(self) -> tuple[str, ...]:
        return (self.name, *self.aliases)


@dataclass(frozen=True)
class Tool:
    """One verb of the arrow language, declared once: the grammar, the lexicon, completion,
    help and the executor all read it."""

    name: str
    category: str
    permission: str
    description: str
    #: The syntax lines exactly as seed 000 lists them (arrow included).
    syntax: tuple[str, ...]
    note: str
    #: The function that runs it: ``module.function`` in ``loom.commands.handlers``.
    handler: str
    #: What a participant without the permission is told to ask the human to do.
    action: str = "do it"
    #: Verb phrases that mean this tool (``"show"``, ``"go to"``, ``"add note"``).
    synonyms: tuple[str, ...] = ()
    flags: tuple[Flag, ...] = ()
    options: tuple[Option, ...] = ()
    #: True when a bare node reference is one of its arguments (``view a7x2``).
    takes_node: bool = False
    #: What a quoted string is for this verb (completion inside quotes), if anything.
    quoted: ValueKind | None = None
    #: Words it ignores besides the common filler (``switch to branch 8.2``).
    filler: frozenset[str] = frozenset()
    #: Further forms the parser accepts (from seed 002 and the spec notes); shown in
    #: hints, not on the seed's help page.
    variants: tuple[str, ...] = ()

    @functools.cached_property
    def flag_words(self) -> Mapping[str, str]:
        """Every word that sets a flag, mapped to the flag's name (``complete`` → full)."""
        return MappingProxyType({w: f.name for f in self.flags for w in f.spellings()})

    @functools.cached_property
    def option_words(self) -> Mapping[str, str]:
        """Every spelling of an option's key, mapped to the canonical key (``count`` → n)."""
        return MappingProxyType({w: o.name for o in self.options for w in o.spellings()})

    def option(self, key: str) -> Option | None:
        """The option whose canonical key is ``key``."""
        return next((o for o in self.options if o.name == key), None)

    @property
    def forms(self) -> tuple[str, ...]:
        """Every command form of the tool: the seed's lines, then the variants."""
        return tuple(s for s in self.syntax if s.startswith("→")) + self.variants


#: ``respond … as:EDGE`` (seed 002's ``primary`` is a continuation).
EDGE_TYPES: Mapping[str, str] = MappingProxyType({
    "continuation": "continuation", "primary": "continuation", "reply": "continuation",
    "context": "context", "instruction": "instruction",
})
#: ``view branch:X as:SHAPE``.
VIEW_SHAPES: Mapping[str, str] = MappingProxyType({"prose": "prose", "nodes": "nodes"})


def _values(table: Mapping[str, str]) -> tuple[str, ...]:
    return tuple(dict.fromkeys(table.values()))


def _doc(description: str, *aliases: str) -> Option:
    return Option("doc", description, aliases, value="doc")


def _section(description: str, *aliases: str) -> Option:
    return Option("section", description, aliases, value="section")


def _node(description: str, *aliases: str) -> Option:
    return Option("node", description, aliases, value="node")


_TREE = Option("tree", "", value="tree")  # accepted (delete, rename, search), not offered
_SUMMARY_WORDS = ("summary", "brief", "overview")

#: ``continue``'s choice of models, shared with ``explore`` (which passes them to each of its
#: continues).
_MODEL_OPTIONS: tuple[Option, ...] = (
    Option("model", "which model continues (a profile name or its start)",
           ("profile", "with-model"), value="model"),
    Option("models", "several models at once, n each: models:a,b", ("profiles",),
           value="model"),
)
#: ``continue``'s sampling options after ``n``, shared with ``explore`` (which passes them,
#: ``stop:`` too, to each of its continues).
_SAMPLING_OPTIONS: tuple[Option, ...] = (
    Option("tokens", "max tokens each", ("max-tokens", "max_tokens", "length"),
           hints=("20", "50", "100", "200"), reads="int", sampling=True,
           limits=(1, 4096), limit_hint="short continuations (about 50 tokens) "
           "are the norm: use tokens:50"),
    Option("temperature", "sampling temperature (0-2)", ("temp",),
           hints=("0.5", "0.8", "1", "1.2"), reads="float", sampling=True,
           limits=(0, 2)),
    Option("top_p", "only the likeliest tokens up to this probability mass (0-1)",
           ("top-p", "topp", "nucleus"), hints=("0.9", "0.95", "1"), reads="float",
           sampling=True, limits=(0, 1)),
    Option("min_p", "drop tokens less likely than this share of the likeliest (0-1)",
           ("min-p", "minp"), hints=("0.05", "0.1"), reads="float", sampling=True,
           limits=(0, 1)),
    Option("stop", "end each continuation where this text appears", ("until",),
           value="text", hints=('"\\n"', '"\\n\\n"', '"."'), reads="stop",
           sampling=True),
    Option("seed", "the sampler's seed: the same seed, the same text where the "
           "model allows", ("random-seed",), hints=("1", "42"), reads="int",
           sampling=True, limits=(0, 2**31 - 1)),
    Option("logit_bias", "push token ids up or down: \"id:bias,…\" (-100 to 100)",
           ("logit-bias", "bias"), value="text", reads="bias", sampling=True),
    Option("top_k", "only the k likeliest tokens (0: all)", ("top-k", "topk"),
           hints=("20", "40", "100"), reads="int", sampling=True, limits=(0, 100_000)),
    Option("typical_p", "locally typical sampling: the tokens nearest the expected "
           "surprise, up to this mass (0-1; 1: off)", ("typical-p", "typical"),
           hints=("0.9", "0.95"), reads="float", sampling=True, limits=(0, 1)),
    Option("repeat_penalty", "divide the odds of tokens in the recent text by this "
           "(1: off)", ("repeat-penalty", "repetition_penalty", "repetition-penalty"),
           hints=("1.05", "1.1", "1.2"), reads="float", sampling=True, limits=(0, 5)),
    Option("frequency_penalty", "lower a token by how often it has appeared (-2 to 2)",
           ("frequency-penalty",), hints=("0.2", "0.5"), reads="float", sampling=True,
           limits=(-2, 2)),
    Option("presence_penalty", "lower a token once it has appeared at all (-2 to 2)",
           ("presence-penalty",), hints=("0.2", "0.5"), reads="float", sampling=True,
           limits=(-2, 2)),
    Option("dry", "DRY: penalise repeating a sequence, by this multiplier (0: off)",
           ("dry_multiplier", "dry-multiplier"), hints=("0.8",), reads="float",
           sampling=True, limits=(0, 5)),
    Option("dry_base", "DRY: how fast the penalty grows with the repeat's length (1-4)",
           ("dry-base",), hints=("1.75",), reads="float", sampling=True, limits=(1, 4)),
    Option("dry_allowed_length", "DRY: repeats this long go unpenalised",
           ("dry-allowed-length",), hints=("2", "3"), reads="int", sampling=True,
           limits=(0, 100)),
    Option("xtc_probability", "XTC: how often to drop the top choices (0-1; 0: off)",
           ("xtc", "xtc-probability"), hints=("0.5",), reads="float", sampling=True,
           limits=(0, 1)),
    Option("xtc_threshold", "XTC: the tokens above this probability are the top choices",
           ("xtc-threshold",), hints=("0.1",), reads="float", sampling=True,
           limits=(0, 1)),
    Option("mirostat", "Mirostat 1 or 2: keep the surprise near mirostat_tau (0: off)",
           (), hints=("2",), reads="int", sampling=True, limits=(0, 2),
           limit_hint="use mirostat:1 or mirostat:2 (0 turns it off)"),
    Option("mirostat_tau", "Mirostat: the surprise to keep to (about 3-8)",
           ("mirostat-tau",), hints=("5",), reads="float", sampling=True, limits=(0, 20)),
    Option("mirostat_eta", "Mirostat: how fast it learns (0-1)", ("mirostat-eta",),
           hints=("0.1",), reads="float", sampling=True, limits=(0, 1)),
    Option("banned", "never sample the tokens of these strings: \"very, suddenly\"",
           ("ban", "banned-strings", "banned_strings"), value="text", reads="strings",
           sampling=True),
    Option("grammar", "a GBNF grammar every continuation must match",
           ("gbnf",), value="text", hints=('"root ::= \\"yes\\" | \\"no\\""',),
           sampling=True),
    Option("extra", "any other key the backend takes: \"key:value,…\"", (),
           value="text", reads="extra", sampling=True),
)
#: ``continue``'s named sampler presets (``[presets.NAME]`` in config.toml), shared with
#: ``explore``; options given beside one win over its values.
_PRESET = Option("preset", "a sampler preset from config.toml: preset:NAME",
                 ("sampler",), value="preset")


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
        handler="navigation.view",
        synonyms=("show", "inspect", "open", "display", "look at", "see", "examine", "peek"),
        flags=(
            Flag("full", "complete content", ("full", "complete", "whole", "entire")),
            Flag("summary", "summary only (default)",
                 ("summary", "summarized", "brief", "short")),
            Flag("with-annotations", "include annotations",
                 ("with-annotations", "with-annotation", "annotations", "annotated")),
            Flag("with-links", "include links", ("with-links", "links", "linked")),
            Flag("as:prose", "the path as stitched prose", ("prose",)),
            Flag("as:nodes", "the path as separate nodes", ("nodes",)),
        ),
        options=(
            Option("branch", "the path through a node", value="node"),
            Option("as", "prose or nodes", hints=_values(VIEW_SHAPES)),
            _node("the node to view", "id"),
        ),
        takes_node=True, quoted="node",
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
        handler="navigation.list_",
        synonyms=("ls", "enumerate"),
        flags=(
            Flag("continuations", "the node's children (default)", (
                "continuations", "continuation", "children", "child", "replies", "branches",
                "kids")),
            Flag("annotations", "notes on the node",
                 ("annotations", "annotation", "notes", "comments")),
            Flag("links", "links to nodes, trees and documents",
                 ("links", "link", "connections")),
            Flag("documents", "the documents there are (as → read alone)",
                 ("documents", "document", "docs")),
        ),
        takes_node=True, quoted="node",
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
        handler="navigation.tree",
        synonyms=("overview", "show tree", "view tree", "tree view"),
        flags=(
            Flag("summary", "condensed overview",
                 ("summary", "overview", "brief", "condensed", "short")),
            Flag("with-text", "the whole tree with each node's text and notes",
                 ("with-text", "text", "with-texts")),
        ),
        options=(
            Option("from", "start at a node", ("start", "root"), value="node"),
            Option("depth", "levels to show (default 5)", ("levels", "level"),
                   hints=("1", "3", "5", "10")),
        ),
        takes_node=True, quoted="node",
    ),
    Tool(
        name="switch", category="Navigation", permission="loom_aware",
        description="Move active context to a different node",
        syntax=(
            "→ switch to [localId]",
            "→ switch to [localId] in tree:[treeId]",
        ),
        note="Switching into another tree needs cross-tree permission.",
        handler="navigation.switch",
        synonyms=(
            "go", "go to", "goto", "jump", "jump to", "move", "move to", "navigate",
            "navigate to", "cd", "checkout", "visit",
        ),
        options=(
            Option("tree", "another tree (cross-tree)", value="tree"),
            _node("the node to switch to", "id"),
        ),
        takes_node=True, quoted="node", filler=frozenset({"branch", "position"}),
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
        handler="content.respond", action="add the node",
        synonyms=("reply", "reply to", "add", "answer", "say"),
        options=(
            Option("as", "edge type (default continuation)", ("type", "edge"),
                   hints=_values(EDGE_TYPES)),
        ),
        takes_node=True, quoted="text",
    ),
    Tool(
        name="annotate", category="Content", permission="loom_write",
        description="Add an annotation to a node",
        syntax=('→ annotate [localId] "[content]"',),
        note="Annotations are excluded from subject model context by default.",
        handler="content.annotate", action="annotate",
        synonyms=(
            "note", "comment", "remark", "add note", "add annotation", "add comment",
            "leave note", "leave annotation", "leave comment",
        ),
        takes_node=True, quoted="text",
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
        handler="content.link", action="link",
        synonyms=("connect", "add link", "relate", "associate", "cross-reference", "xref"),
        options=(
            Option("note", "what the link means", ("because", "description", "desc"),
                   value="text"),
            _doc("a document", "document"),
            Option("tree", "another tree", value="tree"),
            _node("a node (in tree:)"),
            _section("a section of the document", "sec"),
        ),
        takes_node=True, quoted="text", filler=frozenset({"from", "between"}),
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
        handler="content.edit", action="edit",
        synonyms=("revise", "rewrite", "modify", "amend", "change"),
        takes_node=True, quoted="text",
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
        handler="content.continue_", action="generate",
        synonyms=("generate", "gen", "extend", "expand", "keep going"),
        options=(
            Option("from", "node to continue from", ("node",), value="node"),
            *_MODEL_OPTIONS,
            Option("n", "how many (1-10)", ("count", "num", "number"),
                   hints=("1", "2", "3", "5", "10"), reads="int", sampling=True),
            _PRESET,
            *_SAMPLING_OPTIONS,
        ),
        takes_node=True, quoted="node",
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
        handler="split.split", action="split the node",
        synonyms=("cut", "divide"),
        options=(
            # an offset into the node: no value worth offering
            Option("at", "character offset in the node's text", ("offset", "position", "pos")),
            Option("alt", "an alternative to branch with there",
                   ("alternative", "with", "instead"), value="text"),
        ),
        takes_node=True, quoted="text",
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
        handler="documents.read", action="read the document",
        synonyms=("peruse",),
        flags=(
            Flag("summary", "the document's summary", _SUMMARY_WORDS),
            Flag("full", "the whole document (default)", ("full", "all", "whole")),
        ),
        options=(
            _doc("a document", "document", "file"),
            Option("lines", "a line range start-end", ("line",)),
            _section("a section", "sec"),
        ),
        quoted="text",
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
        handler="documents.write", action="write it",
        synonyms=("append",),
        flags=(
            Flag("append", "add at the end (default)"),
            Flag("replace", "replace the section: given"),
        ),
        options=(
            _doc("a document", "document", "file"),
            Option("at", "start, end, a line or a section", ("location",),
                   hints=("start", "end")),
            Option("replace", "a section to replace", value="section"),
            _section("a section"),
        ),
        quoted="text",
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
        handler="memory.pin",
        synonyms=("keep", "hold"),
        options=(
            _doc("a document", "document"),
            _section("a section of the document", "sec"),
            _node("the node to pin"),
        ),
        takes_node=True, quoted="node", filler=frozenset({"memory", "working", "context"}),
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
        handler="memory.stash",
        synonyms=("save", "store", "shelve", "set aside"),
        options=(
            Option("content-of", "a node's content", ("contents-of", "content_of"),
                   value="node"),
            Option("summary-of", "a path range A-B", ("summary_of",), value="range"),
            Option("label", "the stash's label", ("as", "name", "called"), value="text"),
        ),
        quoted="text", filler=frozenset({"memory"}),
    ),
    Tool(
        name="recall", category="Memory", permission="loom_aware",
        description="Retrieve stashed content back into working context",
        syntax=('→ recall "[label]"',),
        note="Brings a stash back into working context.",
        handler="memory.recall",
        synonyms=("retrieve", "restore"),
        options=(Option("label", "a stash label", ("stash",), value="stash"),),
        quoted="stash", filler=frozenset({"from", "memory"}),
    ),
    Tool(
        name="drop", category="Memory", permission="loom_aware",
        description="Explicitly remove something from operational memory",
        syntax=(
            "→ drop pin:[localId]",
            '→ drop stash:"[label]"',
        ),
        note="Removes a pin or a stash from operational memory.",
        handler="memory.drop",
        synonyms=("forget", "unpin", "discard", "release"),
        options=(
            Option("pin", "a pinned node or document", value="node"),
            Option("stash", "a stash label", value="stash"),
            _doc("a pinned document", "pin:doc"),
            _section("a section of the pinned document"),
            Option("lines", ""),
        ),
        takes_node=True, quoted="stash", filler=frozenset({"memory", "from", "context"}),
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
        handler="memory.memory",
        synonyms=("mem", "show memory", "view memory", "check memory", "working memory"),
        flags=(
            Flag("trace", "recent actions", ("trace", "history", "actions", "log")),
            Flag("stashed", "stashed items", ("stashed", "stash", "stashes")),
            Flag("errors", "recent errors", ("errors", "error", "failures")),
            Flag("state", "pins and stashes (default)", ("state", "status")),
        ),
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
        handler="meta.help_",
        synonyms=("usage", "commands"),
        filler=frozenset({"tool", "command"}),
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
        handler="memory.think",
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
        handler="reader.bookmark", action="bookmark it",
        synonyms=("star", "favorite", "favourite", "add bookmark"),
        quoted="text",
    ),
    Tool(
        name="unbookmark", category="Reader", permission="loom_write",
        description="Remove a node's bookmark",
        syntax=("→ unbookmark [localId]",),
        note="The node stays as it is; only the bookmark goes.",
        handler="reader.unbookmark", action="remove the bookmark",
        synonyms=("unstar", "remove bookmark"),
    ),
    Tool(
        name="tag", category="Reader", permission="loom_write",
        description="Tag a node",
        syntax=('→ tag [localId] "[tag]"', '→ tag [localId] "[tag]" "[tag]"'),
        note="Tags are lower case; #dream and Dream are the tag dream.",
        handler="reader.tag", action="tag it",
        synonyms=("add tag",),
        quoted="text",
    ),
    Tool(
        name="untag", category="Reader", permission="loom_write",
        description="Remove tags from a node",
        syntax=('→ untag [localId] "[tag]"',),
        note="Without a tag, every tag of the node goes.",
        handler="reader.untag", action="remove the tag",
        synonyms=("remove tag",),
        quoted="text",
    ),
    Tool(
        name="rate", category="Reader", permission="loom_write",
        description="Rate a node: +1 good, -1 bad, 0 clears",
        syntax=("→ rate [localId] +1", "→ rate [localId] -1", "→ rate [localId] 0"),
        note="good/bad and up/down work too.",
        handler="reader.rate", action="rate it",
        synonyms=("rating", "vote"),
    ),
    Tool(
        name="prune", category="Reader", permission="loom_write",
        description="Hide a node and everything below it",
        syntax=("→ prune [localId]",),
        note="Pruned nodes leave views, pickers, search and model context; nothing is lost.",
        handler="reader.prune", action="prune it",
        synonyms=("hide", "collapse branch"),
    ),
    Tool(
        name="unprune", category="Reader", permission="loom_write",
        description="Show a pruned node again",
        syntax=("→ unprune [localId]",),
        note="Brings back the node and everything below it.",
        handler="reader.unprune", action="unprune it",
        synonyms=("unhide",),
    ),
    Tool(
        name="regenerate", category="Reader", permission="loom_generate",
        description="Make a model's continuation again: same model, prompt and settings",
        syntax=("→ regenerate [localId]",),
        note="The new sibling says whether its text matched; with a seed (continue "
        "seed:42) the local model makes the same text again.",
        handler="content.regenerate", action="generate",
        synonyms=("replay", "rerun", "re-run", "remake"),
        takes_node=True, quoted="node",
    ),
    Tool(
        name="score", category="Reader", permission="loom_generate",
        description="How likely a model finds existing text, token by token",
        syntax=("→ score [localId]", "→ score branch:[localId]",
                "→ score branch:[localId] model:[profile]"),
        note="Scores the writer's words (human, imported or edited text) as model text "
        "has its probabilities: the editors colour them, hover shows a token's "
        "alternatives. Model text keeps its generation's. Asks a model: loom_generate.",
        handler="score.score", action="score the text",
        synonyms=("perplexity", "surprisal"),
        options=(
            Option("branch", "every node of the path through a node", ("path",),
                   value="node"),
            Option("model", "which model scores (a profile name or its start)",
                   ("profile", "with-model"), value="model"),
            _node("the node to score", "id"),
        ),
        takes_node=True, quoted="node",
    ),
    Tool(
        name="fill", category="Reader", permission="loom_generate",
        description="Rewrite the middle of a node: n model-written versions of a span",
        syntax=(
            "→ fill [localId] at:[start]-[end]",
            "→ fill [localId] at:[start]-[end] n:[count]",
            '→ fill [localId] "[text to replace]"',
        ),
        note="The text before and after the span stays; each alternative is a version of "
        "the node (its continuations stay shared), so switching among them swaps only the "
        "span. Offsets are characters of the node's text (→ view [localId] full).",
        handler="fill.fill", action="generate",
        synonyms=("infill", "fill in", "rewrite span", "fill middle"),
        options=(
            Option("at", "the span: start-end character offsets in the node's text",
                   ("span", "range")),
            *_MODEL_OPTIONS,
            Option("n", "how many versions (1-10)", ("count", "num", "number"),
                   hints=("1", "2", "3", "5"), reads="int", sampling=True),
            _PRESET,
            *_SAMPLING_OPTIONS,
        ),
        takes_node=True, quoted="text",
        variants=("→ fill [localId] [start]-[end]",),
    ),
    Tool(
        name="explore", category="Reader", permission="loom_generate",
        description="Let the collaborator explore: generate, judge, prune, go deeper",
        syntax=(
            "→ explore",
            '→ explore from [localId] depth:[d] n:[n] judge:"[what makes a good branch]"',
            "→ explore end",
        ),
        note="Runs in the background as the collaborator: each level continues the best n "
        "branches (n each), the collaborator's model scores every new branch 0-10 against "
        "the judge's rubric, branches below the threshold are pruned (→ unprune brings "
        "one back); it ends at the depth, at the token budget (subject and judge tokens), "
        "or at → explore end. stop:\"…\" and the other sampling options pass to each "
        "continue.",
        handler="explore.explore", action="explore",
        synonyms=("autoloom", "auto-loom"),
        # (bare `stop`, the old spelling, still ends it, read as → explore end: a stop
        # string is always `stop:"…"`)
        flags=(Flag("end", "end the tree's exploration",
                    ("end", "finish", "halt", "cancel", "stop")),),
        options=(
            Option("from", "node to explore from (default: your position)", ("node",),
                   value="node"),
            Option("depth", "levels to go down (1-6, default 3)", ("levels",),
                   hints=("1", "2", "3", "6"), reads="int", limits=(1, 6),
                   limit_hint="use depth:1 to depth:6"),
            Option("n", "continuations a node, and branches kept a level (1-5, default 2)",
                   ("count", "width", "beam"), hints=("1", "2", "3", "5"), reads="int",
                   limits=(1, 5), limit_hint="use n:1 to n:5"),
            Option("judge", "what makes a good branch (the judge's rubric)",
                   ("rubric", "criteria"), value="text"),
            Option("budget", "tokens it may spend, subject and judge together "
                   "(default 20,000)",
                   hints=("5000", "20000", "100000"), reads="int", limits=(100, 2_000_000),
                   limit_hint="use budget:100 to budget:2000000"),
            Option("threshold", "prune branches scored below this (0-10, default 5)",
                   ("prune-below",), hints=("3", "5", "7"), reads="int",
                   limits=(0, 10), limit_hint="use threshold:0 (prune nothing) to "
                   "threshold:10"),
            *_MODEL_OPTIONS,
            _PRESET,
            *_SAMPLING_OPTIONS,
        ),
        takes_node=True, quoted="text",
        variants=("→ explore [localId] depth:[d]", '→ explore "[what makes a good branch]"'),
    ),
    Tool(
        name="delete", category="Reader", permission="loom_write",
        description="Delete a subtree or a tree (undo with undelete for 30 days)",
        syntax=("→ delete [localId]", '→ delete tree:"[name]"'),
        note="A soft delete: → undelete brings it back within 30 days.",
        handler="reader.delete", action="delete it",
        synonyms=("trash",),
        options=(_TREE, Option("node", "")),
    ),
    Tool(
        name="undelete", category="Reader", permission="loom_write",
        description="Bring back a deleted subtree or tree",
        syntax=("→ undelete [localId]", '→ undelete tree:"[name]"'),
        note="Within 30 days of the delete.",
        handler="reader.undelete", action="undelete it",
        synonyms=("untrash", "undo delete"),
        options=(_TREE, Option("node", "")),
    ),
    Tool(
        name="rename", category="Reader", permission="loom_write",
        description="Rename a tree",
        syntax=('→ rename "[title]"', '→ rename tree:"[name]" "[title]"'),
        note="Renames the tree you are in unless tree: names another.",
        handler="reader.rename", action="rename the tree",
        synonyms=("retitle",),
        options=(_TREE,),
        quoted="text",
    ),
    Tool(
        name="search", category="Reader", permission="loom_aware",
        description="Full-text search over every tree",
        syntax=('→ search "[words]"', '→ search "[words]" in tree:"[name]"'),
        note="Every word must occur; the last may be the start of a word. "
        'Quotes in the words keep a phrase: → search "\"the key\" door".',
        handler="reader.search",
        synonyms=("find", "look for", "grep"),
        options=(_TREE,),
        quoted="text",
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
    """A verb editors and the CLI use besides the seeds' tools (``syntax.EDITOR_VERBS``): it
    runs through the executor with a permission like any tool, but has no text form and
    is not listed by ``→ help``."""

    name: str
    permission: str
    description: str
    #: What a participant without the permission is told to ask the human to do.
    action: str
    #: The function that runs it: ``module.function`` in ``loom.commands.handlers``.
    handler: str


EDITOR_VERBS: Mapping[str, EditorVerb] = MappingProxyType({v.name: v for v in (
    EditorVerb("commit", "loom_write", "commit a buffer's typed text as nodes and versions",
               "commit the text", "editor.commit"),
    EditorVerb("new", "loom_write", "create a tree", "create the tree", "editor.new_tree"),
    EditorVerb("save", "doc_write", "save a whole document", "save the document",
               "editor.save"),
    EditorVerb("export", "loom_aware", "export a tree (to a file: needs doc_write)",
               "export the tree", "editor.export"),
    EditorVerb("import", "loom_write", "import trees from a file", "import the file",
               "editor.import_"),
    EditorVerb("grant", "loom_aware", "set another participant's permissions",
               "change the permissions", "editor.grant"),
    EditorVerb("model", "loom_aware", "pick the model continue asks in a tree",
               "pick the model", "content.choose_model"),
    EditorVerb("settings", "loom_write", "set a tree's shuffle and blind settings",
               "change the tree's settings", "preferences.tree_settings"),
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
#: ``help tools``: words that ask for the overview.
HELP_ALL: frozenset[str] = frozenset({"tools", "commands", "all", "everything", "overview"})


def _reserved() -> frozenset[str]:
    words: set[str] = set(FILLER | POLITE | PHRASE_FILLER | COUNT_NOUNS | TOKEN_NOUNS)
    words |= set(NUMBER_WORDS) | set(EDGE_TYPES) | set(VIEW_SHAPES) | HELP_ALL | {"ahead"}
    for t in ALL_TOOLS:
        words |= t.filler | set(t.flag_words) | set(t.option_words)
        for phrase in (t.name, *t.synonyms):
            words |= set(phrase.split())
    return frozenset(words)


#: Every word the grammar gives a meaning to. A node id spelt like one of these is
#: written ``[id]`` in canonical form so it reads back as a node.
RESERVED: frozenset[str] = _reserved()
