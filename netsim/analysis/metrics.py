"""Metrics of one collaboration graph (from W) or one communication graph (from ``delivered``).

Edges follow :func:`netsim.analysis.graphs.edges`: ``e[i, j]`` is the edge ``j -> i`` (client i
uses client j), so the in-degree of i is the row sum and the out-degree of j the column sum.
"""
from __future__ import annotations

import math

import networkx as nx
import numpy as np

from netsim.analysis.graphs import collab_graph, edges


def density(e: np.ndarray) -> float:
    """Share of the ``N (N - 1)`` possible directed edges present (nan for N < 2)."""
    n = e.shape[0]
    return float(e.sum() / (n * (n - 1))) if n > 1 else float("nan")


def reciprocity(e: np.ndarray) -> float:
    """Share of edges whose reverse edge is present too (networkx ``overall_reciprocity``).

    nan for a graph without edges.
    """
    g = collab_graph(e.astype(float), 0.0)
    return float(nx.overall_reciprocity(g)) if g.number_of_edges() else float("nan")


def asymmetry(e: np.ndarray) -> float:
    """Asymmetry percentage (DPFL App. G.4): ``100 (1 - reciprocity)``, the share of edges in %
    whose reverse edge is absent."""
    return 100.0 * (1.0 - reciprocity(e))


def in_degree(e: np.ndarray) -> np.ndarray:
    """Number of clients each client uses (edges into it)."""
    return e.sum(axis=1)


def out_degree(e: np.ndarray) -> np.ndarray:
    """Number of clients that use each client (edges out of it)."""
    return e.sum(axis=0)


def degree_distribution(e: np.ndarray) -> dict[str, list[int]]:
    """Histograms of in- and out-degrees: ``counts[k]`` clients have degree k (k = 0..N-1)."""
    n = e.shape[0]
    return {"in": np.bincount(in_degree(e), minlength=n).tolist(),
            "out": np.bincount(out_degree(e), minlength=n).tolist()}


def components(e: np.ndarray) -> dict[str, float]:
    """Strongly and weakly connected components: how many, the largest, and whether one."""
    g = collab_graph(e.astype(float), 0.0)
    strong = [len(c) for c in nx.strongly_connected_components(g)]
    weak = [len(c) for c in nx.weakly_connected_components(g)]
    return {"n_strong": len(strong), "n_weak": len(weak), "largest_strong": max(strong),
            "largest_weak": max(weak), "strongly_connected": float(len(strong) == 1)}


def mixing_matrix(W: np.ndarray, threshold: float = 0.0) -> np.ndarray:
    """Row-stochastic mixing matrix of W: the kept edges' weights and W's (non-negative)
    diagonal, each row divided by its sum; a client with no weight at all keeps its own model
    (``P[i, i] = 1``)."""
    W = np.asarray(W, float)
    P = np.where(edges(W, threshold), np.clip(W, 0.0, None), 0.0)
    np.fill_diagonal(P, np.clip(np.diag(W), 0.0, None))
    s = P.sum(axis=1)
    empty = s <= 0
    P[empty, empty] = 1.0
    s[empty] = 1.0
    return P / s[:, None]


def spectral(W: np.ndarray, threshold: float = 0.0, tol: float = 1e-9) -> dict[str, float]:
    """Second-largest eigenvalue modulus (SLEM) of the mixing matrix P, spectral gap
    ``1 - SLEM`` and the implied mixing (relaxation) time ``1 / (1 - SLEM)`` rounds — the number
    of mixing steps that shrink the distance to consensus ``||P^t x - x_inf||`` by a factor e
    asymptotically (inf when the gap is 0: P is reducible or periodic)."""
    P = mixing_matrix(W, threshold)
    if P.shape[0] < 2:
        return {"slem": float("nan"), "spectral_gap": float("nan"), "mixing_time": float("nan")}
    moduli = np.sort(np.abs(np.linalg.eigvals(P)))[::-1]
    slem = float(min(moduli[1], 1.0))
    gap = 0.0 if 1.0 - slem < tol else 1.0 - slem
    return {"slem": slem, "spectral_gap": gap, "mixing_time": 1.0 / gap if gap else math.inf}


def graph_metrics(W: np.ndarray, threshold: float = 0.0) -> dict[str, float]:
    """Every scalar metric of the collaboration graph of W (edge ``j -> i`` where
    ``W[i, j] > threshold``): edges, density, sparsity, reciprocity, asymmetry %, degrees,
    components and the spectral quantities of the mixing matrix."""
    e = edges(W, threshold)
    d_in, d_out = in_degree(e), out_degree(e)
    dens = density(e)
    return {"n_edges": int(e.sum()), "density": dens, "sparsity": 1.0 - dens,
            "reciprocity": reciprocity(e), "asymmetry": asymmetry(e),
            "in_degree_mean": float(d_in.mean()), "in_degree_min": int(d_in.min()),
            "in_degree_max": int(d_in.max()), "out_degree_min": int(d_out.min()),
            "out_degree_max": int(d_out.max()), **components(e), **spectral(W, threshold)}
