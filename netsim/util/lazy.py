"""Lazy package attributes (PEP 562): ``netsim`` and ``netsim.analysis`` import what a name
needs on its first use, so that ``import netsim`` and ``netsim --help`` load neither torch nor
scikit-learn, pandas and scipy."""
from __future__ import annotations

import importlib
import sys
from typing import Any, Callable


def lazy_getattr(package: str, attributes: dict[str, str]) -> Callable[[str], Any]:
    """A module ``__getattr__`` for ``package``: ``attributes[name]`` is the module that defines
    ``name``; any other name is tried as a submodule (``netsim.plot``). A value found is cached in
    the package, so each name is looked up once."""
    def __getattr__(name: str) -> Any:
        if name in attributes:
            value = getattr(importlib.import_module(attributes[name]), name)
        else:
            try:
                value = importlib.import_module(f"{package}.{name}")
            except ModuleNotFoundError as err:
                if err.name != f"{package}.{name}":     # a module the submodule imports
                    raise
                raise AttributeError(f"module {package!r} has no attribute {name!r}") from None
        setattr(sys.modules[package], name, value)
        return value
    return __getattr__
