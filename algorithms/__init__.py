"""Algorithm registry: one module per algorithm, registered under the name used in scenarios."""
from __future__ import annotations

from netsim.registry import Registry

ALGORITHMS = Registry("algorithm")


def register(name: str):
    """Class decorator registering an Algorithm subclass with its ``fields`` schema."""
    def deco(cls):
        return ALGORITHMS.register(name, fields=cls.fields)(cls)
    return deco


from algorithms import fedavg, local, sgp, dpsgd  # noqa: E402,F401  (registration)
