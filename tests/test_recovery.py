"""Cluster recovery as learned (netsim.analysis.recovery): mass precision and community ARI on
hand-made matrices with hand-computed values, the numpy ARI against scikit-learn's, and the
run table's column."""
import io
import math

import networkx as nx
import numpy as np
import pytest
from sklearn.metrics import adjusted_rand_score

from netsim.analysis import (adjusted_rand, community_ari, mass_precision, outer_affinity,
                             recovery_scores)
from netsim.analysis.summary import print_table


def test_block_diagonal_weights_recover_the_clusters_exactly():
    """Weights only inside the true clusters (any values, any diagonal, one direction enough):
    every row keeps all its weight in its cluster and Louvain finds the clusters."""
    rng = np.random.default_rng(0)
    cluster = np.array([0, 0, 0, 1, 1, 1, 2, 2])
    W = rng.uniform(0.1, 1.0, (8, 8)) * (cluster[:, None] == cluster[None, :])
    W[0, 1] = W[1, 0] = 0.0                     # 0 -- 1 only through 2; still one community
    np.fill_diagonal(W, 5.0)                    # self-weights are left out
    assert recovery_scores(W, cluster, seed=3) == {"mass_precision": 1.0, "community_ari": 1.0}


def test_mass_precision_of_a_known_mixture():
    """clusters {0, 1} {2, 3}; off-diagonal weight in / total per row: .3 / .5, .2 / .4,
    .2 / .6, 1 / 1, so the mean is (3/5 + 1/2 + 1/3 + 1) / 4 = 73/120. A client without a cluster
    is no row of the mean but its weight counts against the others; a row that gives nothing to
    others is left out (W = I: nan)."""
    W = np.array([[.5, .3, .1, .1],
                  [.2, .6, .2, 0.],
                  [0., .4, .4, .2],
                  [0., 0., 1., 0.]])
    assert mass_precision(W, np.array([0, 0, 1, 1])) == pytest.approx(73 / 120)
    # client 3 without a cluster: rows 0-2 are .3 / .5, .2 / .4, 0 / .6
    assert mass_precision(W, np.array([0, 0, 1, -1])) == pytest.approx((3 / 5 + 1 / 2) / 3)
    assert mass_precision(W - 0.6 * np.eye(4), np.array([0, 0, 1, 1])) == pytest.approx(73 / 120)
    assert math.isnan(mass_precision(np.eye(4), np.array([0, 0, 1, 1])))
    negative = W.copy()
    negative[0, 2] = -1.0                      # counts as 0: row 0 is .3 / .4
    assert mass_precision(negative, np.array([0, 0, 1, 1])) == pytest.approx(
        (3 / 4 + 1 / 2 + 1 / 3 + 1) / 4)


def test_community_ari_of_a_known_mixture():
    """Directed pairs 0->1, 2->3, 4->5 (three components: three communities) against clusters
    {0, 1, 2} {3, 4, 5}: contingency [[2, 1, 0], [0, 1, 2]], sum C(n_ab, 2) = 2, rows 3 + 3,
    columns 1 + 1 + 1, E = 6 x 3 / 15 = 1.2, so ARI = (2 - 1.2) / (4.5 - 1.2) = 8/33."""
    W = np.zeros((6, 6))
    W[1, 0] = W[3, 2] = W[5, 4] = 0.7
    cluster = np.array([0, 0, 0, 1, 1, 1])
    assert community_ari(W, cluster, seed=0) == pytest.approx(8 / 33)
    assert adjusted_rand(cluster, np.array([0, 0, 1, 1, 2, 2])) == pytest.approx(8 / 33)
    assert community_ari(np.eye(6), cluster) == 0.0                  # no weight: singletons


def test_community_ari_is_louvain_on_the_symmetrised_weights_with_the_given_seed():
    """The same partition as networkx's louvain_communities on (W + W^T) / 2 built by hand
    (diagonal left out), seed for seed."""
    rng = np.random.default_rng(1)
    cluster = np.repeat([0, 1, 2], 4)
    W = rng.random((12, 12)) * np.where(cluster[:, None] == cluster[None, :], 1.0, 0.4)
    S = (W + W.T) / 2
    for seed in range(5):
        g = nx.Graph()
        g.add_nodes_from(range(12))
        g.add_weighted_edges_from((i, j, S[i, j]) for i in range(12) for j in range(i + 1, 12))
        labels = np.empty(12, int)
        for k, part in enumerate(nx.community.louvain_communities(g, weight="weight",
                                                                  seed=seed)):
            labels[list(part)] = k
        assert community_ari(W, cluster, seed) == pytest.approx(
            adjusted_rand_score(cluster, labels), abs=1e-15)


def test_adjusted_rand_equals_scikit_learn():
    rng = np.random.default_rng(2)
    for _ in range(200):
        n = int(rng.integers(1, 25))
        a, b = rng.integers(0, 4, n), rng.integers(0, 5, n)
        assert adjusted_rand(a, b) == pytest.approx(adjusted_rand_score(a, b), abs=1e-12)
    assert adjusted_rand(np.zeros(5), np.zeros(5)) == adjusted_rand_score(np.zeros(5),
                                                                          np.zeros(5)) == 1.0


def test_outer_affinity_of_mixture_weights():
    """pi = one learner per cluster, then a client split half-half: W = pi pi^T gives rows
    1 / 1.5, 1 / 1.5, .5 / 1.5 (client 2's weight on 3), .5 / .5, mean 2/3."""
    cluster = np.array([0, 0, 1, 1])
    pure = np.array([[1., 0.], [1., 0.], [0., 1.], [0., 1.]])
    assert recovery_scores(outer_affinity(pure), cluster) == {"mass_precision": 1.0,
                                                              "community_ari": 1.0}
    mixed = np.array([[1., 0.], [1., 0.], [.5, .5], [0., 1.]])
    np.testing.assert_allclose(outer_affinity(mixed)[2], [.5, .5, .5, .5])
    assert mass_precision(outer_affinity(mixed), cluster) == pytest.approx(2 / 3)


def test_the_run_table_shows_mass_precision_and_ari_beside_precision_recall():
    seed = {"mean_accuracy": 0.9}
    common = {"seeds": [0], "per_seed": {"0": seed}, "bottom10_accuracy": 0.8,
              "improved_over_local": None, "bytes_sent": 1e6, "sim_time": 1.0, "wall_time": 1.0}
    summary = {"algorithms": {
        "cobo": {**common, "collab_precision": 1.0, "collab_recall": 0.9,
                 "collab_mass_precision": 0.96, "collab_community_ari": 1.0},
        "pdbo_mtl": {**common, "outer_precision": 0.62, "outer_recall": 1.0,
                     "outer_mass_precision": None, "outer_community_ari": 0.5},
        "sgp": {**common, "collab_precision": 0.25, "collab_mass_precision": 0.25}}}
    out = io.StringIO()
    print_table(summary, out)
    lines = out.getvalue().splitlines()
    assert "clusters P/R   mass/ARI" in lines[0]
    row = {line.split()[0]: line.split() for line in lines if line.startswith("  ")}
    assert row["cobo"][-5:-3] == ["1.00/0.90", "0.96/1.00"]
    assert row["pdbo_mtl"][-5:-3] == ["0.62/1.00", "-/0.50"]
    assert row["sgp"] == ["sgp", "0.9000", "0.8000", "1.00", "1.00", "1.0"]  # decentralised
