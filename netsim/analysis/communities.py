"""Communities of a collaboration graph against the ground-truth clusters (ARI, NMI).

Communities are found on the undirected graph with weight ``W[i, j] + W[j, i]`` over the kept
edges (a collaboration in either direction ties two clients), by Louvain (default, seeded) or
Clauset–Newman–Moore greedy modularity, both from networkx. The ARI is computed here (numpy):
the end of every run scores its communities without loading scikit-learn (NMI only).
"""
from __future__ import annotations

import networkx as nx
import numpy as np

from netsim.analysis.graphs import edges

METHODS = ("louvain", "greedy")


def undirected_graph(W: np.ndarray, threshold: float = 0.0) -> nx.Graph:
    """Undirected weighted graph: edge {i, j} of weight ``W[i, j] + W[j, i]`` (kept edges only)."""
    W = np.asarray(W, float)
    e = edges(W, threshold)
    A = np.where(e, W, 0.0)
    S = A + A.T
    g = nx.Graph()
    g.add_nodes_from(range(W.shape[0]))
    i, j = np.nonzero(np.triu(e | e.T, 1))
    g.add_weighted_edges_from(zip(i.tolist(), j.tolist(), S[i, j].tolist()))
    return g


def detect_communities(W: np.ndarray, threshold: float = 0.0, method: str = "louvain",
                       seed: int = 0) -> np.ndarray:
    """Community label of every client (labels numbered by each community's smallest client)."""
    g = undirected_graph(W, threshold)
    if method == "louvain":
        parts = nx.community.louvain_communities(g, weight="weight", seed=seed)
    elif method == "greedy":
        parts = nx.community.greedy_modularity_communities(g, weight="weight")
    else:
        raise ValueError(f"community method {method!r}; allowed: {', '.join(METHODS)}")
    labels = np.empty(g.number_of_nodes(), int)
    for k, part in enumerate(sorted(parts, key=min)):
        labels[list(part)] = k
    return labels


def adjusted_rand(truth: np.ndarray, labels: np.ndarray) -> float:
    """Adjusted Rand index (Hubert & Arabie 1985) from the contingency table ``n_ab``:
    ``(sum C(n_ab, 2) - E) / ((sum_a C(n_a, 2) + sum_b C(n_b, 2)) / 2 - E)`` with
    ``E = sum_a C(n_a, 2) sum_b C(n_b, 2) / C(n, 2)``; 1 where the denominator is 0 (both
    partitions trivial alike), as scikit-learn's ``adjusted_rand_score``."""
    _, a = np.unique(truth, return_inverse=True)
    _, b = np.unique(labels, return_inverse=True)
    table = np.zeros((a.max() + 1, b.max() + 1))
    np.add.at(table, (a.ravel(), b.ravel()), 1.0)
    index, rows, cols = _pairs(table), _pairs(table.sum(1)), _pairs(table.sum(0))
    total = _pairs(np.array([a.size]))
    expected = rows * cols / total if total else 0.0
    top = (rows + cols) / 2
    return 1.0 if top == expected else (index - expected) / (top - expected)


def _pairs(counts: np.ndarray) -> float:
    """``sum C(n, 2)`` over the counts n."""
    return float((counts * (counts - 1) / 2).sum())


def community_scores(labels: np.ndarray, cluster: np.ndarray) -> dict[str, float]:
    """Adjusted Rand index and normalised mutual information of ``labels`` against the
    ground-truth ``cluster`` over the clients that have one (cluster >= 0); nan when none has."""
    from sklearn.metrics import normalized_mutual_info_score

    cluster = np.asarray(cluster)
    known = cluster >= 0
    if not known.any():
        return {"ari": float("nan"), "nmi": float("nan")}
    return {"ari": adjusted_rand(cluster[known], labels[known]),
            "nmi": float(normalized_mutual_info_score(cluster[known], labels[known]))}


def community_analysis(W: np.ndarray, cluster: np.ndarray, threshold: float = 0.0,
                       method: str = "louvain", seed: int = 0) -> dict[str, float]:
    """Communities found in W: how many, their modularity, and ARI / NMI against ``cluster``."""
    labels = detect_communities(W, threshold, method, seed)
    g = undirected_graph(W, threshold)
    parts = [set(np.flatnonzero(labels == k).tolist()) for k in range(labels.max() + 1)]
    mod = (nx.community.modularity(g, parts, weight="weight") if g.size(weight="weight") > 0
           else float("nan"))
    return {"n_communities": int(labels.max() + 1), "modularity": float(mod),
            **community_scores(labels, cluster)}
