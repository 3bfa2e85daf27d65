"""The one entry point every front end uses: ``execute(command, actor) -> Result``.

The CLI, the language server and the collaborator agent all call this, so humans and models
get the same operations, the same permission checks and the same error texts. Exceptions
inside the core stop here and become ``✗`` results; nothing escapes to the caller.
"""

from __future__ import annotations

import importlib
import logging
import threading
from collections.abc import Callable

from loom.commands import preference_log, syntax
from loom.commands.canonical import to_text
from loom.commands.catalogue import ALL_TOOLS, EDITOR_VERBS, permission_of
from loom.commands.context import Actor, Ctx, Explorer, SubjectModel
from loom.commands.grammar import Classifier, parse_noting
from loom.commands.lexicon import CLOSERS
from loom.commands.results import Result
from loom.errors import LoomError
from loom.memory import operational as mem
from loom.model import permissions as perms
from loom.store.backend import storage_error, unreachable
from loom.store.orm import pw
from loom.store.workspace import Workspace

log = logging.getLogger(__name__)

Handler = Callable[[Ctx, object], Result]



def _handler(path: str) -> Handler:
    """``navigation.view`` → the function ``view`` of ``loom.commands.handlers.navigation``."""
    module, _, name = path.partition(".")
    fn: Handler = getattr(importlib.import_module(f"loom.commands.handlers.{module}"), name)
    return fn


# Each verb's handler and what to ask for without its permission, as the catalogue says.
_ENTRIES = {**{t.name: t for t in ALL_TOOLS}, **EDITOR_VERBS}
HANDLERS: dict[str, Handler] = {verb: _handler(e.handler) for verb, e in _ENTRIES.items()}
ACTIONS: dict[str, str] = {verb: e.action for verb, e in _ENTRIES.items()}


def parse_line(text: str, classifier: Classifier | None = None
               ) -> syntax.Command | syntax.ParseError:
    """A command line, or a whole ``→ think`` … ``←`` block, into a command."""
    return parse_line_noting(text, classifier)[0]


def parse_line_noting(text: str, classifier: Classifier | None = None
                      ) -> tuple[syntax.Command | syntax.ParseError, bool]:
    """:func:`parse_line`, and whether a typo was corrected on the way (the grammar's
    :func:`~loom.commands.grammar.parse_noting`)."""
    stripped = text.strip()
    first, _, rest = stripped.partition("\n")
    if rest:
        head, corrected = parse_noting(first)
        if isinstance(head, syntax.Think):
            body = rest.rstrip()
            closer = next((c for c in CLOSERS if body.endswith(c)), None)
            if closer is not None:
                body = body[: -len(closer)].rstrip()
            content_text = "\n".join(x for x in (head.content, body) if x)
            return syntax.Think(content=content_text), corrected
        return syntax.ParseError(message="one command per line",
                              hint="put each → command on its own line"), False
    return parse_noting(stripped, classifier)


def read_as_note(canonical: str) -> str:
    """What a result says when the line was read as something it does not spell."""
    return f"(read as {canonical})"


_TREE_WRITES = frozenset({perms.LOOM_WRITE, perms.LOOM_GENERATE})
_STILL_ALLOWED = frozenset({"undelete", "delete"})  # what a deleted tree may still take


def _refuse_deleted(ws: Workspace, actor: Actor) -> None:
    """No write goes into a deleted tree (typed text would be committed into it,
    "✓ committed 1 node", where nobody would look). Read fresh: another process may have
    deleted it since this actor's copy was read, or purged it."""
    if actor.tree is None:
        return
    fresh = ws.tree_or_none(actor.tree.id)
    if fresh is None:
        raise LoomError("NOT_FOUND", f'tree "{actor.tree.title}" was deleted and purged',
                        "nothing was written; a purged tree cannot be brought back")
    if fresh.archived:
        raise LoomError("NOT_FOUND", f'tree "{fresh.title}" was deleted',
                        f'→ undelete tree:"{fresh.title}" brings it back (within 30 days); '
                        "nothing was written, and an editor keeps what you typed")


class Executor:
    """Runs commands against one workspace; ``subject`` is the model behind ``continue``."""

    def __init__(self, ws: Workspace, subject: SubjectModel | None = None,
                 classifier: Classifier | None = None,
                 explorer: Explorer | None = None, *,
                 find_subject: Callable[[], SubjectModel | None] | None = None) -> None:
        self.ws = ws
        self._subject = subject
        #: looks the subject model up the first time a command asks for it (``app.py``:
        #: the key store is asked, 100+ ms), so commands that need no model never wait
        self._find_subject = find_subject
        self._finding = threading.Lock()
        self.classifier = classifier  # asked only when the grammar is unsure
        self.explorer = explorer  # runs → explore in the background (app.py wires it in)

    @property
    def subject(self) -> SubjectModel | None:
        """The model behind ``continue`` (looked up on first need, once)."""
        if self._find_subject is not None:
            with self._finding:
                if self._find_subject is not None:
                    self._subject, self._find_subject = self._find_subject(), None
        return self._subject

    @subject.setter
    def subject(self, value: SubjectModel | None) -> None:
        self._subject, self._find_subject = value, None

    def _current_subject(self) -> SubjectModel | None:
        return self.subject

    def execute(self, command: str | syntax.Command, actor: Actor,
                on_delta: Callable[[int, str], None] | None = None,
                cancel: threading.Event | None = None, typed: str | None = None) -> Result:
        """Run a command line (or a parsed command; ``typed`` is then the line it was
        parsed from, so a corrected typo is said the same way)."""
        if isinstance(command, str):
            cmd, corrected = parse_line_noting(command, self.classifier)
        else:
            cmd, corrected = command, False
            if typed is not None and not isinstance(command, syntax.Think):
                again, corrected = parse_noting(typed.strip())  # no classifier: no model call
                corrected = corrected or isinstance(again, syntax.ParseError)  # a guess read it
        shown = command.strip() if isinstance(command, str) else ""
        if isinstance(cmd, syntax.ParseError):
            result = Result.failure("INVALID_SYNTAX", cmd.message, cmd.hint, shown)
            self._trace(actor, shown or "→ ?", result)
            return result
        canonical = "→ think" if isinstance(cmd, syntax.Think) else to_text(cmd)
        result = self._run(cmd, actor, on_delta, cancel)
        result.command = canonical
        if corrected:  # the trace keeps the canonical command; the reader learns it too
            result.text += "\n" + read_as_note(canonical)
            result.data["read_as"] = canonical
        if not (isinstance(cmd, syntax.Think) and result.ok):  # a thought is its own entry
            self._trace(actor, canonical, result)
        return result

    def _run(self, cmd: syntax.Command, actor: Actor,
             on_delta: Callable[[int, str], None] | None,
             cancel: threading.Event | None = None) -> Result:
        ctx = Ctx(self.ws, actor, self._current_subject, on_delta, now=self.ws.clock(),
                  cancel=cancel, explorer=self.explorer)
        try:
            ctx.require(permission_of(cmd.verb), ACTIONS.get(cmd.verb, "do it"))
            if permission_of(cmd.verb) in _TREE_WRITES and cmd.verb not in _STILL_ALLOWED:
                _refuse_deleted(self.ws, actor)
            was = preference_log.before(ctx, cmd)
            result = HANDLERS[cmd.verb](ctx, cmd)
            preference_log.after(ctx, cmd, result, was)  # what the writer chose
            return result
        except LoomError as err:
            return Result.from_error(err)
        except (pw.DatabaseError, pw.InterfaceError) as err:  # busy, lost, refused…
            if isinstance(err, pw.InterfaceError) and not unreachable(err):
                return _internal(cmd, err)  # (peewee's own misuse: a bug)
            error = storage_error(err)  # rolled back: say what it means, nothing written
            if "storage error" in error.message:
                log.exception("storage error running %s", cmd.verb)
            result = Result.from_error(error)
            if unreachable(err):  # the front ends keep what it would have written
                result.data["unreachable"] = True
            return result
        except MemoryError:  # a file or a request too large for this machine: not a bug
            log.warning("out of memory running %s", cmd.verb)
            return Result.failure("LIMIT_EXCEEDED", f"there is not enough memory to {cmd.verb} "
                                  "that", "try something smaller, or free memory; nothing was "
                                  "written")
        except Exception as err:  # the boundary: a bug must not take the front end down
            return _internal(cmd, err)

    def _trace(self, actor: Actor, command: str, result: Result) -> None:
        # U+0000 as the symbol that shows it: PostgreSQL text cannot hold NUL, and a trace
        # entry is for reading
        command = command.replace("\x00", "\u2400")
        try:
            mem.record(self.ws, actor.participant, actor.tree, command, result.ok, result.code,
                       (result.message or "").replace("\x00", "\u2400"))
        except pw.DatabaseError:  # busy, a lost connection: the command's own result stands
            log.warning("could not record the trace entry for %s", command)

    def batch(self, lines: list[str], actor: Actor) -> list[Result]:
        """Consecutive command lines run together, in order (seed 000's batching)."""
        return [self.execute(line, actor) for line in lines]


def _internal(cmd: syntax.Command, err: Exception) -> Result:
    """A bug met running ``cmd``: logged with its traceback, said without it."""
    log.exception("internal error running %s", cmd.verb)
    return Result.failure("INTERNAL", f"{type(err).__name__}: {err}",
                          "this is a bug in Loom; nothing was written")
