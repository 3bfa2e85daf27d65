"""Command lines the human typed: found, run once each, removed from the buffer.

Only text the human added is a candidate: lines of the working buffer (after the last
committed node) and lines typed into a node that its committed text does not have. Node
content is prose whatever arrows it holds, so opening and saving a node never runs it."""

from __future__ import annotations

from collections import Counter

from loom.commands import syntax
from loom.commands.canonical import to_text
from loom.commands.executor import parse_line_noting, read_as_note
from loom.commands.results import Result
from loom.errors import LoomError
from loom.lsp.buffer import Segment
from loom.lsp.documents import OpenDoc, copy_segments
from loom.lsp.features.diagnostics import Diagnostics
from loom.lsp.features.editing import Editing
from loom.lsp.features.generation import Generating
from loom.lsp.features.refs import is_command_line
from loom.lsp.host import Host
from loom.lsp.messages import note_first
from loom.lsp.positions import TextDoc

#: Verbs that act on the path: the buffer is committed first, so they see what was typed.
_COMMIT_FIRST = frozenset({"switch", "edit", "respond", "continue", "split"})


def candidate_lines(text: str, segments: list[Segment], encoding: str = "utf-16") -> list[int]:
    """Line numbers of the command lines the human typed in ``text``: every command line
    starting in the working buffer, and, inside a node, command lines its committed text
    does not have (as many as were added)."""
    text_doc = TextDoc(text, encoding)
    end = segments[-1].end if segments else 0
    extra: dict[int, Counter[str]] = {}
    for i, seg in enumerate(segments):
        if seg.node is not None and text[seg.start:seg.end] != seg.original:
            extra[i] = Counter(x for x in seg.original.split("\n") if is_command_line(x))
    out: list[int] = []
    seg_i = 0
    for line_no in range(text_doc.line_count):
        line = text_doc.line(line_no)
        if not is_command_line(line):
            continue
        start = text_doc.line_start(line_no)
        if start >= end:
            out.append(line_no)
            continue
        while seg_i < len(segments) and segments[seg_i].end <= start:
            seg_i += 1
        if seg_i >= len(segments) or seg_i not in extra:
            continue  # a line of a node's committed text: prose
        already = extra[seg_i]
        if already[line] > 0:
            already[line] -= 1
        else:
            out.append(line_no)
    return out


class CommandLines:
    def __init__(self, host: Host, diagnostics: Diagnostics, editing: Editing,
                 generation: Generating) -> None:
        self.host = host
        self.diagnostics = diagnostics
        self.editing = editing
        self.generation = generation

    def candidates(self, doc: OpenDoc) -> list[int]:
        docs = self.host.docs
        if doc.kind == "file":  # the person's own file: every command line in it
            text = doc.session.doc
            return [i for i in range(text.line_count) if is_command_line(text.line(i))]
        if doc.kind not in ("path", "doc"):
            return []
        return candidate_lines(docs.expected_text(doc), docs.expected_segments(doc),
                               docs.encoding)

    async def run_all(self, doc: OpenDoc, background: bool = False) -> list[Result]:
        """Every command line the human typed, once each, in order; the ones that ran are
        removed, the failed ones stay with their diagnostic. With ``background`` (a save)
        a ``→ continue`` starts a generation that runs on its own, and the lines after it
        wait for the next save (they would act on the path before it lands)."""
        docs = self.host.docs
        failed = self.diagnostics.failed_lines(doc.uri)
        todo = [TextDoc(docs.expected_text(doc), docs.encoding).line(i)
                for i in self.candidates(doc)]
        results: list[Result] = []
        for line_text in todo:
            if line_text in failed:
                continue  # not fixed since it failed: running it again gives the same ✗
            text_doc = TextDoc(docs.expected_text(doc), docs.encoding)
            line_no = next((i for i in self.candidates(doc)
                            if text_doc.line(i) == line_text), None)
            if line_no is None:
                continue
            result = await self.run_line(doc.uri, line_no, background)
            results.append(result)
            if result.data.get("generating"):
                break
        return results

    async def run_line(self, uri: str, line_no: int, background: bool = False) -> Result:
        host, docs = self.host, self.host.docs
        doc = docs.ensure(uri)
        text_doc = TextDoc(docs.expected_text(doc), docs.encoding)
        if line_no >= text_doc.line_count:
            return Result.failure("NOT_FOUND", f"there is no line {line_no + 1}")
        line = text_doc.line(line_no)
        if not is_command_line(line):
            return Result.failure("INVALID_SYNTAX", f"line {line_no + 1} is not a → command",
                                  "put the command on its own line, starting with →")
        if line_no not in self.candidates(doc):
            return Result.failure(
                "INVALID_SYNTAX", f"line {line_no + 1} is part of a node's text, not a "
                "command you typed", "type commands at the end of the buffer")
        cmd, corrected = parse_line_noting(line)
        if isinstance(cmd, syntax.Continue) and doc.kind == "path" and (
                cmd.from_ is None or self._is_tip(doc, cmd.from_)):
            invalid = self.generation.invalid(cmd, uri)
            if invalid is not None:  # (n:0) refused before anything is committed or removed
                self.diagnostics.add(doc, line, invalid)
                return invalid
            await self.remove_line(doc, line_no)
            note = read_as_note(to_text(cmd)) if corrected else None
            if background:
                return self.generation.continue_in_background(uri, cmd, note, line)
            result = await self.generation.continue_(uri, cmd, line)
            if note and result.ok:  # a typo read as continue is said, on the line shown
                result.text = note_first(result.text, note)
                host.show(result)
            return result
        if not isinstance(cmd, syntax.ParseError) and cmd.verb in _COMMIT_FIRST \
                and doc.kind != "file":
            committed = await self.editing.commit_and_show(doc)
            if not committed.ok:
                self.diagnostics.add(doc, line, committed)
                return committed
        try:
            actor = host.actor(doc)
        except LoomError as err:
            result = Result.from_error(err)
            self.diagnostics.add(doc, line, result)
            return result
        result = await host.execute(line, actor)
        if not result.ok:
            self.diagnostics.add(doc, line, result)
            return result
        self.diagnostics.clear(doc, line)
        text_doc = TextDoc(docs.expected_text(doc), docs.encoding)
        now_at = next((i for i in self.candidates(doc) if text_doc.line(i) == line), None)
        if now_at is not None and doc.kind != "file":  # (a file's lines are the person's)
            await self.remove_line(doc, now_at)
        host.show(result)
        if doc.kind == "path" and doc.tree is not None:
            if isinstance(cmd, syntax.Switch | syntax.Split) and actor.tree is not None \
                    and actor.tree.id == doc.tree.id:
                _node, doc.view.tip = host.app.ws.position(actor.participant, doc.tree)
            if doc.view.tip is not None and host.app.ws.find_node(doc.view.tip.id):
                text, segments = docs.rerender_target(doc)
                await host.send_edit(doc, text, segments)
                self.editing.announce(doc)
        host.refresh_decorations()
        return result

    def _is_tip(self, doc: OpenDoc, ref: str) -> bool:
        if doc.tree is None or doc.view.tip is None:
            return False
        try:
            return self.host.app.ws.resolve(doc.tree, ref).id == doc.view.tip.id
        except LoomError:
            return False

    async def remove_line(self, doc: OpenDoc, line_no: int) -> None:
        docs = self.host.docs
        base = docs.expected_text(doc)
        text_doc = TextDoc(base, docs.encoding)
        start = text_doc.line_start(line_no)
        end = start + len(text_doc.line(line_no))
        if end < len(base):
            end += 1  # and its newline
        elif start > 0 and base[start - 1] == "\n":
            start -= 1
        text = base[:start] + base[end:]
        segments = _segments_after(docs.expected_segments(doc), start, end, "", text)
        await self.host.send_edit(doc, text, segments)


def _segments_after(base: list[Segment], start: int, end: int, new: str,
                    text: str) -> list[Segment]:
    """The node ranges once ``text[start:end]`` is replaced by ``new`` (giving ``text``)."""
    out = copy_segments(base)
    delta = len(new) - (end - start)
    for s in out:
        if s.start >= end:
            s.start += delta
            s.end += delta
        elif s.end > start:
            s.end = max(s.start, min(s.end, start) + max(0, s.end - end))
    for s in out:  # a command line typed into a node and removed: is the node still edited?
        s.dirty = s.editable and s.node is not None and text[s.start:s.end] != s.original
    return out
