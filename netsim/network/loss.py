"""Message loss: each message on edge i->j is dropped independently with probability p_ij."""
from __future__ import annotations

from typing import Any

import numpy as np

from netsim.schema import Field, check_section

LOSS_FIELDS = {
    "p": Field("range", 0.0, "drop probability per message; [lo, hi] draws each p_ij once "
                             "from U[lo, hi]", lo=0.0, hi=1.0),
}


def validate_loss(spec: Any, path: str, n: int) -> dict:
    """Validate ``network.loss`` (missing -> no loss); ``n`` is not needed here."""
    return check_section(path, spec, LOSS_FIELDS)


class LossModel:
    """I.i.d. Bernoulli drops with per-edge probability (0 off the base graph)."""

    def __init__(self, spec: dict, adjacency: np.ndarray, rng: np.random.Generator):
        self.rng = rng
        adjacency = np.asarray(adjacency, bool)
        p = spec["p"]
        probs = rng.uniform(p[0], p[1], adjacency.shape) if isinstance(p, list) \
            else np.full(adjacency.shape, float(p))
        self.p = np.where(adjacency, probs, 0.0)

    def lost(self, src: np.ndarray, dst: np.ndarray) -> np.ndarray:
        """bool[m]: whether each message src[k] -> dst[k] is dropped (fresh draw per message)."""
        src, dst = np.asarray(src, int), np.asarray(dst, int)
        return self.rng.random(src.shape) < self.p[src, dst]

    def probability(self) -> np.ndarray:
        """float[n, n]: drop probability of each directed edge."""
        return self.p.copy()


def make_loss(spec: dict, adjacency: np.ndarray, rng: np.random.Generator) -> LossModel:
    """Build the loss model of a validated ``network.loss`` spec over the base ``adjacency``."""
    return LossModel(spec, adjacency, rng)
