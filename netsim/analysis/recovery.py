"""Cluster recovery as an algorithm learns it, with no threshold: how much of each client's
collaboration weight stays in its ground-truth cluster (mass precision) and how well the
communities of the weighted graph match the clusters (community ARI).

Row i of W holds the weights client i gives to the others (:mod:`netsim.analysis.graphs`).
Self-weights are left out of both measures: ``W_ii`` says how much a client keeps of its own
model, not with whom it collaborates. Negative weights count as 0.
"""
from __future__ import annotations

import numpy as np

from netsim.analysis.communities import community_scores, detect_communities
from netsim.analysis.graphs import oracle_matrix


def mass_precision(W: np.ndarray, cluster: np.ndarray) -> float:
    """``mean_i sum_{j in cluster(i), j != i} W_ij / sum_{j != i} W_ij`` over the clients i that
    have a cluster (>= 0) and some weight on others; nan when none has (e.g. W = I)."""
    W = np.clip(np.asarray(W, float), 0.0, None)
    np.fill_diagonal(W, 0.0)
    cluster = np.asarray(cluster)
    total = W.sum(1)
    inside = np.where(oracle_matrix(cluster), W, 0.0).sum(1)
    rows = (cluster >= 0) & (total > 0)
    return float((inside[rows] / total[rows]).mean()) if rows.any() else float("nan")


def community_ari(W: np.ndarray, cluster: np.ndarray, seed: int = 0) -> float:
    """Adjusted Rand index against ``cluster`` of networkx's Louvain communities (``seed``) of
    the undirected graph weighted by ``(W + W^T) / 2`` off the diagonal (the communities of
    ``W + W^T``, which :func:`detect_communities` uses: Louvain's modularity gains do not change
    when every weight is halved)."""
    return community_scores(detect_communities(W, 0.0, "louvain", seed), cluster)["ari"]


def outer_affinity(weights: np.ndarray) -> np.ndarray:
    """The collaboration graph of a mixture of K learners with personal weights ``pi [N, K]``
    (PDBO-MTL's softmax(lambda_i)): ``W_ij = sum_k pi_ik pi_jk``, the probability that clients
    i and j, each drawing a learner from its weights, draw the same one."""
    pi = np.asarray(weights, float)
    return pi @ pi.T


def recovery_scores(W: np.ndarray, cluster: np.ndarray, seed: int = 0) -> dict[str, float]:
    """``mass_precision`` and ``community_ari`` of W against ``cluster`` (Louvain ``seed``: the
    run's seed)."""
    return {"mass_precision": mass_precision(W, cluster),
            "community_ari": community_ari(W, cluster, seed)}
