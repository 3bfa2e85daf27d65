"""What the collaborator is told after a reply: the editors' short previews of the nodes a
``list`` or ``continue`` names, replaced by their whole text when that fits the result
threshold (else each option costs the model a ``→ view … full`` the human never needs,
who reads them in the buffer); and a line for every command it wrote that did not run,
with why (mid-line, in a code block, after its commands), rather than skipping it
silently; and each result headed by its command in short form (the model's own reply
holds it whole: a 2,060-character document went back to it a second time)."""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence

from loom.commands import syntax
from loom.commands.canonical import to_text
from loom.commands.extract import ReplySegment
from loom.commands.lexicon import ARROWS, is_command_line
from loom.commands.results import Result
from loom.commands.syntax import VERBS
from loom.render.text import preview, quote, thousands
from loom.store.workspace import Workspace


def named_nodes(cmd: syntax.Command, result: Result) -> Sequence[str]:
    """The ids of the nodes a successful ``list … continuations`` or ``continue`` shows as
    previews (none for any other result)."""
    if not result.ok:
        return ()
    if isinstance(cmd, syntax.List) and cmd.what == "continuations":
        return result.data.get("items") or ()
    if isinstance(cmd, syntax.Continue):
        return result.data.get("created") or ()
    return ()


def with_full_texts(ws: Workspace, cmd: syntax.Command, result: Result, threshold: int,
                    count: Callable[[str], int]) -> str:
    """``result``'s text, each node preview it shows in full when all of them fit
    ``threshold`` tokens; else as it was."""
    text = result.text
    ids = named_nodes(cmd, result)
    if not ids:
        return text
    full = text
    for node_id in ids:
        node = ws.find_node(node_id)
        if node is None:
            continue
        short = quote(preview(node.content) or "(empty)")
        whole = quote(node.content) if node.content else quote("(empty)")
        if short != whole:
            full = full.replace(short, whole, 1)
    return full if full != text and count(full) <= threshold else text


_FENCE = re.compile(r" {0,3}(`{3,}|~{3,})")
_ARROW = "|".join(re.escape(a) for a in sorted(ARROWS, key=len, reverse=True))
#: an arrow and a verb inside a line of prose (not at its start)
_MID_LINE = re.compile(rf"\S.*?(?:^|\s)((?:{_ARROW})\s*(?:{'|'.join(VERBS)})\b[^\n]*)")
NOT_RUN_SHOWN = 8


def not_run(segments: Sequence[ReplySegment], used: int) -> list[str]:
    """``not run: → continue n:3 (…why)`` for each command in the reply that did not run:
    one mid-line or in a code block in the prose it used (the first ``used`` segments),
    and every one in the text it wrote after its commands."""
    out: list[str] = []
    for seg in segments[:used]:
        if seg.kind != "prose":
            continue
        fence: str | None = None
        for line in seg.text.split("\n"):
            m = _FENCE.match(line)
            if m is not None:
                mark = m.group(1)
                if fence is None:
                    fence = mark
                elif mark[0] == fence[0] and not line.strip(" `~"):
                    fence = None
                continue
            if fence is not None and is_command_line(line):
                out.append(f"not run: {preview(line.strip(), 70)} (inside a code block, "
                           "where arrows are examples: write it on its own line outside one)")
                continue
            mid = _MID_LINE.match(line)
            if mid is not None and not is_command_line(line):
                out.append(f"not run: {preview(mid.group(1).strip(), 70)} (mid-line: a "
                           "command runs only at the start of its own line)")
    after = "(written after your commands, before their results came back)"
    for seg in segments[used:]:
        lines = seg.text.split("\n")
        for line_no, _cmd in seg.commands:
            out.append(f"not run: {preview(lines[line_no - seg.start_line].strip(), 70)} "
                       f"{after}")
        if seg.kind == "prose":
            for line in lines:
                mid = _MID_LINE.match(line)
                if mid is not None:
                    out.append(f"not run: {preview(mid.group(1).strip(), 70)} {after}")
    if len(out) > NOT_RUN_SHOWN:
        out = [*out[:NOT_RUN_SHOWN], f"(and {len(out) - NOT_RUN_SHOWN} more not run)"]
    return out


ECHO_CHARS = 160  # a command echoed over its result longer than this is shortened
ECHO_PREVIEW = 60  # of its quoted content, shown


def echo(raw: str, cmd: syntax.Command | syntax.ParseError) -> str:
    """The command as a result's heading: as written when short; else its quoted content
    cut to a preview that says how long the whole is (the reply above holds it)."""
    first = raw.split("\n", 1)[0]
    if isinstance(cmd, syntax.ParseError):
        return first if len(first) <= ECHO_CHARS else preview(first, ECHO_CHARS)
    if len(raw) <= ECHO_CHARS:
        return raw
    content = getattr(cmd, "content", None)
    if isinstance(content, str) and len(content) > ECHO_PREVIEW:
        short = to_text(cmd.model_copy(update={"content": preview(content, ECHO_PREVIEW)}))
        return f"{short} ({thousands(len(content))} characters, as written above)"
    return raw
