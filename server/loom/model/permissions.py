"""Permissions (seeds 000/001): what each one allows and what it requires."""

from __future__ import annotations

from collections.abc import Iterable

LOOM_AWARE = "loom_aware"
LOOM_WRITE = "loom_write"
LOOM_GENERATE = "loom_generate"
DOC_READ = "doc_read"
DOC_WRITE = "doc_write"
CROSS_TREE = "cross_tree"  # "in tree:" navigation and cross-tree links (000: "requires permission")

ORDER: tuple[str, ...] = (LOOM_AWARE, LOOM_WRITE, LOOM_GENERATE, DOC_READ, DOC_WRITE, CROSS_TREE)
REQUIRES: dict[str, str | None] = {
    LOOM_AWARE: None,
    LOOM_WRITE: LOOM_AWARE,
    LOOM_GENERATE: LOOM_AWARE,
    DOC_READ: None,
    DOC_WRITE: DOC_READ,
    CROSS_TREE: LOOM_AWARE,
}
SHORT: dict[str, str] = {
    LOOM_AWARE: "aware",
    LOOM_WRITE: "write",
    LOOM_GENERATE: "generate",
    DOC_READ: "read",
    DOC_WRITE: "docwrite",
    CROSS_TREE: "crosstree",
}

ROLES: dict[str, tuple[str, ...]] = {
    "research collaborator": ORDER,
    "analysis assistant": (LOOM_AWARE, DOC_READ),
    "subject model": (),
    "human": ORDER,
}


def ordered(perms: Iterable[str]) -> list[str]:
    have = set(perms)
    return [p for p in ORDER if p in have]


def with_requirements(perms: Iterable[str]) -> list[str]:
    """The permissions with what each requires (seeds 000/001: ``loom_generate`` —
    "Requires: ``loom_aware``"), in order: one without its requirement does nothing."""
    out: set[str] = set()
    for p in perms:
        req: str | None = p
        while req is not None:
            out.add(req)
            req = REQUIRES.get(req)
    return ordered(out)


def effective(perms: Iterable[str]) -> set[str]:
    """Permissions that are usable: a permission whose requirement is missing does nothing."""
    have = set(perms)
    out: set[str] = set()
    for p in have:
        req, ok = REQUIRES.get(p), True
        while req is not None:
            if req not in have:
                ok = False
                break
            req = REQUIRES.get(req)
        if ok and p in REQUIRES:
            out.add(p)
    return out


def beyond(theirs: Iterable[str], mine: Iterable[str]) -> list[str]:
    """What ``theirs`` can do that ``mine`` cannot (usable permissions, in order): what a
    participant would gain by having another act for it."""
    return ordered(effective(theirs) - effective(mine))


def missing_for(required: str, perms: Iterable[str]) -> str | None:
    """The first permission in ``required``'s chain that ``perms`` lacks, or None."""
    have = set(perms)
    chain: list[str] = []
    p: str | None = required
    while p is not None:
        chain.append(p)
        p = REQUIRES.get(p)
    for p in reversed(chain):
        if p not in have:
            return p
    return None


def require_read(perms: Iterable[str], what: str = "tree", tree: str | None = None,
                 home: str | None = None) -> None:
    """The one check every read of a tree's text goes through, whatever asks (the CLI's
    ``loom tree``, the editor's path and overview views, hover, node info, search, the
    tree picture, the sibling lists): ``loom_aware`` for a tree, ``doc_read`` for a
    document; ``PERMISSION_DENIED`` without it (one check, so that no read path gives a
    tree's text to a participant the arrow commands refuse). ``tree``: the tree read,
    when it is not ``home`` (the participant's current tree) ``cross_tree`` is needed too,
    as for ``switch … in tree:``."""
    from loom.errors import LoomError

    needed = DOC_READ if what == "doc" else LOOM_AWARE
    if what != "doc" and tree is not None and home is not None and tree != home:
        needed = CROSS_TREE
    missing = missing_for(needed, perms)
    if missing is not None:
        thing = ("documents" if what == "doc" else "another tree than the one you are in"
                 if missing == CROSS_TREE else "the trees' text")
        raise LoomError("PERMISSION_DENIED", f"{missing} not enabled",
                        f"reading {thing} needs {missing}: ask the human to grant it "
                        f"(loom users grant NAME {missing})")


def reads_everywhere(perms: Iterable[str]) -> bool:
    """Whether a participant may read every tree (search and symbols list them all), not
    only the one it is in."""
    return missing_for(CROSS_TREE, perms) is None
