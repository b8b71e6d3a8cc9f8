"""Typed, frozen hyper-parameters built from a component's ``Field`` schema.

``make_params("SGP", SGP.fields, spec)`` returns an instance of a frozen dataclass with one
attribute per field (type from the field's kind, default and doc from the field), so algorithm
code reads ``self.hp.loss_recovery`` and a typo is an AttributeError, not a silent KeyError
path. Defaults and docs stay in one place: the schema, which also validates the scenario.
"""
from __future__ import annotations

import dataclasses
from typing import Any, Mapping

from netsim.schema import Field

_TYPES = {"int": int, "float": float, "bool": bool, "str": str, "name": str, "list": list,
          "dict": dict, "range": Any, "any": Any}

#: every algorithm spec also has these (netsim.scenario.config): its registered name and its label
COMMON = {"name": Field("str", "", "registered algorithm name"),
          "label": Field("str", "", "the algorithm's name in the results")}

_CLASSES: dict[tuple, type] = {}


def params_type(name: str, fields: Mapping[str, Field]) -> type:
    """The frozen dataclass ``<name>Params`` of a schema (one per schema, cached)."""
    fields = {**COMMON, **fields}
    key = (name, tuple(fields))
    if key not in _CLASSES:
        spec = [(k, _TYPES.get(f.kind, Any),
                 dataclasses.field(metadata={"doc": f.doc, "kind": f.kind}))
                for k, f in fields.items()]
        _CLASSES[key] = dataclasses.make_dataclass(f"{name}Params", spec, frozen=True)
    return _CLASSES[key]


def make_params(name: str, fields: Mapping[str, Field], values: Mapping) -> Any:
    """The typed parameters of a validated spec (extra keys of the spec are ignored)."""
    cls = params_type(name, fields)
    return cls(**{f.name: values[f.name] for f in dataclasses.fields(cls)})
