"""CoBo's pair sampling and projection (Hashemi, He, Jaggi, NeurIPS 2024;
docs/specifications/cobo.md#update-equations)."""
from __future__ import annotations

import math

import numpy as np


def pair_probability(t: int, n: int, rounds: int, sampling: str, rate: float = 1.0,
                     power: float = 1.0, switch: float = 0.002) -> float:
    """Probability ``p_t`` that an unordered pair updates its weight in round t (Table 1).

    ``constant``: ``rate / n``; ``time``: ``(t + 1)^-power``; ``mixed``: constant for the first
    ``ceil(switch * rounds)`` rounds, then time-dependent; ``all``: 1. Capped at 1.
    """
    if sampling == "all":
        return 1.0
    constant, decay = min(1.0, rate / n), min(1.0, (t + 1.0) ** -power)
    if sampling == "constant":
        return constant
    if sampling == "time":
        return decay
    return constant if t < math.ceil(switch * rounds) else decay


def project_simplex(v: np.ndarray) -> np.ndarray:
    """Euclidean projection of each row of ``v`` onto the probability simplex (sort-based)."""
    u = -np.sort(-v, axis=1)
    css = np.cumsum(u, axis=1) - 1.0
    k = np.arange(1, v.shape[1] + 1)
    r = (u - css / k > 0).sum(axis=1)
    theta = css[np.arange(v.shape[0]), r - 1] / r
    return np.maximum(v - theta[:, None], 0.0)
