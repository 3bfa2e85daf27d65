"""docs/seeds.md lists Loom's extensions of the seeds' outputs (SPEC-NOTES 15): each row's
example is found in what Loom prints in that case, and every row has its check here."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

import pytest

from loom.app import App
from loom.commands import syntax
from loom.commands.context import Actor
from loom.model import permissions as perms
from loom.store.schema import Node
from tests.unit.test_conformance import FakeSubject, relabel

DOC = Path(__file__).resolve().parents[2] / "docs" / "seeds.md"
_ROW = re.compile(r"^\| `([a-z-]+)` \|.*\| `([^`]+)` \|$")


def rows() -> dict[str, str]:
    """The extensions table of docs/seeds.md: id → example."""
    return {m.group(1): m.group(2) for line in DOC.read_text(encoding="utf-8").splitlines()
            if (m := _ROW.match(line))}


def pattern(example: str) -> re.Pattern[str]:
    """The example as a pattern for one line of output: ``…`` is any text in the line."""
    return re.compile("".join(r"[^\n]*" if part == "…" else re.escape(part)
                              for part in re.split("(…)", example)))


class World:
    """The seeds' running example: r001 → … → a7x2 with b3k9, c4m2, d5n7 below it, the
    human at d5n7, and doc:"character notes" with its §motivation."""

    def __init__(self, app: App) -> None:
        self.app, self.ws = app, app.ws
        ws, h = self.ws, app.ws.human()
        self.tree = ws.create_tree("Marie Character Study", "dialogue",
                                   root_content="Let's study Marie.")
        self.ids: dict[str, Node] = {"r001": relabel(ws.node(self.tree.root), "r001")}
        a = relabel(ws.add_node(self.tree, self.ids["r001"], "Marie's reluctance.", h),
                    "a7x2")
        self.ids["a7x2"] = a
        for lid in ("b3k9", "c4m2", "d5n7"):
            self.ids[lid] = relabel(ws.add_node(self.tree, a, f"{lid} text.", h), lid)
        ws.create_document("character notes", "# Notes\n\n## Marie's Core Motivation\n\n"
                                               "It is the pattern.\n")
        ws.set_position(h, self.tree, self.ids["d5n7"])
        self.actor = Actor(h, self.tree)

    def run(self, line: str, actor: Actor | None = None) -> str:
        return self.app.executor.execute(line, actor or self.actor).text


def _continue(w: World) -> str:
    w.app.executor.subject = FakeSubject(["More of it."])
    out = w.run("→ continue from d5n7")
    made = w.ws.position(w.actor.participant, w.tree)[0]
    return out.replace(made.label, "b3k9")


def _summary(w: World) -> str:
    w.ws.set_tree_summary(w.tree, "Marie's reluctance is traced to her childhood. The",
                          "model", ["childhood"])
    return w.run("→ tree summary")


def _more(w: World) -> str:
    return w.run("→ tree from:r001 depth:1")


def _openings(w: World) -> str:
    w.run('→ edit r001 "Let us begin again."')
    return w.run("→ tree")


def _gap(w: World) -> str:
    ws, h = w.ws, w.ws.human()
    kids = [ws.add_node(w.tree, w.ids["d5n7"], f"reply {i}", h) for i in range(14)]
    ws.set_position(h, w.tree, kids[-1])
    return w.run("→ tree")


def _switch_in_tree(w: World) -> str:
    other = w.ws.create_tree("earlier draft", "dialogue", root_content="Once.")
    relabel(w.ws.add_node(other, w.ws.node(other.root), "Same scene.", w.ws.human()), "x9y3")
    return w.run('→ switch to x9y3 in tree:"earlier draft"')


def _with_links(w: World) -> str:
    w.run('→ link a7x2 to doc:"character notes" §motivation')
    return w.run("→ view a7x2 with-links")


def _estimated(w: World) -> str:
    from loom.memory import counting

    before = counting._loader
    counting.use_tokenizer(None)
    try:
        return w.run('→ stash "plan" "Marie keeps the letters."')
    finally:
        counting.use_tokenizer(before)


def _stashed(w: World) -> str:
    w.run('→ stash "theme notes" "Safety is what scares her."')
    return w.run("→ memory stashed")


def _errors(w: World) -> str:
    w.run("→ view xyz999")
    return w.run("→ memory errors")


def _trace(w: World) -> str:
    w.run("→ view xyz999")
    return w.run("→ memory trace")


def _agent(w: World) -> Actor:
    from loom.agent.participant import ensure_agent

    agent = ensure_agent(w.ws)
    w.ws.set_position(agent, w.tree, w.ids["a7x2"], w.ids["a7x2"])
    return Actor(agent, w.tree)


def _memory_block(w: World) -> str:
    from loom.agent import assembly as cx

    actor = _agent(w)
    w.run('→ stash "theme notes" "Safety is what scares her."', actor)
    w.run('→ recall "theme notes"', actor)
    w.run("→ think\nThe father theme is the spine.\n←", actor)
    return cx.memory_block(w.ws, actor)


def _loom_context(w: World) -> str:
    from loom.agent import assembly as cx

    w.ws.set_position(w.ws.human(), w.tree, w.ids["c4m2"])
    return cx.fit(cx.draft(w.ws, _agent(w))).sections["loom"]


def _buffer_context(w: World) -> str:
    from loom.agent import assembly as cx

    buf = w.ws.create_tree("chapter 3", "buffer", root_content="The house stood empty.")
    n = relabel(w.ws.add_node(buf, w.ws.node(buf.root), " She came.", w.ws.subject()), "a7x2")
    actor = _agent(w)
    w.ws.set_position(actor.participant, buf, n, n)
    return cx.fit(cx.draft(w.ws, Actor(actor.participant, buf))).sections["loom"]


def _grant(w: World) -> str:
    w.ws.ensure_participant("w1", "model", "collaborator", (), True)
    grant = syntax.Grant(participant="w1", permissions=(perms.LOOM_GENERATE,))
    return w.app.executor.execute(grant, w.actor).text


def _internal(w: World, monkeypatch: pytest.MonkeyPatch) -> str:
    from loom.commands import executor

    def broken(ctx, cmd):  # type: ignore[no-untyped-def]
        raise RuntimeError("a bug")

    monkeypatch.setitem(executor.HANDLERS, "view", broken)
    return w.run("→ view a7x2")


CHECKS: dict[str, Callable[..., str]] = {
    "help-split": lambda w: w.run("→ help"),
    "help-reader": lambda w: w.run("→ help"),
    "continue-switched": _continue,
    "tree-summary-summary": _summary,
    "tree-more": _more,
    "tree-not-in-drawing": lambda w: w.run("→ tree from:c4m2"),
    "tree-openings": _openings,
    "tree-gap": _gap,
    "read-as": lambda w: w.run("→ veiw a7x2 ful"),
    "did-you-mean": lambda w: w.run("→ view b3k8"),
    "switch-in-tree": _switch_in_tree,
    "list-leaf": lambda w: w.run("→ list d5n7 continuations"),
    "list-none": lambda w: w.run("→ list d5n7 annotations"),
    "view-with-links": _with_links,
    "prose-head": lambda w: w.run("→ view branch:c4m2 as:prose"),
    "read-documents": lambda w: w.run("→ read"),
    "write-created": lambda w: w.run('→ write doc:"title" append "Lighthouse"'),
    "write-replaced": lambda w: w.run(
        '→ write doc:"character notes" replace:motivation "It is the pattern again."'),
    "already-pinned": lambda w: w.run("→ pin a7x2") and w.run("→ pin a7x2"),
    "dropped-stash": lambda w: w.run('→ stash "theme notes" "x"') and w.run(
        '→ drop stash:"theme notes"'),
    "stash-estimated": _estimated,
    "memory-stashed": _stashed,
    "memory-errors": _errors,
    "trace-errors": _trace,
    "think-kept": lambda w: w.run("→ think\nThe gate matters.\n←"),
    "memory-recalled": _memory_block,
    "memory-thoughts": _memory_block,
    "cross-tree": _loom_context,
    "extended-active": _loom_context,
    "buffer-depth": _buffer_context,
    "grant-requires": _grant,
    "internal": _internal,
}


def test_every_row_has_a_check_and_every_check_a_row() -> None:
    assert set(rows()) == set(CHECKS)


@pytest.mark.parametrize("name", sorted(CHECKS))
def test_the_extension_is_what_the_doc_says(app: App, monkeypatch: pytest.MonkeyPatch,
                                            name: str) -> None:
    example = rows()[name]
    world = World(app)
    check = CHECKS[name]
    out = check(world, monkeypatch) if name == "internal" else check(world)
    assert pattern(example).search(out), (example, out)
