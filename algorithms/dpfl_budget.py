"""DPFL's communication budget B_c (Kharrat, Canini, Horváth; docs/specifications/dpfl.md): how a
scenario's budget becomes a peer cap, and the random graph of the Fig. 3 ablation."""
from __future__ import annotations

import math

import numpy as np

from netsim.errors import ConfigError


BUDGET_ALLOWED = "null or inf (no cap), an int >= 1 (peers), or a fraction of N in (0, 1)"


def resolve_budget(value, n: int, path: str) -> int | None:
    """B_c in clients: null/inf -> None, an int as is, a fraction f -> round(f N) >= 1."""
    if value is None or (isinstance(value, str) and value.lower() in ("inf", ".inf")):
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ConfigError(path, value, BUDGET_ALLOWED)
    if math.isinf(value) and value > 0:
        return None
    if 0 < value < 1:
        return max(1, int(math.floor(value * n + 0.5)))
    if value >= 1 and float(value).is_integer():
        return int(value)
    raise ConfigError(path, value, BUDGET_ALLOWED)


def peer_budget(budget, counts_self: bool, n: int, path: str) -> int | None:
    """Most peers a client may aggregate: B_c, or B_c - 1 when B_c counts the client itself."""
    bc = resolve_budget(budget, n, f"{path}.budget")
    if bc is None or not counts_self:
        return bc
    if bc < 2:
        raise ConfigError(f"{path}.budget", budget, "at least 2 clients (B_c counts the "
                          "client itself: budget_counts_self is true)")
    return bc - 1


def random_peers(rng: np.random.Generator, candidates: np.ndarray, cap: int | None) -> np.ndarray:
    """A uniformly random subset of each row of ``candidates``: ``cap`` of them (all when fewer),
    or, with no cap, each candidate independently with probability 1/2."""
    if cap is None:
        return candidates & (rng.random(candidates.shape) < 0.5)
    keys = np.where(candidates, rng.random(candidates.shape), np.inf)
    rank = keys.argsort(1, kind="stable").argsort(1, kind="stable")
    return candidates & (rank < cap)
