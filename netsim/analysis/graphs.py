"""Collaboration graphs from W: edges, the oracle block matrix and how W compares with it.

Convention (DESIGN.md): row i of W holds the weights client i gives to the others, so the
collaboration graph has an edge ``j -> i`` wherever ``W[i, j] > threshold`` (``i != j``).
"""
from __future__ import annotations

import networkx as nx
import numpy as np


def edges(W: np.ndarray, threshold: float = 0.0) -> np.ndarray:
    """Boolean ``[N, N]`` edge matrix ``W[i, j] > threshold`` with the diagonal removed."""
    e = np.asarray(W) > threshold
    np.fill_diagonal(e, False)
    return e


def collab_graph(W: np.ndarray, threshold: float = 0.0) -> nx.DiGraph:
    """networkx DiGraph with an edge ``j -> i`` of weight ``W[i, j]`` for each edge of W."""
    W = np.asarray(W, float)
    g = nx.DiGraph()
    g.add_nodes_from(range(W.shape[0]))
    dst, src = np.nonzero(edges(W, threshold))
    g.add_weighted_edges_from(zip(src.tolist(), dst.tolist(), W[dst, src].tolist()))
    return g


def oracle_matrix(cluster: np.ndarray) -> np.ndarray:
    """Ground-truth block matrix: ``True`` where i and j share a cluster (i != j, cluster >= 0)."""
    c = np.asarray(cluster)
    same = (c[:, None] == c[None, :]) & (c[:, None] >= 0)
    np.fill_diagonal(same, False)
    return same


def edge_precision_recall(W: np.ndarray, cluster: np.ndarray,
                          threshold: float = 0.0) -> tuple[float, float]:
    """Precision and recall of W's edges against the oracle block matrix (nan when undefined)."""
    e, o = edges(W, threshold), oracle_matrix(cluster)
    tp = float((e & o).sum())
    precision = tp / e.sum() if e.sum() else float("nan")
    recall = tp / o.sum() if o.sum() else float("nan")
    return precision, recall


def link_share(W: np.ndarray, rows: np.ndarray, cols: np.ndarray, threshold: float = 0.0) -> float:
    """Share of the edges of the clients in ``rows`` that come from clients in ``cols``.

    E.g. ``link_share(W, benign, malicious)``: of all links benign clients keep, the fraction to
    malicious ones (nan when the ``rows`` clients keep no link).
    """
    e = edges(W, threshold)[np.asarray(rows, bool)]
    total = e.sum()
    return float(e[:, np.asarray(cols, bool)].sum() / total) if total else float("nan")


def group_shares(W: np.ndarray, group, threshold: float = 0.0) -> dict[str, float]:
    """``share_<a>_uses_<b>`` for every ordered pair of the named groups (e.g. ``benign``,
    ``malicious``): of the collaborators clients of group a use, the share in group b."""
    group = np.asarray(group, object)
    names = sorted({g for g in group if isinstance(g, str) and g})
    return {f"share_{a}_uses_{b}": link_share(W, group == a, group == b, threshold)
            for a in names for b in names}
