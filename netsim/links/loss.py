"""Message loss: each message on edge i->j is dropped independently with probability p_ij."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from netsim.links.draws import UniformAt
from netsim.links.edges import Edges
from netsim.schema import check_section
from netsim.schema.params import Params, Range, param, schema


@dataclass(frozen=True)
class LossParams(Params):
    """The ``network.loss`` section."""

    p: Range = param(0.0, "drop probability per message; [lo, hi] draws each p_ij once from "
                          "U[lo, hi]", lo=0.0, hi=1.0)


def validate_loss(spec: Any, path: str, n: int) -> dict:
    """Validate ``network.loss`` (missing -> no loss); ``n`` is not needed here."""
    return check_section(path, spec, schema(LossParams))


class LossModel:
    """I.i.d. Bernoulli drops with per-edge probability, over the base graph's edges; a range's
    p_ij are those a uniform ``[src, dst]`` matrix draw has on the edges."""

    def __init__(self, spec: dict, adjacency: np.ndarray | Edges, rng: np.random.Generator):
        self.rng = rng
        edges = Edges.coerce(adjacency)
        p = spec["p"]
        self.p = UniformAt(edges.n ** 2, edges.positions()).uniform(rng, p[0], p[1]) \
            if isinstance(p, list) else np.full(len(edges), float(p))

    def lost(self, edge: np.ndarray) -> np.ndarray:
        """bool[m]: whether each message on ``edge[k]`` (edge ids) is dropped (fresh draw per
        message)."""
        edge = np.asarray(edge, int)
        return self.rng.random(edge.shape) < self.p[edge]

    def probability(self) -> np.ndarray:
        """float[E]: drop probability of each edge."""
        return self.p.copy()


def make_loss(spec: dict, adjacency: np.ndarray | Edges, rng: np.random.Generator) -> LossModel:
    """Build the loss model of a validated ``network.loss`` spec over the base graph (edges or
    ``[src, dst]``)."""
    return LossModel(spec, adjacency, rng)
