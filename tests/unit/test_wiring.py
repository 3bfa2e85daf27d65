"""The features' table resolved at start (``lsp/wiring.py``): what each constructor asks
for is what it gets, each feature once, and a table that cannot be resolved says why."""

from __future__ import annotations

import subprocess
import sys
import types
from collections.abc import Iterator
from pathlib import Path
from typing import Protocol

import pytest

from loom.lsp.features.table import TABLE
from loom.lsp.host import Host
from loom.lsp.wiring import FeatureSet, Later
from tests.unit.fake_host import features


def test_every_feature_of_the_table_is_built_once_over_one_host(tmp_path: Path) -> None:
    f = features(tmp_path / "loom.db")
    built = f.wired.all()
    assert set(built) == set(TABLE)
    assert built["editing"] is f.editing and built["generation"] is f.generation
    # what each was handed is the table's one object of that kind, never a second
    assert built["generation"].editing is built["editing"]
    assert built["navigation"].moves is built["moves"] is built["editing"].moves
    assert built["library"].navigation is built["navigation"]
    assert built["sync"].outage is built["outage"]
    assert built["sync"].collaborator is built["collaborator"]
    assert all(getattr(feature, "host", f.host) is f.host for feature in built.values())


def test_a_later_handle_is_the_feature_of_its_name(tmp_path: Path) -> None:
    built = features(tmp_path / "loom.db").wired.all()
    assert built["editing"].command_lines() is built["command_lines"]
    assert built["editing"].scoring() is built["scoring"]
    assert built["moves"].navigation() is built["navigation"]
    assert built["collaborator"].sync() is built["sync"]


def test_the_given_values_reach_the_constructors_that_name_them(tmp_path: Path) -> None:
    f = features(tmp_path / "loom.db")
    built = f.wired.all()
    assert built["outage"].on_back == f.host.database_back
    assert built["diagnostics"]._publish == f.published.append


# ── a made-up table, for what the real one must never do ──
class _Follows(Protocol):
    def follow(self) -> None: ...


class _Flies(Protocol):
    def fly(self) -> None: ...


class Alpha:
    def __init__(self, host: Host, beta: Beta) -> None:
        self.host, self.beta = host, beta


class Beta:
    def __init__(self, alpha: Alpha) -> None:
        self.alpha = alpha


class Gamma:
    def __init__(self, delta: Later[_Follows], colour: str) -> None:
        self.delta, self.colour = delta, colour


class Delta:
    def __init__(self, gamma: Gamma) -> None:
        self.gamma = gamma

    def follow(self) -> None: ...


class Wingless:
    def __init__(self, delta: Later[_Flies]) -> None:
        self.delta = delta


@pytest.fixture
def made_up() -> Iterator[types.ModuleType]:
    module = types.ModuleType("made_up_features")
    for cls in (Alpha, Beta, Gamma, Delta, Wingless):
        setattr(module, cls.__name__, cls)
        cls.__module__ = module.__name__
    module._Follows, module._Flies = _Follows, _Flies
    sys.modules[module.__name__] = module
    yield module
    del sys.modules[module.__name__]


def _table(*names: str) -> dict[str, str]:
    return {name.lower(): f"made_up_features:{name}" for name in names}


def test_features_that_need_each_other_to_be_built_are_refused(made_up) -> None:
    wired = FeatureSet(object(), table=_table("Alpha", "Beta"))
    with pytest.raises(TypeError, match=r"Alpha → Beta → Alpha; take one of them as Later"):
        wired.all()


def test_a_later_handle_breaks_the_circle_and_given_values_fill_the_rest(made_up) -> None:
    wired = FeatureSet(object(), {"colour": "teal"}, table=_table("Gamma", "Delta"))
    built = wired.all()
    assert built["delta"].gamma is built["gamma"] and built["gamma"].colour == "teal"
    assert built["gamma"].delta() is built["delta"]


def test_what_is_neither_a_feature_nor_given_is_named(made_up) -> None:
    with pytest.raises(TypeError, match=r"Gamma needs 'colour': no feature, and not given"):
        FeatureSet(object(), table=_table("Gamma", "Delta")).all()


def test_a_later_handle_to_a_feature_lacking_its_protocol_is_refused(made_up) -> None:
    with pytest.raises(TypeError, match=r"Wingless\(delta\) wants fly of Delta"):
        FeatureSet(object(), {"colour": "x"},
                   table=_table("Gamma", "Delta", "Wingless")).all()


def test_a_later_handle_to_no_feature_of_that_name_is_refused(made_up) -> None:
    with pytest.raises(TypeError, match=r"no feature 'delta' in the features' table"):
        FeatureSet(object(), table=_table("Wingless")).all()


def test_a_class_outside_the_table_is_no_feature(made_up) -> None:
    with pytest.raises(TypeError, match=r"Beta is not in the features' table"):
        FeatureSet(object(), table=_table("Gamma")).get(Beta)


def test_the_server_reads_the_table_without_importing_a_feature() -> None:
    """The table is names and paths: the server starts (and answers ``initialize``)
    before the features' modules are imported (bench/bench_startup.py)."""
    probe = ("import sys, loom.lsp.server as s\n"
             "print(sorted(s.FEATURES) == sorted(s.TABLE), sorted(m for m in sys.modules "
             "if m.startswith('loom.lsp.features.') or m == 'loom.lsp.wiring'))\n")
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                         check=True)
    assert out.stdout.split() == ["True", "['loom.lsp.features.table']"]
