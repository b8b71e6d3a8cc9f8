"""Graphs over time: joint connectivity of the realised communication graph and stability of
the collaboration graph across evaluations.

``delivered[r, i, j]`` (receiver-major, as in ``links/``) is the edge ``j -> i`` of round r. A
sequence of graphs is *jointly strongly connected over a window* when the union of its edge sets
over the window's rounds is strongly connected (Nedić–Olshevsky's B-strong connectivity: every
window of B consecutive rounds is).
"""
from __future__ import annotations

import numpy as np
from scipy.sparse.csgraph import connected_components

from netsim.analysis.graphs import edges
from netsim.analysis.metrics import asymmetry, density


def strongly_connected(adj: np.ndarray) -> bool:
    """Whether the directed graph of a boolean ``[N, N]`` matrix is strongly connected."""
    n, _ = connected_components(np.asarray(adj, bool), directed=True, connection="strong")
    return n == 1


def union_connected(delivered: np.ndarray, start: int, window: int) -> bool:
    """Is the union of rounds ``start .. start + window - 1`` strongly connected?"""
    return strongly_connected(np.asarray(delivered[start:start + window], bool).any(axis=0))


def connection_ends(delivered: np.ndarray) -> np.ndarray:
    """``end[s]``: the smallest e such that the union of rounds ``s .. e - 1`` is strongly
    connected (``R + 1`` where no e <= R does).

    ``end`` is non-decreasing in s (a union over fewer rounds has fewer edges), so one pass with
    two pointers and an edge-count matrix checks O(R) unions.
    """
    d = np.asarray(delivered, bool)
    R = d.shape[0]
    count = np.zeros(d.shape[1:], int)
    end = np.full(R, R + 1)
    e = 0                                    # rounds s .. e-1 are in ``count``
    for s in range(R):
        while e <= s or (e < R and not strongly_connected(count > 0)):
            count += d[e]
            e += 1
        if strongly_connected(count > 0):
            end[s] = e
        count -= d[s]
    return end


def rounds_to_connect(delivered: np.ndarray) -> int | None:
    """Rounds from round 0 until the union graph is strongly connected (None: never)."""
    end = connection_ends(delivered)
    return int(end[0]) if end[0] <= len(end) else None


def joint_connectivity_window(delivered: np.ndarray) -> int | None:
    """The smallest B such that every window of B consecutive rounds has a strongly connected
    union (None when even the union of all rounds is not)."""
    end = connection_ends(delivered)
    R = end.size
    need = end - np.arange(R)                # rounds needed by the window starting at s
    for B in range(1, R + 1):
        if (need[: R - B + 1] <= B).all():
            return B
    return None


def jaccard(a: np.ndarray, b: np.ndarray) -> float:
    """``|a & b| / |a | b|`` of two edge sets (1 when both are empty)."""
    union = np.logical_or(a, b).sum()
    return float(np.logical_and(a, b).sum() / union) if union else 1.0


def stability(W: np.ndarray, threshold: float = 0.0) -> np.ndarray:
    """Jaccard index of the edge sets of consecutive evaluations ``W[k-1]``, ``W[k]`` ([E-1])."""
    e = [edges(w, threshold) for w in W]
    return np.array([jaccard(a, b) for a, b in zip(e[:-1], e[1:])])


def stabilisation_round(W: np.ndarray, rounds: np.ndarray, threshold: float = 0.0,
                        tol: float = 0.9) -> int | None:
    """The first evaluation round from which every consecutive Jaccard index is >= ``tol``
    (None when the last change is still above tolerance, or fewer than two evaluations)."""
    jac = stability(W, threshold)
    if jac.size == 0 or jac[-1] < tol:
        return None
    bad = np.flatnonzero(jac < tol)
    return int(rounds[bad[-1] + 1]) if bad.size else int(rounds[0])


def link_metrics(delivered: np.ndarray) -> dict[str, float]:
    """Summary of the time-varying communication graph: mean per-round density and asymmetry %
    of the delivered links, rounds to a strongly connected union from round 0 and the joint
    connectivity window B (nan where never)."""
    d = np.asarray(delivered, bool)
    first, window = rounds_to_connect(d), joint_connectivity_window(d)
    asym = [asymmetry(x) for x in d if x.any()]
    return {"link_density": float(np.mean([density(x) for x in d])),
            "link_asymmetry": float(np.mean(asym)) if asym else float("nan"),
            "rounds_to_connect": float("nan") if first is None else float(first),
            "joint_window": float("nan") if window is None else float(window)}
