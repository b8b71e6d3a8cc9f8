"""Parameters declared as frozen dataclasses: the schema is read from the class.

A component's parameters are a ``@dataclass(frozen=True)`` whose fields are declared with
:func:`param`; the annotation gives the kind (``int``, ``float``, ``bool``, ``str``, ``list[int]``,
``list[float]``, ``list``, ``dict``, ``Any``, :data:`Range`), a ``Literal[...]`` the choices and
``| None`` admits null; a field declared with the default :data:`REQUIRED` must be given (its class
is then ``kw_only``, so that it may follow fields with defaults)::

    @dataclass(frozen=True)
    class FedProxParams(ServerParams):
        mu: float = param(0.1, "proximal weight mu", lo=0)

:func:`schema` turns the class into the ``Field`` mapping that validates a scenario, feeds
``netsim list -v`` and writes docs/reference.md; :func:`make_params` builds the typed, frozen
instance an algorithm reads (``self.hp.mu``) from a validated spec.
"""
from __future__ import annotations

import dataclasses
import functools
import types
import typing
from dataclasses import dataclass
from typing import Any, Literal, Mapping, TypeVar, Union

from netsim.schema import REQUIRED, Field

_KINDS = {int: "int", float: "float", bool: "bool", str: "str", dict: "dict", list: "list"}
#: a number, or ``[lo, hi]``: drawn once from U[lo, hi] (a ``Field`` of kind ``range``)
Range = Union[float, list[float]]


@dataclass(frozen=True)
class Params:
    """Base of declared parameters (no parameters of its own)."""


P = TypeVar("P", bound=Params)


def param(default: Any, doc: str, *, lo: float | None = None, hi: float | None = None,
          lo_open: bool = False) -> Any:
    """A dataclass field with its default (:data:`REQUIRED`: none), its doc and its bounds
    (``lo``, ``hi``; ``lo_open``: ``lo`` excluded); a list default is copied for each
    instance."""
    meta = {"param": {"doc": doc, "lo": lo, "hi": hi, "lo_open": lo_open}}
    if default is REQUIRED:
        return dataclasses.field(metadata=meta)
    if isinstance(default, list):
        return dataclasses.field(default_factory=lambda: list(default), metadata=meta)
    return dataclasses.field(default=default, metadata=meta)


def _kind(hint: Any, where: str) -> dict:
    """The ``Field`` keywords (kind, item, choices, nullable) of one annotation."""
    args = typing.get_args(hint)
    nullable = typing.get_origin(hint) in (Union, types.UnionType) and type(None) in args
    if nullable:
        rest = tuple(a for a in args if a is not type(None))
        hint = rest[0] if len(rest) == 1 else Union[rest]
        args = typing.get_args(hint)
    origin = typing.get_origin(hint)
    if hint == Range:
        return {"kind": "range", "nullable": nullable}
    if hint is Any:
        return {"kind": "any", "nullable": nullable}
    if origin is Literal and all(isinstance(a, str) for a in args):
        return {"kind": "str", "choices": args, "nullable": nullable}
    if origin is list and len(args) == 1 and args[0] in (int, float):
        return {"kind": "list", "item": _KINDS[args[0]], "nullable": nullable}
    if hint in _KINDS:
        return {"kind": _KINDS[hint], "nullable": nullable}
    raise TypeError(f"{where}: unsupported parameter type {hint}")


@functools.cache
def schema(cls: type) -> dict[str, Field]:
    """The ``Field`` of every field of ``cls`` (each declared with :func:`param`), in
    declaration order: a base class's first, a field redeclared in a subclass keeps its place."""
    hints = typing.get_type_hints(cls)
    out = {}
    for f in dataclasses.fields(cls):
        where = f"{cls.__name__}.{f.name}"
        if "param" not in f.metadata:
            raise TypeError(f"{where}: declare it with netsim.schema.params.param")
        default = (f.default_factory() if f.default_factory is not dataclasses.MISSING else
                   REQUIRED if f.default is dataclasses.MISSING else f.default)
        out[f.name] = Field(default=default, **f.metadata["param"], **_kind(hints[f.name], where))
    return out


def make_params(cls: type[P], values: Mapping) -> P:
    """The typed parameters ``cls`` of a validated spec (the spec's other keys are ignored)."""
    return cls(**{f.name: values[f.name] for f in dataclasses.fields(cls)})
