"""Algorithm registry: one module per algorithm, registered under the name used in scenarios.

Every module of this package is imported on first use of the package, so adding an algorithm
is adding a module with a ``@register("name")`` class (see docs/adding_an_algorithm.md).
"""
from __future__ import annotations

import importlib
import pkgutil

from netsim.schema.params import schema
from netsim.schema.registry import Registry

ALGORITHMS = Registry("algorithm")


def register(name: str):
    """Class decorator registering an Algorithm subclass with the schema of its ``params``."""
    def deco(cls):
        return ALGORITHMS.register(name, fields=schema(cls.params))(cls)
    return deco


for _mod in sorted(m.name for m in pkgutil.iter_modules(__path__)):
    importlib.import_module(f"{__name__}.{_mod}")
