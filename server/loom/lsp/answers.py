"""Every handler answers, whatever goes wrong in it: the wrappers ``server.py`` puts around
its registrations.

Editor features (hover, completion, lenses, document sync) answer a default on failure:
an editor asks them again and again, and a message box each time would be worse than an
empty answer. Custom requests and commands answer ``{ok: false, message: "✗ …"}``: bad
arguments and Loom errors as themselves, a database out of reach as such (once told by
the outage, ``features/outage.py``), and anything else as a bug in Loom, logged with its
traceback but never shown as Python's exception text."""

from __future__ import annotations

import asyncio
import inspect
import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from lsprotocol import types as lsp

from loom.errors import LoomError

if TYPE_CHECKING:
    from loom.lsp import args as A
    from loom.lsp.host import ClientHost

# What answering needs (pydantic's argument models, the store's errors, the messages) is
# imported on the first request, not when the server starts (bench/bench_startup.py).

log = logging.getLogger(__name__)

Handler = Callable[..., Any]


def guard(default: Any = None) -> Callable[[Handler], Handler]:
    """Editor features never crash the server: bad input answers ``default`` (and a
    message for Loom errors of actions); bugs are logged."""
    def wrap(fn: Handler) -> Handler:
        if asyncio.iscoroutinefunction(fn):
            async def run_async(ls: Any, *args: Any) -> Any:  # (pygls reads these hints)
                ls.ready()
                try:
                    return await fn(ls, *args)
                except LoomError as err:
                    from loom.render.formats import error as error_text

                    ls.window_show_message(lsp.ShowMessageParams(
                        type=lsp.MessageType.Error,
                        message=error_text(err.code, err.message, err.hint)))
                    return default
                except Exception as err:
                    failed(ls, fn.__name__, err)
                    return default
            run_async.__name__ = fn.__name__
            return run_async

        def run(ls: Any, *args: Any) -> Any:
            ls.ready()
            try:
                return fn(ls, *args)
            except LoomError as err:
                log.info("%s: %s", fn.__name__, err)
                return default
            except Exception as err:
                failed(ls, fn.__name__, err)
                return default
        run.__name__ = fn.__name__
        return run
    return wrap


def failed(ls: ClientHost, what: str, err: Exception) -> None:
    """A feature that failed: the database out of reach (said once, by the outage), or a
    bug (logged with its traceback)."""
    from loom.store.backend import UNREACHABLE, unreachable

    if unreachable(err):
        log.warning("%s: %s", what, UNREACHABLE)
        ls.database_lost()
    else:
        log.exception("%s failed", what)


def bug(what: str) -> dict[str, Any]:
    """A failure that is a bug in Loom: logged with its traceback; the client gets a ``✗``
    answer without Python's exception text."""
    from loom.commands.results import Result
    from loom.lsp.args import answer

    log.exception("%s failed", what)
    return answer(Result.failure("CONFLICT", f"{what} failed inside Loom",
                                 "this is a bug in Loom; the server's log has the details"))


async def answered(name: str, fn: Handler, ls: ClientHost, raw: Any) -> Any:
    """Run a request or command handler at the boundary: typed arguments in, and every
    failure (bad arguments included) an ``{ok: false, message: "✗ …"}`` answer."""
    ls.ready()
    from loom.commands.results import Result
    from loom.lsp.args import answer, failure, parse_args
    from loom.lsp.features.outage import HINT as OUTAGE_HINT
    from loom.store.backend import UNREACHABLE, unreachable

    try:
        out = fn(ls, parse_args(arguments_model(fn), raw, name))
        out = await out if asyncio.iscoroutine(out) else out
        return answer(out) if isinstance(out, Result) else out
    except LoomError as err:
        return failure(err)
    except Exception as err:
        if unreachable(err):  # the database, not a bug in Loom
            failed(ls, name, err)
            return answer(Result.failure("CONFLICT", UNREACHABLE, OUTAGE_HINT))
        return bug(name)


def arguments_model(fn: Handler) -> type[A.Args]:
    """The arguments model a handler declares as the type of its second parameter
    (``def loom_read(ls, a: A.UriArgs)``, ``A`` being ``loom.lsp.args``): read from the
    annotation on its first call, so that neither the registration repeats it nor the
    server's start imports pydantic's models."""
    model = getattr(fn, "_loom_args", None)
    if model is None:
        from loom.lsp import args

        annotation = list(inspect.signature(fn).parameters.values())[1].annotation
        if isinstance(annotation, str):  # (``from __future__ import annotations``)
            prefix, _, name = annotation.partition(".")
            if prefix != "A" or not hasattr(args, name):
                raise TypeError(f"{fn.__name__}: its arguments must be typed A.<model> "
                                f"(a model of loom.lsp.args), not {annotation!r}")
            annotation = getattr(args, name)
        model = fn._loom_args = annotation  # type: ignore[attr-defined]
    return model  # type: ignore[no-any-return]


class Registrar:
    """Registers custom requests and commands on ``server``, each with typed arguments (the
    model its handler's second parameter names) and an answer whatever happens
    (``answered``)."""

    def __init__(self, server: ClientHost) -> None:
        self.server = server

    def request(self, method: str) -> Callable[[Handler], Any]:
        """A custom ``loom/…`` request with typed params."""
        def wrap(fn: Handler) -> Any:
            async def run(ls: Any, params: Any) -> Any:
                return await answered(method, fn, ls, params)
            run.__name__ = fn.__name__
            return self.server.feature(method)(run)
        return wrap

    def command(self, name: str, cancellable: bool = False) -> Callable[[Handler], Any]:
        """A ``workspace/executeCommand`` command; its first argument object is typed. A
        ``cancellable`` command's task is cancelled by ``$/cancelRequest`` (it must handle
        ``CancelledError`` by stopping its work)."""
        def wrap(fn: Handler) -> Any:
            async def run(ls: Any, *raw: Any) -> Any:
                msg_id = ls.protocol.msg_id if cancellable else None
                with ls.cancellable(msg_id, asyncio.current_task()):
                    return await answered(name, fn, ls, list(raw))
            run.__name__ = fn.__name__
            return self.server.command(name)(run)
        return wrap
