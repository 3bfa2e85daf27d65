"""Typed arguments of every Loom command and custom request, and the one answer shape.

Editors send JSON objects; each becomes one of these models at the boundary. A malformed
argument is an ``✗ INVALID_SYNTAX`` answer naming the field, never an exception. Every
answer is ``{ok, message, data}`` built from a ``Result`` (plus the request's own fields,
which older clients read at the top level)."""

from __future__ import annotations

from typing import Any, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from loom.commands.results import Result
from loom.errors import LoomError
from loom.model.sampling import Sampling


class Args(BaseModel):
    model_config = ConfigDict(extra="ignore", populate_by_name=True)


A = TypeVar("A", bound=Args)


class UriArgs(Args):
    uri: str = ""


class NodeArgs(UriArgs):
    """A node: given by id or reference, or the one at ``line``/``character``, else the
    path's end."""

    node: str | None = None
    line: int | None = Field(default=None, ge=0)
    character: int | None = Field(default=None, ge=0)


class SiblingsArgs(NodeArgs):
    """``loom.siblings``: a page of the node's siblings (``limit``, default 100)."""

    offset: int = Field(default=0, ge=0)
    limit: int | None = Field(default=None, ge=1, le=1000)


class CycleArgs(NodeArgs):
    delta: int = 1


class ActArgs(NodeArgs):
    """``loom.act``: one of the reader's actions on a node or a tree."""

    action: str
    value: str | None = None
    tree: str | None = None


class ExploreArgs(NodeArgs):
    """``loom.explore``: an exploration from a node (given, at the cursor, else the path's
    end), with ``→ explore``'s options as typed (``depth:2 n:3 judge:"…"``)."""

    options: str = ""


class StopExploringArgs(UriArgs):
    """``loom.stopExploring``: the exploration of the document's tree (or of ``tree``)."""

    tree: str | None = None


class SearchArgs(Args):
    query: str = ""
    tree: str | None = None
    limit: int = Field(default=50, ge=1, le=500)


class PictureParams(Args):
    tree: str = ""
    uri: str | None = None  # or the document's tree


class ContinueArgs(UriArgs, Sampling):
    """``loom.continue`` and ``loom.suggest``: the document, the model(s) to ask (as
    ``model:`` and ``models:``) and the sampling options of ``→ continue``; or, in
    ``options``, any of ``→ continue``'s options as the writer typed them
    (``temperature:0.7 n:2 models:a,b``), read by the grammar of a typed ``→ continue``
    line, with the same ✗ errors. Where both say something, ``options`` wins."""

    model: str | None = None
    models: list[str] | None = None
    options: str = ""
    preset: str | None = None

    def command(self) -> tuple[Any, str | None]:
        """The ``→ continue`` these arguments ask for, to be passed on whole, and how a
        typo in ``options`` was read (``(read as → continue temperature:0.7)``), if one was."""
        from loom.commands import syntax

        named = tuple(self.models or ()) or ((self.model,) if self.model else ())
        fields = self.chosen()
        note = None
        preset = self.preset or None
        if self.options.strip():
            typed, note = continue_options(self.options)
            fields.update(typed.chosen())
            named = typed.models or named
            preset = typed.preset or preset
        return syntax.Continue(**fields, models=named, preset=preset), note


class ContinueOptionsArgs(Args):
    """``loom/continueOptions``: ``→ continue``'s options as typed so far."""

    options: str = ""


def continue_options(text: str) -> tuple[Any, str | None]:
    """``→ continue``'s options as typed, read as the line ``→ continue OPTIONS`` is: the
    command (its options alone) and how a typo was read, if one was. Anything that line
    would not take is ``✗ INVALID_SYNTAX``, as it is typed in a buffer."""
    from loom.commands import syntax
    from loom.commands.canonical import to_text
    from loom.commands.executor import parse_line_noting, read_as_note
    from loom.commands.lexicon import is_command_line

    options = " ".join(text.splitlines()).strip()  # one line, as typed in a buffer
    if is_command_line(options):
        raise LoomError("INVALID_SYNTAX", "options, not a command",
                        "give the options alone: n:2 temperature:0.7")
    cmd, corrected = parse_line_noting(f"→ continue {options}")
    if isinstance(cmd, syntax.ParseError):
        raise LoomError("INVALID_SYNTAX", cmd.message, cmd.hint)
    if not isinstance(cmd, syntax.Continue):  # (the options read as another command)
        raise LoomError("INVALID_SYNTAX", f'"{options}" are not options of → continue',
                        "→ help continue lists them")
    if cmd.from_ is not None:
        raise LoomError("INVALID_SYNTAX", "Continue continues the end of the path",
                        "to continue from another node, switch there first, or type "
                        f"→ continue from {cmd.from_} on a line of its own")
    return cmd, (read_as_note(to_text(cmd)) if corrected else None)


class FillArgs(UriArgs, Sampling):
    """``loom.fill``: the selection (``line``/``character`` to ``endLine``/``endCharacter``,
    within one node), the model(s), the preset and ``→ fill``'s sampling options."""

    line: int = Field(ge=0)
    character: int = Field(ge=0)
    endLine: int = Field(ge=0)
    endCharacter: int = Field(ge=0)
    model: str | None = None
    models: list[str] | None = None
    preset: str | None = None

    def command(self) -> Any:
        """The ``→ fill`` these arguments ask for (its node and span from the selection)."""
        from loom.commands import syntax

        named = tuple(self.models or ()) or ((self.model,) if self.model else ())
        return syntax.Fill(**self.chosen(), models=named, preset=self.preset or None)


class ModelArgs(UriArgs):
    """``loom.chooseModel``: a model profile for the document's tree (none: the default),
    or, given ``preset``, the sampler preset continue samples with there (``""``: none)."""

    profile: str | None = None
    preset: str | None = None


class AnnotateArgs(NodeArgs):
    text: str | None = None


class SplitArgs(NodeArgs):
    """``loom.split``: the token at ``line``/``character`` (or ``node`` at ``at``), with an
    optional alternative to branch with and whether to continue from it."""

    at: int | None = Field(default=None, ge=0)
    alt: str | None = None
    continue_: bool = Field(default=False, alias="continue")
    n: int | None = Field(default=None, ge=1, le=10)
    tokens: int | None = Field(default=None, ge=1, le=4096)


class AcceptArgs(UriArgs):
    """``loom.acceptSuggestion``: a continuation offered at the end of the buffer (by node,
    else the one the inserted text spells), all of it or its first ``text``."""

    node: str | None = None
    text: str | None = None
    inserted: bool = False  # the editor put the text in the buffer itself


class ToggleArgs(Args):
    on: bool | None = None


class ScoreToggleArgs(UriArgs):
    """``loom.toggleScores``: the document to score (its path), and on or off (unset:
    flip)."""

    on: bool | None = None


class RunArgs(UriArgs):
    line: int = Field(default=0, ge=0)


class OpenArgs(Args):
    tree: str = ""
    node: str | None = None


class AskArgs(UriArgs):
    message: str | None = None


class MaybeUriArgs(Args):
    """A request about a document, or (no ``uri``) about the session: ``loom/status``,
    ``loom.stopCollaborator``."""

    uri: str | None = None


class DoctorParams(Args):
    generate: bool = True  # start the local model and time a short generation


class SaveParams(UriArgs):
    text: str
    reason: Literal["manual", "afterDelay", "focusOut"] | None = None
    #: the human's answer to a save that asked first (its answer's ``data.confirm``)
    confirm: Literal["branch", "replace"] | None = None


class NodeInfoParams(Args):
    tree: str | None = None
    node: str | None = None
    uri: str | None = None
    line: int | None = Field(default=None, ge=0)
    character: int | None = Field(default=None, ge=0)
    # pages of the siblings and children (lookup.PAGE each unless ``limit`` says)
    siblings_offset: int = Field(default=0, ge=0, alias="siblingsOffset")
    children_offset: int = Field(default=0, ge=0, alias="childrenOffset")
    limit: int | None = Field(default=None, ge=0, le=1000)


class NewTreeParams(Args):
    title: str = "Untitled"
    mode: Literal["buffer", "dialogue"] = "buffer"
    text: str = ""


class ImportParams(Args):
    path: str | None = None
    content: str | None = None  # the file's text, read by the client
    name: str | None = None


class ExportParams(Args):
    tree: str = ""
    format: Literal["openloom", "md", "loom", "socketteer", "loomsidian", "miniloom",
                    "tapestry"] = "openloom"
    path: str | None = None
    node: str | None = None


def parse_args(model: type[A], raw: Any, what: str) -> A:
    """``raw`` (a dict, an object pygls made, or None) as ``model``."""
    if isinstance(raw, list):  # commands: the first argument is the object
        raw = raw[0] if raw else None
    raw = {} if raw is None else _as_dict(raw)
    try:
        return model.model_validate(raw)
    except ValidationError as err:
        first = err.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "arguments"
        raise LoomError("INVALID_SYNTAX", f"{what}: {where}: {first['msg']}",
                        f"see docs/lsp.md for the arguments of {what}") from err


def _as_dict(obj: Any) -> Any:
    """pygls hands params of methods it does not know as named tuples: plain data again."""
    if hasattr(obj, "_asdict"):
        return {k: _as_dict(v) for k, v in obj._asdict().items()}
    if isinstance(obj, dict):
        return {k: _as_dict(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_as_dict(v) for v in obj]
    return obj


def answer(result: Result, **fields: Any) -> dict[str, Any]:
    """The one answer shape: ``{ok, message, data}``, a failure's text also as ``error``."""
    out: dict[str, Any] = {"ok": result.ok, "message": result.text, "data": result.data}
    if not result.ok:
        out["error"] = result.text
    out.update(fields)
    return out


def failure(err: LoomError, **fields: Any) -> dict[str, Any]:
    return answer(Result.from_error(err), **fields)
