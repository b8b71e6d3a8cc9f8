"""Utilities layer: the schema of scenario sections: fields with types, ranges, choices, defaults.

Configuration is data: each component (dataset, partition, model, topology, link model,
algorithm, ...) declares its parameters as ``Field`` objects, and :func:`check_section`
validates a YAML mapping against them, filling defaults and raising :class:`ConfigError`
that names the field, the value and what is allowed. Beside it: parameters declared as frozen
dataclasses whose fields are read from the class (:mod:`netsim.schema.params`) and the
registries of named components (:mod:`netsim.schema.registry`).
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass, field as dc_field
from typing import Any, Mapping

from netsim.errors import ConfigError

REQUIRED = object()

_KINDS = ("int", "float", "bool", "str", "name", "list", "dict", "range", "any")

#: a ``name``: becomes a file or folder name, so no separators, no ``..``, not hidden, not empty,
#: and short enough that every file name made from it stays under the file system's 255 bytes
MAX_NAME = 100
SAFE_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9._+-]{0,%d}" % (MAX_NAME - 1))
SAFE_NAME_TEXT = (f"a name of at most {MAX_NAME} letters, digits and . _ + - (starting with a "
                  "letter, digit or _, without '..')")


def is_safe_name(value: Any) -> bool:
    """True for a string usable as one file or folder name inside the results folder."""
    return isinstance(value, str) and SAFE_NAME.fullmatch(value) is not None and ".." not in value


@dataclass(frozen=True)
class Field:
    """One parameter.

    kind: ``int``, ``float``, ``bool``, ``str``, ``name`` (a string that becomes a file name:
    :data:`SAFE_NAME_TEXT`), ``list``, ``dict``, ``any`` or ``range`` (a float, or ``[lo, hi]``
    meaning "drawn once from U[lo, hi]"; numbers are finite: NaN and inf are refused, null
    stands for "unbounded" where a field allows it); ``lo``/``hi`` bound numbers
    (and both ends of a range, and each item of a numeric list); ``choices`` restricts strings;
    ``item`` is the kind of list items; ``nullable`` admits ``null``.
    """

    kind: str
    default: Any = REQUIRED
    doc: str = ""
    lo: float | None = None
    hi: float | None = None
    choices: tuple | None = None
    item: str | None = None
    nullable: bool = False
    lo_open: bool = False

    def __post_init__(self):
        assert self.kind in _KINDS, self.kind

    def allowed(self) -> str:
        """Human description of the admissible values."""
        if self.choices:
            text = "one of " + ", ".join(map(str, self.choices))
        elif self.kind == "range":
            each = f", each{self._bounds()}" if self._bounds() else ""
            text = f"a number or [lo, hi] with lo <= hi{each}"
        elif self.kind == "any":
            text = "any value"
        elif self.kind == "name":
            text = SAFE_NAME_TEXT
        elif self.kind == "list":
            text = f"a list{' of ' + self.item if self.item else ''}{self._bounds()}"
        else:
            text = f"{'an' if self.kind == 'int' else 'a'} {self.kind}{self._bounds()}"
        return text + (" or null" if self.nullable else "")

    def _bounds(self) -> str:
        if self.lo is None and self.hi is None:
            return ""
        if self.hi is None:
            return f" {'>' if self.lo_open else '>='} {self.lo}"
        if self.lo is None:
            return f" <= {self.hi}"
        return f" in {'(' if self.lo_open else '['}{self.lo}, {self.hi}]"

    def check(self, path: str, value: Any) -> Any:
        """Validate and normalise one value; raise ConfigError otherwise."""
        if value is None:
            if self.nullable or self.default is None:    # a null default is always admissible
                return None
            raise ConfigError(path, value, self.allowed())
        bad = ConfigError(path, value, self.allowed())
        k = self.kind
        if k in ("int", "float", "range"):
            value = _number_text(value)
            if any(isinstance(v, float) and not math.isfinite(v)
                   for v in (value if isinstance(value, (list, tuple)) else [value])):
                raise ConfigError(path, value, self.allowed(), "NaN and infinities are refused")
        if k == "any":
            return value
        if k == "bool":
            if not isinstance(value, bool):
                raise bad
            return value
        if k == "int":
            if isinstance(value, bool) or not isinstance(value, int):
                if isinstance(value, float) and value.is_integer():
                    value = int(value)
                else:
                    raise bad
            self._check_bounds(value, bad)
            return value
        if k == "float":
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                raise bad
            value = float(value)
            self._check_bounds(value, bad)
            return value
        if k == "str":
            if not isinstance(value, str) or (self.choices and value not in self.choices):
                raise bad
            return value
        if k == "name":
            if not is_safe_name(value):
                raise bad
            return value
        if k == "range":
            if isinstance(value, (int, float)) and not isinstance(value, bool):
                self._check_bounds(float(value), bad)
                return float(value)
            if (isinstance(value, (list, tuple)) and len(value) == 2
                    and all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in value)
                    and value[0] <= value[1]):
                for v in value:
                    self._check_bounds(float(v), bad)
                return [float(v) for v in value]
            raise bad
        if k == "list":
            if not isinstance(value, (list, tuple)):
                raise bad
            out = list(value)
            if self.item:
                sub = Field(self.item, lo=self.lo, hi=self.hi, choices=self.choices)
                out = [sub.check(f"{path}[{i}]", v) for i, v in enumerate(out)]
            return out
        if k == "dict":
            if not isinstance(value, Mapping):
                raise bad
            return dict(value)
        raise AssertionError(k)

    def _check_bounds(self, v: float, bad: ConfigError) -> None:
        if self.lo is not None and (v < self.lo or (self.lo_open and v == self.lo)):
            raise bad
        if self.hi is not None and v > self.hi:
            raise bad
        if self.choices and v not in self.choices:
            raise bad


def _number_text(value: Any) -> Any:
    """YAML 1.1 reads ``1e7`` and ``1.0e7`` as strings; accept them (and lists of them) as numbers."""
    if isinstance(value, str):
        try:
            num = float(value)
        except ValueError:
            return value
        return int(num) if num.is_integer() and "e" not in value.lower() and "." not in value else num
    if isinstance(value, (list, tuple)):
        return [_number_text(v) for v in value]
    return value


def check_section(path: str, data: Any, fields: Mapping[str, Field],
                  ignore: tuple[str, ...] = ()) -> dict:
    """Validate mapping ``data`` at ``path`` against ``fields``; return it with defaults filled.

    Unknown keys and missing required keys raise ConfigError naming the allowed keys.
    """
    if data is None:
        data = {}
    if not isinstance(data, Mapping):
        raise ConfigError(path, data, "a mapping with keys " + ", ".join(fields))
    out = {}
    for key, value in data.items():
        if key in ignore:
            out[key] = value
            continue
        if key not in fields:
            raise ConfigError(f"{path}.{key}" if path else key, value,
                              "no such key; known keys: " + (", ".join(fields) or "none"))
        out[key] = fields[key].check(f"{path}.{key}" if path else key, value)
    for key, f in fields.items():
        if key not in out:
            if f.default is REQUIRED:
                raise ConfigError(f"{path}.{key}" if path else key, None,
                                  f.allowed() + " (required)")
            out[key] = f.default
    return out


def describe(fields: Mapping[str, Field]) -> list[str]:
    """One line per field for ``netsim list``: name, default, allowed values, doc."""
    lines = []
    for key, f in fields.items():
        default = "required" if f.default is REQUIRED else f"default {f.default!r}"
        lines.append(f"{key}: {f.allowed()}; {default}" + (f" — {f.doc}" if f.doc else ""))
    return lines


@dataclass
class Component:
    """A registered, named building block with its parameter schema."""

    name: str
    obj: Any
    fields: dict[str, Field] = dc_field(default_factory=dict)
    doc: str = ""
