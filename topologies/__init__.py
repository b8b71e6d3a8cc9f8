"""Communication graphs: a registry of generators returning ``networkx.DiGraph`` on nodes 0..n-1.

Every generator has the signature ``fn(n, rng, **params) -> nx.DiGraph`` (no self loops;
undirected graphs carry both directions) and is registered in :data:`TOPOLOGIES` with its
:class:`~netsim.schema.Field` schema, so ``netsim list topologies`` documents it.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from topologies.generators import CHECKS, TOPOLOGIES, exponential_peer

if TYPE_CHECKING:
    import networkx as nx


def validate_topology(spec: object, path: str, n: int) -> dict:
    """Resolve ``spec`` against :data:`TOPOLOGIES` and check the parameters that depend on ``n``."""
    resolved = TOPOLOGIES.resolve(spec, path)
    params = {k: v for k, v in resolved.items() if k != "name"}
    check = CHECKS.get(resolved["name"])
    if check is not None:
        check(n, path, params)
    return resolved


def build_topology(spec: dict, n: int, rng: np.random.Generator) -> nx.DiGraph:
    """Build the graph of a resolved ``spec`` (``{name: ..., **params}``) on ``n`` nodes."""
    params = {k: v for k, v in spec.items() if k != "name"}
    graph = TOPOLOGIES.get(spec["name"], "network.topology.name").obj(n, rng, **params)
    graph.graph["topology"] = spec["name"]
    return graph


__all__ = ["TOPOLOGIES", "build_topology", "validate_topology", "exponential_peer"]
