"""Communities of a collaboration graph against the ground-truth clusters (ARI, NMI).

Communities are found on the undirected graph with weight ``W[i, j] + W[j, i]`` over the kept
edges (a collaboration in either direction ties two clients), by Louvain (default, seeded) or
Clauset–Newman–Moore greedy modularity, both from networkx.
"""
from __future__ import annotations

import networkx as nx
import numpy as np
from sklearn.metrics import adjusted_rand_score, normalized_mutual_info_score

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


def community_scores(labels: np.ndarray, cluster: np.ndarray) -> dict[str, float]:
    """Adjusted Rand index and normalised mutual information of ``labels`` against the
    ground-truth ``cluster`` over the clients that have one (cluster >= 0); nan when none has."""
    cluster = np.asarray(cluster)
    known = cluster >= 0
    if not known.any():
        return {"ari": float("nan"), "nmi": float("nan")}
    return {"ari": float(adjusted_rand_score(cluster[known], labels[known])),
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
