"""Step 2 of parsing, the builders of the reader's verbs (bookmark, tag, rate, prune,
delete, rename, search and their undoing), kept apart from the seed's verbs in ``builders``
so that each file holds one family. Several read the words no rule took (tags, ratings,
search words), which the scan leaves in ``VerbArgs.unknown``.
"""

from __future__ import annotations

from collections.abc import Callable

from loom.commands.grammar.lexer import INT, norm_ref
from loom.commands.grammar.results import Fail, VerbArgs, show, usage
from loom.commands.grammar.scan import strings_as_refs, target_node
from loom.commands.grammar.vocabulary import Spec
from loom.commands.syntax import (
    Bookmark,
    Command,
    Delete,
    Prune,
    Rate,
    Regenerate,
    Rename,
    Search,
    Tag,
    Unbookmark,
    Undelete,
    Unprune,
    Untag,
)


def _one_node(a: VerbArgs, spec: Spec) -> str | Fail | None:
    strings_as_refs(a)
    if a.strings:
        return Fail(f"{spec.tool.name} takes no text, got {show(a.strings[0])}",
                    hint=usage(spec.tool))
    return target_node(a, spec)


def _build_bookmark(a: VerbArgs, spec: Spec) -> Command | Fail:
    if len(a.strings) > 1:
        return Fail("bookmark takes one quoted label", hint=usage(spec.tool))
    label = a.strings.pop() if a.strings else None
    node = target_node(a, spec)
    return node if isinstance(node, Fail) else Bookmark(node=node, label=label)


def _build_unbookmark(a: VerbArgs, spec: Spec) -> Command | Fail:
    node = _one_node(a, spec)
    return node if isinstance(node, Fail) else Unbookmark(node=node)


def _tags_and_node(a: VerbArgs, spec: Spec) -> tuple[str | None, tuple[str, ...]] | Fail:
    """``tag a7x2 "dream" draft #mood``: the node first, then tags (quoted or bare)."""
    if "node" in a.opts:
        node: str | None = norm_ref(a.opts["node"])
        words = list(a.refs)
    else:
        node = a.refs[0] if a.refs else None
        words = a.refs[1:]
    tags = [t for t in (*a.strings, *words, *(w.lstrip("#") for w in a.unknown)) if t.strip()]
    if spec.tool.name == "tag" and not tags:
        return Fail("tag needs a tag", hint=usage(spec.tool))
    return node, tuple(tags)


def _build_tag(a: VerbArgs, spec: Spec) -> Command | Fail:
    got = _tags_and_node(a, spec)
    return got if isinstance(got, Fail) else Tag(node=got[0], tags=got[1])


def _build_untag(a: VerbArgs, spec: Spec) -> Command | Fail:
    got = _tags_and_node(a, spec)
    return got if isinstance(got, Fail) else Untag(node=got[0], tags=got[1])


_RATINGS = {"good": 1, "up": 1, "+": 1, "like": 1, "bad": -1, "down": -1, "-": -1,
            "dislike": -1, "clear": 0, "none": 0}


def _build_rate(a: VerbArgs, spec: Spec) -> Command | Fail:
    rating: int | None = None
    node: str | None = None
    for word in (*a.refs, *a.unknown, *a.strings):
        w = word.lower()
        if rating is None and INT.fullmatch(w) and (node is not None or w[0] in "+-"
                                                    or len(a.refs) + len(a.unknown) > 1):
            rating = max(-1, min(1, int(w)))
        elif rating is None and w in _RATINGS:
            rating = _RATINGS[w]
        elif node is None and norm_ref(w) is not None:
            node = norm_ref(w)
        else:
            return Fail(f'unexpected "{word}" for rate', hint=usage(spec.tool))
    if rating is None:
        return Fail("rate needs +1, -1 or 0", hint=usage(spec.tool))
    return Rate(node=node, rating=rating)


def _needs_node(a: VerbArgs, spec: Spec) -> str | Fail:
    node = _one_node(a, spec)
    if node is None:
        return Fail(f"{spec.tool.name} needs a node", hint=usage(spec.tool))
    return node


def _build_prune(a: VerbArgs, spec: Spec) -> Command | Fail:
    node = _needs_node(a, spec)
    return node if isinstance(node, Fail) else Prune(node=node)


def _build_regenerate(a: VerbArgs, spec: Spec) -> Command | Fail:
    node = _needs_node(a, spec)
    return node if isinstance(node, Fail) else Regenerate(node=node)


def _build_unprune(a: VerbArgs, spec: Spec) -> Command | Fail:
    node = _needs_node(a, spec)
    return node if isinstance(node, Fail) else Unprune(node=node)


def _node_or_tree(a: VerbArgs, spec: Spec) -> tuple[str | None, str | None] | Fail:
    tree = a.opts.get("tree")
    if tree is not None:
        if a.refs or a.strings:
            return Fail(f"{spec.tool.name} takes a node or a tree, not both",
                        hint=usage(spec.tool))
        return None, tree
    node = _needs_node(a, spec)
    return node if isinstance(node, Fail) else (node, None)


def _build_delete(a: VerbArgs, spec: Spec) -> Command | Fail:
    got = _node_or_tree(a, spec)
    return got if isinstance(got, Fail) else Delete(node=got[0], tree=got[1])


def _build_undelete(a: VerbArgs, spec: Spec) -> Command | Fail:
    got = _node_or_tree(a, spec)
    return got if isinstance(got, Fail) else Undelete(node=got[0], tree=got[1])


def _build_rename(a: VerbArgs, spec: Spec) -> Command | Fail:
    if len(a.strings) != 1:
        return Fail("rename takes the new title in quotes", hint=usage(spec.tool))
    if a.refs or a.unknown:
        return Fail(f'unexpected "{(a.refs or a.unknown)[0]}" for rename',
                    hint=usage(spec.tool))
    return Rename(title=a.strings[0], tree=a.opts.get("tree"))


def _build_search(a: VerbArgs, spec: Spec) -> Command | Fail:
    words = [*a.strings, *a.refs, *a.unknown]
    if not words:
        return Fail("search needs words to look for", hint=usage(spec.tool))
    query = " ".join(a.strings) if a.strings else " ".join(words)
    if a.strings and (a.refs or a.unknown):  # quoted words and bare ones: all of them
        query = " ".join(f'"{w}"' if " " in w else w for w in words)
    return Search(query=query, tree=a.opts.get("tree"))


#: The builder of each reader's verb (``builders.build`` looks them up with the seed's).
READER_BUILDERS: dict[str, Callable[[VerbArgs, Spec], Command | Fail]] = {
    "bookmark": _build_bookmark, "unbookmark": _build_unbookmark, "tag": _build_tag,
    "untag": _build_untag, "rate": _build_rate, "prune": _build_prune,
    "unprune": _build_unprune, "delete": _build_delete, "undelete": _build_undelete,
    "rename": _build_rename, "search": _build_search, "regenerate": _build_regenerate,
}
