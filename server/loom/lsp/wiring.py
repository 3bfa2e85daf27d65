"""The features of ``features/table.py`` built and handed to each other once, when the
server starts. A feature's needs are its constructor's parameters, read from their
annotations (esbonio's ``get_feature`` model):

- ``Host`` is the server (what ``lsp/host.py`` promises the features);
- a feature's class is that feature, built first;
- ``Later[P]`` is a handle to the feature of the parameter's name, called at use time,
  for the features that need each other (``Editing`` runs a save's command lines, and
  ``CommandLines`` commits through ``Editing``). ``P`` is a protocol in the needing
  module, what it uses of the other: the two modules do not import each other, and the
  start checks that the feature has what ``P`` names. Nothing is wired after
  construction;
- anything else is given by name (``publish``, ``progress``, ``on_back``: the server's).

Each feature is built once; one that asks for what it cannot have (an unknown name, a
cycle without ``Later``, a ``Later`` whose feature lacks what its protocol names) stops
the start with a ``TypeError`` that says which."""

from __future__ import annotations

import importlib
import inspect
import typing
from collections.abc import Callable, Mapping
from typing import Any, Generic, TypeVar

from loom.lsp.features.table import TABLE
from loom.lsp.host import Host

T = TypeVar("T")


class Later(Generic[T]):
    """A feature taken when it is used, not when its user is built."""

    def __init__(self, get: Callable[[], T]) -> None:
        self._get = get

    def __call__(self) -> T:
        return self._get()


class FeatureSet:
    """The table's features over one host, each built on first request (``get``)."""

    def __init__(self, host: Any, given: Mapping[str, Any] | None = None,
                 table: Mapping[str, str] = TABLE) -> None:
        self.host = host
        self.given = dict(given or {})
        self.table = dict(table)
        self._classes: dict[str, type] | None = None
        self._made: dict[type, Any] = {}
        self._making: list[type] = []

    def classes(self) -> dict[str, type]:
        """Attribute → class, the modules imported on the first call."""
        if self._classes is None:
            found = {}
            for name, where in self.table.items():
                module, _, cls = where.partition(":")
                found[name] = getattr(importlib.import_module(module), cls)
            self._classes = found
        return self._classes

    def get(self, cls: type[T]) -> T:
        """The feature of class ``cls``, built (with what it needs) if it is not yet."""
        if cls in self._made:
            return self._made[cls]  # type: ignore[no-any-return]
        if cls not in self.classes().values():
            raise TypeError(f"{cls.__name__} is not in the features' table "
                            "(lsp/features/table.py)")
        if cls in self._making:
            circle = " → ".join(c.__name__ for c in [*self._making, cls])
            raise TypeError(f"features need each other to be built: {circle}; "
                            "take one of them as Later[…]")
        self._making.append(cls)
        try:
            made = cls(**self._arguments(cls))
        finally:
            self._making.pop()
        self._made[cls] = made
        return made

    def all(self) -> dict[str, Any]:
        """Every feature of the table, by attribute."""
        return {name: self.get(cls) for name, cls in self.classes().items()}

    def _arguments(self, cls: type) -> dict[str, Any]:
        # the features by name too: a module may import another's class for type
        # checkers only
        namespace: dict[str, Any] = {**{c.__name__: c for c in self.classes().values()},
                                     **vars(inspect.getmodule(cls)), "Host": Host,
                                     "Later": Later}
        out: dict[str, Any] = {}
        for name, param in inspect.signature(cls.__init__).parameters.items():
            if name == "self" or param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
                continue
            out[name] = self._argument(cls, name, _annotation(param.annotation, namespace))
        return out

    def _argument(self, cls: type, name: str, annotation: Any) -> Any:
        if annotation is Host:
            return self.host
        classes = self.classes().values()
        if annotation in classes:
            return self.get(annotation)
        if typing.get_origin(annotation) is Later:
            return self._later(cls, name, *typing.get_args(annotation))
        if name in self.given:
            return self.given[name]
        raise TypeError(f"{cls.__name__} needs {name!r}: no feature, and not given")

    def _later(self, cls: type, name: str, protocol: Any) -> Later[Any]:
        wanted = self.classes().get(name)
        if wanted is None:
            raise TypeError(f"{cls.__name__}({name}: Later[…]): no feature {name!r} in the "
                            "features' table")
        lacking = [m for m in _members(protocol) if not hasattr(wanted, m)]
        if lacking:
            raise TypeError(f"{cls.__name__}({name}) wants {', '.join(lacking)} of "
                            f"{wanted.__name__}, which has no such member")
        return Later(lambda: self.get(wanted))


def _annotation(annotation: Any, namespace: dict[str, Any]) -> Any:
    """A parameter's annotation read in its module (a string: the features' modules
    import ``annotations`` from ``__future__``); None when it names what the module
    imports only for type checkers and is no feature (then it is given by name)."""
    if not isinstance(annotation, str):
        return annotation
    try:
        return eval(annotation, namespace)
    except NameError:
        return None


def _members(protocol: Any) -> list[str]:
    """What a protocol names: its methods and attributes (not the protocol machinery)."""
    if not isinstance(protocol, type):
        return []
    names = {*getattr(protocol, "__annotations__", {}),
             *(n for n in vars(protocol) if not n.startswith("_"))}
    return sorted(names)
