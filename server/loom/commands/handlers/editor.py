"""Editor verbs: what editors and the CLI change besides the seeds' tools (commits of typed
text, new trees, document saves, imports, exports), checked and traced like any tool."""

from __future__ import annotations

import base64
import os
from pathlib import Path

from loom.commands import syntax
from loom.commands.context import Ctx
from loom.commands.results import Result
from loom.errors import LoomError
from loom.model import permissions as perms
from loom.render import formats as f
from loom.render.text import plural
from loom.store.schema import Node


def commit(ctx: Ctx, cmd: syntax.Commit) -> Result:
    """A buffer's pending node edits become versions and its working text a human node
    after ``after``, in one transaction; the position moves to the new end of the path.

    In a dialogue tree an edit is a branch the conversation continues from: the first
    edited message ends the path, and the working text stays uncommitted."""
    ws, me = ctx.ws, ctx.me
    tree = ctx.tree
    versions: list[tuple[Node, str]] = []
    for v in cmd.versions:
        node = ctx.resolve(v.node)
        if node.kind == "annotation":
            raise LoomError("INVALID_SYNTAX", f"[{node.label}] is an annotation",
                            "annotations are edited by annotating again")
        if v.content != node.content:
            versions.append((node, v.content))
    text = cmd.text if cmd.text is not None and cmd.text.strip() else None
    if not versions and text is None:
        return Result.success(f.ok("nothing to commit"), created=[], versions={},
                              text_committed=False)
    end = ctx.resolve(cmd.after) if cmd.after else ctx.position()[1]
    checks = [(node, False) for node, _ in versions]
    if text is not None:
        checks.append((end, True))
    created: list[Node] = []
    mapping: dict[str, str] = {}
    text_committed = False
    with ctx.guarded(*checks):
        tip = end
        for original, content in versions:
            version = ws.add_version(tree, original, content, me)
            created.append(version)
            mapping[original.id] = version.id
            if tip.id == original.id or tree.mode == "dialogue":
                tip = version
            if tree.mode == "dialogue":
                break
        if text is not None and not (tree.mode == "dialogue" and mapping):
            node = ws.add_node(tree, tip, text, me)
            created.append(node)
            tip = node
            text_committed = True
        if cmd.move:
            ws.set_position(me, tree, tip, tip)
    shown = " ".join(f.ref(n.label) for n in created)
    return Result.success(
        f.ok(f"committed {plural(len(created), 'node')}: {shown}"),
        created=[n.id for n in created], versions=mapping, node=tip.id,
        text_committed=text_committed)


def new_tree(ctx: Ctx, cmd: syntax.NewTree) -> Result:
    title = " ".join(cmd.title.split())
    if not title:
        raise LoomError("INVALID_SYNTAX", "a tree needs a title", 'use loom new "Title"')
    tree = ctx.ws.create_tree(title, cmd.mode, description=cmd.description,
                              system_context=cmd.system_context, root_content=cmd.text,
                              author=ctx.me)
    root = ctx.ws.node(tree.root)
    ctx.ws.set_position(ctx.me, tree, root, root)
    ctx.actor.tree = tree
    return Result.success(
        f.ok(f'created tree "{title}" ({tree.mode})', f"root {f.ref(root.label)}"),
        tree=tree.id, node=root.id)


def save(ctx: Ctx, cmd: syntax.Save) -> Result:
    doc = ctx.ws.document(cmd.doc)
    if cmd.content == doc.content:
        return Result.success(f.ok(f"{f.doc_ref(doc.name)} unchanged"), doc=doc.id,
                              updated=doc.updated)
    ctx.ws.save_document(doc, cmd.content, ctx.me, expected_updated=cmd.expected)
    lines = cmd.content.count("\n") + (0 if cmd.content.endswith("\n") else 1)
    return Result.success(f.ok(f"saved {f.doc_ref(doc.name)} ({plural(lines, 'line')})"),
                          doc=doc.id, updated=doc.updated)


def export(ctx: Ctx, cmd: syntax.Export) -> Result:
    from loom.interchange import ExportOptions, export_tree, foreign
    from loom.interchange.files import size_text

    ws = ctx.ws
    tree = ws.find_tree(cmd.tree) if cmd.tree else ctx.tree
    if ctx.actor.tree is not None and tree.id != ctx.actor.tree.id:
        ctx.require(perms.CROSS_TREE, "export another tree")
    if cmd.path:
        ctx.require(perms.DOC_WRITE, "export to a file")
    options = ExportOptions(system_context=cmd.system_context, raw_responses=cmd.raw_responses,
                            agent_prompts=cmd.agent_prompts, media=cmd.media,
                            participant=ctx.me.name)
    node = ws.resolve(tree, cmd.node) if cmd.node else None
    left_out = [what for what, kept in (("the system context", cmd.system_context),
                                        ("raw responses", cmd.raw_responses),
                                        ("agents' system prompts", cmd.agent_prompts))
                if not kept and cmd.format != "md"]
    notes = [f"left out: {', '.join(left_out)}"] if left_out else []
    if foreign.is_foreign(cmd.format):
        written = foreign.export_foreign(ws, tree, cmd.format, options)
        out: str | bytes = written.data
        # what that loom cannot hold, said (never dropped in silence)
        if written.cannot_hold:
            notes += [f"not in the file ({foreign.loom_name(cmd.format)} cannot hold it):",
                      *(f"  {what}" for what in written.cannot_hold)]
        if not cmd.path and isinstance(out, bytes):  # the editors write it themselves
            return Result.success(
                f.ok(f'exported "{tree.title}" ({cmd.format})', *notes),
                output_base64=base64.b64encode(out).decode("ascii"), tree=tree.id,
                extension=written.extension)
    else:
        out = export_tree(ws, tree, cmd.format, options,  # type: ignore[arg-type]
                          node=ws.descend(node) if node is not None else None)
    if not cmd.path:
        if isinstance(out, bytes):
            raise LoomError("INVALID_SYNTAX",
                            f'"{tree.title}" holds media files, so it exports as an Open Loom '
                            "bundle (a ZIP)", "give a file to write it to: -o FILE.zip")
        return Result.success(f.ok(f'exported "{tree.title}" ({cmd.format})', *notes),
                              output=out, tree=tree.id)
    target = Path(cmd.path).expanduser()
    data = out if isinstance(out, bytes) else out.encode("utf-8")
    tmp = target.with_name(target.name + ".tmp")
    try:
        tmp.write_bytes(data)
        os.replace(tmp, target)  # atomic: a half-written export never replaces a good one
    except OSError as err:
        tmp.unlink(missing_ok=True)
        raise LoomError("NOT_FOUND", f"cannot write {target}: {err.strerror or err}",
                        "choose a folder that exists and that you can write to") from None
    kind = (f"a {foreign.loom_name(cmd.format)} file" if foreign.is_foreign(cmd.format)
            else "an Open Loom bundle" if isinstance(out, bytes) else {
                "openloom": "Open Loom", "md": "Markdown", "loom": "the Loom Protocol",
                "bundle": "an Open Loom bundle"}[cmd.format])
    return Result.success(
        f.ok(f'exported "{tree.title}" ({ws.tree_counts(tree).nodes} nodes) to {target} as {kind} '
             f"({size_text(len(data))})", *notes), path=str(target), tree=tree.id)


def import_(ctx: Ctx, cmd: syntax.Import) -> Result:
    from loom.interchange import ImportLimits, import_bytes, import_file

    if cmd.trust:  # the file's permissions are granted: only by one who holds them all
        missing = [p for p in perms.ORDER if p not in ctx.actor.permissions]
        if missing:
            raise LoomError("PERMISSION_DENIED", f"{missing[0]} is not yours to give",
                            "import without trusting the file's permissions")
    limits = ImportLimits.from_env()
    if cmd.max_mb is not None:
        if cmd.max_mb <= 0:
            raise LoomError("INVALID_SYNTAX", "--max-mb must be positive")
        limits.max_file_bytes = limits.max_document_bytes = int(cmd.max_mb * 1024 * 1024)
    if cmd.content is not None:
        # surrogatepass: a lone surrogate in the sent text is named by the parser, not a crash
        report = import_bytes(ctx.ws, cmd.content.encode("utf-8", "surrogatepass"),
                              cmd.name or "the file",
                              author=ctx.me, trust_permissions=cmd.trust, limits=limits)
    elif cmd.path:
        report = import_file(ctx.ws, Path(cmd.path).expanduser(), author=ctx.me,
                             trust_permissions=cmd.trust, limits=limits)
    else:
        raise LoomError("INVALID_SYNTAX", "import needs a file", "loom import FILE")
    for t in report.trees:  # counted as → tree counts them (the file's records may differ)
        counts = ctx.ws.tree_counts(t.tree)
        t.nodes = counts.nodes
        t.apart = counts.apart()
    return Result.success(report.text(), trees=[t.tree.id for t in report.trees],
                          repairs=report.repairs)


def grant(ctx: Ctx, cmd: syntax.Grant) -> Result:
    who = ctx.ws.participant(cmd.participant)
    unknown = [p for p in cmd.permissions if p not in perms.ORDER]
    if unknown:
        raise LoomError("INVALID_SYNTAX", f"unknown permission {unknown[0]}",
                        "permissions: " + ", ".join(perms.ORDER))
    if who.name == ctx.ws.human().name:
        raise LoomError("PERMISSION_DENIED", "the human always has every permission",
                        "grant or revoke another participant's")
    if who.name == ctx.ws.owner():
        raise LoomError("PERMISSION_DENIED", f"{who.name} owns the database and always has "
                        "every permission", "grant or revoke another participant's")
    if who.id == ctx.me.id:
        raise LoomError("PERMISSION_DENIED", "a participant cannot change its own permissions",
                        "ask the human to grant them")
    # what a permission requires comes with it (else the grant would do nothing): said
    wanted = perms.with_requirements(cmd.permissions)
    missing = [p for p in wanted if p not in ctx.actor.permissions]
    if missing:
        raise LoomError("PERMISSION_DENIED", f"{missing[0]} is not yours to give",
                        "only permissions you hold can be granted")
    # nor to take away: a reader could strip a writer down to nothing
    stronger = [p for p in perms.ordered(who.permissions or []) if p not in ctx.actor.permissions]
    if stronger:
        raise LoomError("PERMISSION_DENIED", f"{who.name} holds {stronger[0]}, which you do "
                        f"not: only someone who holds all of {who.name}'s permissions may "
                        "change them", "ask the database's owner (or the human)")
    ctx.ws.set_permissions(who, wanted)
    shown = ", ".join(wanted) or "none"
    came = [f"{req} too: {_needing(req, cmd.permissions)} requires it"
            for req in wanted if req not in cmd.permissions]
    return Result.success(f.ok(f'{who.name} may now: {shown}', *came), participant=who.id)


def _needing(requirement: str, asked: tuple[str, ...]) -> str:
    """The first asked permission whose requirements include ``requirement``."""
    return next(p for p in perms.ordered(asked)
                if requirement in perms.with_requirements([p]))
