"""Parameters declared as frozen dataclasses (netsim/schema/params.py): the schema read from the
annotations, the typed instance, and every algorithm's ``hp`` annotation naming its ``params``."""
from __future__ import annotations

import dataclasses
import typing
from dataclasses import dataclass
from typing import Any, Literal

import pytest

from algorithms import ALGORITHMS
from netsim.errors import ConfigError
from netsim.schema import REQUIRED, Field, check_section
from netsim.schema.params import Params, Range, make_params, param, schema


@dataclass(frozen=True)
class Base(Params):
    k: int = param(3, "an int", lo=1)
    mode: Literal["a", "b"] = param("a", "a choice")


@dataclass(frozen=True)
class Child(Base):
    rate: float | None = param(None, "a rate", lo=0, lo_open=True)
    steps: list[int] = param([100, 50], "steps", lo=1)
    spec: Any = param(None, "anything")
    mode: Literal["a", "b"] = param("b", "another default")


def test_schema_from_annotations():
    fields = schema(Child)
    assert list(fields) == ["k", "mode", "rate", "steps", "spec"]    # a base's first, in place
    assert fields["k"] == Field("int", 3, "an int", lo=1)
    assert fields["mode"] == Field("str", "b", "another default", choices=("a", "b"))
    assert fields["rate"] == Field("float", None, "a rate", lo=0, lo_open=True, nullable=True)
    assert fields["steps"] == Field("list", [100, 50], "steps", lo=1, item="int")
    assert fields["spec"] == Field("any", None, "anything")
    with pytest.raises(ConfigError, match="one of a, b"):
        check_section("alg", {"mode": "c"}, fields)


def test_typed_instance_from_a_validated_spec():
    spec = check_section("alg", {"k": 2, "label": "x"}, schema(Child), ignore=("label",))
    hp = make_params(Child, spec)
    assert (hp.k, hp.mode, hp.steps) == (2, "b", [100, 50])
    assert Child().steps is not Child().steps                     # a list default is copied
    with pytest.raises(dataclasses.FrozenInstanceError):
        hp.k = 4


@dataclass(frozen=True, kw_only=True)
class Outage(Params):
    kind: Literal["node", "edge"] = param(REQUIRED, "which")
    t0: float = param(0.0, "start", lo=0.0)
    base: Range = param(0.01, "a number or [lo, hi]", lo=0.0)
    nodes: list[int] = param(REQUIRED, "nodes", lo=0)


def test_required_fields_and_ranges():
    """What the network sections declare: fields that must be given (after ones with defaults,
    in a ``kw_only`` class) and numbers or ``[lo, hi]`` ranges."""
    fields = schema(Outage)
    assert fields["kind"] == Field("str", REQUIRED, "which", choices=("node", "edge"))
    assert fields["base"] == Field("range", 0.01, "a number or [lo, hi]", lo=0.0)
    assert fields["nodes"] == Field("list", REQUIRED, "nodes", lo=0, item="int")
    spec = check_section("network.failures.scripted[0]", {"kind": "node", "nodes": [1, 2],
                                                          "base": [0.1, 0.2]}, fields)
    assert spec == {"kind": "node", "nodes": [1, 2], "base": [0.1, 0.2], "t0": 0.0}
    assert make_params(Outage, spec).base == [0.1, 0.2]
    with pytest.raises(ConfigError) as err:
        check_section("network.failures.scripted[0]", {"kind": "node"}, fields)
    assert str(err.value).startswith("network.failures.scripted[0].nodes: got None; allowed: "
                                     "a list of int >= 0 (required)")
    with pytest.raises(ConfigError) as err:
        check_section("x", {"kind": "edge", "nodes": [], "base": [0.2, 0.1]}, fields)
    assert str(err.value).startswith("x.base: got [0.2, 0.1]; allowed: a number or [lo, hi] with "
                                     "lo <= hi, each >= 0.0")


def test_undeclared_or_unsupported_fields_are_refused():
    @dataclass(frozen=True)
    class Plain(Params):
        x: int = 1

    @dataclass(frozen=True)
    class Tuple(Params):
        x: tuple = param((1, 2), "a tuple")

    with pytest.raises(TypeError, match="Plain.x: declare it with"):
        schema(Plain)
    with pytest.raises(TypeError, match="Tuple.x: unsupported parameter type"):
        schema(Tuple)


@pytest.mark.parametrize("name", ALGORITHMS.names())
def test_algorithm_hp_is_its_params(name):
    comp = ALGORITHMS.get(name, "algorithms")
    assert typing.get_type_hints(comp.obj)["hp"] is comp.obj.params
    assert comp.fields == schema(comp.obj.params)
