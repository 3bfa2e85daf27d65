"""What an import did: the trees it made, what they hold, and what it had to repair."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field

from loom.render.formats import ok
from loom.render.text import plural
from loom.store.schema import Tree


@dataclass
class ImportedTree:
    tree: Tree
    nodes: int  # the file's nodes (an empty root Loom adds for a multi-root tree not counted)
    bookmarks: int = 0
    images: int = 0
    audio: int = 0
    unverified: list[str] = field(default_factory=list)  # failed provenance checks
    apart: str = ""  # what the file holds that the node count leaves out ("106 archived")


@dataclass
class ImportReport:
    """``format`` names what was read (``Open Loom 2.0``, ``socketteer/loom``…);
    ``repairs`` says in words each thing that was wrong with the file and what was done."""

    format: str
    trees: list[ImportedTree] = field(default_factory=list)
    repairs: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)  # kept but not shown as Loom shows it

    @property
    def tree_list(self) -> list[Tree]:
        return [t.tree for t in self.trees]

    def __iter__(self) -> Iterator[Tree]:
        """The trees made (callers that took ``import_file``'s list keep working)."""
        return iter(self.tree_list)

    def __len__(self) -> int:
        return len(self.trees)

    def summary(self, t: ImportedTree) -> str:
        """``imported "Title" (658 nodes, 22 bookmarks, 3 images kept; not counted: 106
        archived)``."""
        parts = [plural(t.nodes, "node")]
        if t.bookmarks:
            parts.append(plural(t.bookmarks, "bookmark"))
        media = []
        if t.images:
            media.append(plural(t.images, "image"))
        if t.audio:
            media.append(plural(t.audio, "audio file"))
        if media:
            parts.append(" and ".join(media) + " kept")
        # on the first line, which is all an editor's notification may show: the count
        # must not look like nodes went missing (socketteer's 764 read as 658)
        apart = f"; not counted: {t.apart}" if t.apart else ""
        return f'imported "{t.tree.title}" ({", ".join(parts)}{apart})'

    def lines(self, *, limit: int = 12) -> list[str]:
        """The first line and the indented lines after it, as ``ok`` prints them."""
        first = "; ".join(self.summary(t) for t in self.trees) or "imported nothing"
        rest = [f"from {self.format}; tree " + ", ".join(t.tree.id for t in self.trees)]
        for t in self.trees:
            if t.unverified:
                rest.append(f'"{t.tree.title}" is unverified: {t.unverified[0]}'
                            + (f" (and {len(t.unverified) - 1} more)"
                               if len(t.unverified) > 1 else ""))
        if self.repairs:
            rest.append(f"repaired {plural(len(self.repairs), 'problem')}:")
            rest += [f"  {r}" for r in self.repairs[:limit]]
            if len(self.repairs) > limit:
                rest.append(f"  … and {len(self.repairs) - limit} more")
        rest += self.notes[:limit]
        return [first, *rest]

    def text(self) -> str:
        first, *rest = self.lines()
        return ok(first, *rest)
