"""Collaboration graphs from W: edges, the oracle block matrix and how W compares with it.

Convention (docs/results_format.md): row i of W holds the weights client i gives to the
others, so the collaboration graph has an edge ``j -> i`` wherever ``W[i, j] > threshold``
(``i != j``).
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


#: cluster recovery (the printed run table, ``netsim analyze --relative``): an edge is a weight
#: above this fraction of the matrix's largest off-diagonal weight
RECOVERY_FRACTION = 0.5


def largest_off_diagonal(W: np.ndarray) -> float:
    """The largest weight ``W[i, j]``, ``i != j`` (0 for fewer than two clients)."""
    W = np.asarray(W, float)
    if W.shape[0] < 2:
        return 0.0
    return float(W[~np.eye(W.shape[0], dtype=bool)].max())


def relative(W: np.ndarray) -> np.ndarray:
    """W (or each matrix of a stack ``[E, N, N]``) divided by its largest off-diagonal weight, so
    that a threshold T keeps the weights above T times that weight (unchanged where it is <= 0)."""
    W = np.asarray(W, float)
    if W.ndim == 3:
        return np.stack([relative(w) for w in W]) if len(W) else W
    top = largest_off_diagonal(W)
    return W / top if top > 0 else W


def cluster_recovery(W: np.ndarray, cluster: np.ndarray,
                     fraction: float = RECOVERY_FRACTION) -> tuple[float, float]:
    """Precision and recall against the same-cluster pairs of the edges whose weight is above
    ``fraction`` of W's largest off-diagonal weight (nan when undefined)."""
    return edge_precision_recall(relative(W), cluster, fraction)


def dominant_pairs(weights: np.ndarray) -> np.ndarray:
    """``[N, N]`` pairs of clients whose largest mixture weight is on the same component (e.g.
    PDBO-MTL's learner), from ``weights [N, K]``; the diagonal is True (``edges`` removes it)."""
    top = np.asarray(weights).argmax(1)
    return top[:, None] == top[None, :]


def outer_analysis(weights: np.ndarray, cluster: np.ndarray) -> dict:
    """What a mixture of K learners with personal weights learned (PDBO-MTL's softmax(lambda_i),
    ``outer/`` arrays ``weights [S, N, K]``), at the last outer step: ``outer_precision`` /
    ``outer_recall`` of the pairs of clients whose largest weight is on the same learner against
    the same-cluster pairs, ``outer_max_weight`` (mean over clients of the largest weight) and
    ``outer_learners`` (learners that are some client's largest)."""
    w = np.asarray(weights, float)[-1]
    precision, recall = edge_precision_recall(dominant_pairs(w).astype(float), cluster, 0.5)
    return {"outer_precision": precision, "outer_recall": recall,
            "outer_max_weight": float(w.max(1).mean()),
            "outer_learners": float(np.unique(w.argmax(1)).size)}


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
