"""Registries of named components (algorithms, topologies, datasets, partitions, models, ...).

A component spec in a scenario is either a bare name or a mapping ``{name: ..., **params}``;
:meth:`Registry.resolve` validates it against the component's declared fields.
"""
from __future__ import annotations

from typing import Any, Callable, Mapping

from netsim.errors import ConfigError
from netsim.schema import Component, Field, check_section


class Registry:
    """Name -> component with a parameter schema."""

    def __init__(self, kind: str):
        self.kind = kind
        self._items: dict[str, Component] = {}

    def register(self, name: str, fields: Mapping[str, Field] | None = None,
                 doc: str = "") -> Callable[[Any], Any]:
        """Decorator registering ``obj`` under ``name`` with its fields."""
        def deco(obj: Any) -> Any:
            if name in self._items:
                raise ValueError(f"{self.kind} {name!r} registered twice")
            lines = (obj.__doc__ or "").strip().splitlines()
            text = doc or (lines[0] if lines else "")
            self._items[name] = Component(name, obj, dict(fields or {}), text)
            return obj
        return deco

    def names(self) -> list[str]:
        return sorted(self._items)

    def __contains__(self, name: str) -> bool:
        return name in self._items

    def get(self, name: Any, path: str) -> Component:
        """The component called ``name``; ConfigError naming ``path`` and the known names otherwise."""
        if not isinstance(name, str) or name not in self._items:
            raise ConfigError(path, name, f"a {self.kind}: " + ", ".join(self.names()))
        return self._items[name]

    def resolve(self, spec: Any, path: str) -> dict:
        """Validate a spec (name or ``{name: ..., params}``) and return it with defaults filled."""
        if isinstance(spec, str):
            spec = {"name": spec}
        if not isinstance(spec, Mapping) or "name" not in spec:
            raise ConfigError(path, spec, f"a {self.kind} name or a mapping with 'name' "
                              f"({', '.join(self.names())})")
        comp = self.get(spec["name"], f"{path}.name")
        params = {k: v for k, v in spec.items() if k != "name"}
        return {"name": comp.name, **check_section(path, params, comp.fields)}

    def items(self):
        return [self._items[n] for n in self.names()]
