"""Collaboration-graph analyses against hand-computed values."""
import numpy as np
import pytest

from netsim.analysis import collab_graph, edge_precision_recall, link_share, oracle_matrix


def test_oracle_and_precision_recall():
    cluster = np.array([0, 0, 1, 1])
    assert oracle_matrix(cluster).sum() == 4
    W = np.array([[1, .5, .2, 0], [.5, 1, 0, 0], [0, 0, 1, 0], [0, 0, .7, 1.]])
    p, r = edge_precision_recall(W, cluster, threshold=0.1)
    assert p == pytest.approx(3 / 4) and r == pytest.approx(3 / 4)
    g = collab_graph(W, 0.1)
    assert g.has_edge(1, 0) and g.has_edge(2, 0) and not g.has_edge(0, 2)
    assert g[2][3]["weight"] == pytest.approx(0.7)


def test_link_share():
    W = np.array([[1, 1, 1, 0], [1, 1, 0, 0], [0, 0, 1, 1], [0, 0, 1, 1.]])
    benign = np.array([True, True, False, False])
    assert link_share(W, benign, ~benign) == pytest.approx(1 / 3)
    assert link_share(W, ~benign, benign) == 0.0
