"""CoBo (docs/specifications/cobo.md): closed forms of eq. (1)/(2), the quadratic cluster
example (paper Example 2), pair updates over lossy links, staleness, and the rotated-digits data."""
from __future__ import annotations

import numpy as np
import pytest
import torch

import netsim.data.rotations  # noqa: F401  (registers the rotated dataset and partition)
from algorithms.cobo_weights import pair_probability, project_simplex
from netsim import Scenario, run
from netsim.analysis.graphs import edge_precision_recall, oracle_matrix
from netsim.data import build_client_data, load_dataset
from netsim.data.rotations import rotate_images
from netsim.errors import ConfigError

from helpers import DIGITS, QUAD, build, play, quad_truth, spy_commits


# ------------------------------------------------------------------ pure pieces
def test_pair_probability_schedules():
    assert pair_probability(5, 8, 100, "constant") == pytest.approx(1 / 8)
    assert pair_probability(5, 8, 100, "constant", rate=2) == pytest.approx(1 / 4)
    assert pair_probability(0, 8, 100, "time") == 1.0
    assert pair_probability(9, 8, 100, "time") == pytest.approx(1 / 10)
    assert pair_probability(15, 8, 100, "time", power=0.5) == pytest.approx(1 / 4)
    # mixed: constant for ceil(0.1 * 100) = 10 rounds, then (t + 1)^-1
    assert pair_probability(9, 8, 100, "mixed", switch=0.1) == pytest.approx(1 / 8)
    assert pair_probability(10, 8, 100, "mixed", switch=0.1) == pytest.approx(1 / 11)
    assert pair_probability(50, 8, 100, "all") == 1.0
    assert pair_probability(0, 2, 100, "constant", rate=4) == 1.0


def test_project_simplex_hand_cases_and_properties():
    np.testing.assert_allclose(project_simplex(np.array([[0.5, 0.5, 0.0]])), [[0.5, 0.5, 0.0]])
    # (2, 0, 0) -> (1, 0, 0); (1, 1, -1) -> (0.5, 0.5, 0); (0.4, 0.3, 0.5) + shift -> on simplex
    np.testing.assert_allclose(project_simplex(np.array([[2.0, 0, 0], [1, 1, -1]])),
                               [[1, 0, 0], [0.5, 0.5, 0]])
    np.testing.assert_allclose(project_simplex(np.array([[0.4, 0.3, 0.5]])),
                               [[0.4, 0.3, 0.5]] - np.array(0.2 / 3), atol=1e-12)
    v = np.random.default_rng(0).normal(size=(50, 7))
    p = project_simplex(v)
    assert (p >= 0).all()
    np.testing.assert_allclose(p.sum(1), 1.0)
    np.testing.assert_allclose(project_simplex(p), p, atol=1e-12)
    # optimality: for any simplex point q, <v - p, q - p> <= 0
    q = project_simplex(np.random.default_rng(1).normal(size=(50, 7)))
    assert (((v - p) * (q - p)).sum(1) <= 1e-9).all()


# ------------------------------------------------------------------ eq. (1)/(2) by hand
def _hand_rounds(mu, a, rounds, lr, rho, gamma):
    """Alg. 1 with full gradients, all pairs, box domain: returns (W, X)."""
    n = len(a)
    x, w = np.zeros_like(mu), np.ones((n, n))
    for _ in range(rounds):
        z = 0.5 * (x[:, None] + x[None, :])                      # z[i, j]
        h = a[:, None, None] * (z - mu[:, None])                  # grad f_i(z_ij)
        ip = np.einsum("ijd,jid->ij", h, h)                       # <grad f_i(z_ij), grad f_j(z_ij)>
        off = ~np.eye(n, dtype=bool)
        w = np.where(off, np.clip(w + gamma * ip, 0, 1), w)
        pen = (np.where(off, w, 0)[:, :, None] * (x[:, None] - x[None, :])).sum(1)
        x = x - lr * (a[:, None] * (x - mu) + rho * pen)
    return w, x


def test_first_rounds_match_eq_1_and_2_by_hand():
    alg = build(QUAD)
    mu, a = quad_truth(alg)
    play(alg, range(3))
    w, x = _hand_rounds(mu, a, 3, lr=0.1, rho=1.0, gamma=0.1)
    off = ~np.eye(alg.n, dtype=bool)
    np.testing.assert_allclose(alg.W[off], w[off], atol=1e-5)
    np.testing.assert_allclose(alg.bank.flat.double().numpy(), x, atol=1e-5)
    assert alg.W[off].min() < 1.0       # the hand case does move some weights


def test_x_then_w_skips_the_first_weight_update():
    alg = build(QUAD, {"algorithms.cobo.order": "x_then_w"})
    first = play(alg, range(1))[0]
    assert (alg.W == 1.0).all() and first.extras["pair_updates"] == 0
    assert play(alg, range(1, 2))[0].extras["pair_updates"] == 15


def test_ema_gradient_first_step_is_the_raw_gradient_then_averages():
    alg = build(QUAD, {"algorithms.cobo.gradient": "ema", "algorithms.cobo.rho": 0.0})
    mu, a = quad_truth(alg)
    play(alg, range(1))
    x1 = 0.1 * a[:, None] * mu                                    # m = g = -a mu at x = 0
    np.testing.assert_allclose(alg.bank.flat.double().numpy(), x1, atol=1e-6)
    play(alg, range(1, 2))
    m = 0.9 * (-a[:, None] * mu) + 0.1 * a[:, None] * (x1 - mu)
    np.testing.assert_allclose(alg.bank.flat.double().numpy(), x1 - 0.1 * m, atol=1e-6)


def test_quadratic_clusters_converge_to_oracle_w_and_cluster_optima():
    """Done-when: full gradients, all pairs -> W = oracle block matrix, consensus at mu_k."""
    alg = build(QUAD, {"schedule.rounds": 300})
    mu, _ = quad_truth(alg)
    play(alg, range(300))
    W = alg.W.copy()
    np.fill_diagonal(W, 0.0)
    np.testing.assert_array_equal(W, oracle_matrix(alg.data.cluster).astype(float))
    assert np.abs(alg.bank.flat.double().numpy() - mu).max() < 1e-4
    assert edge_precision_recall(W, alg.data.cluster) == (1.0, 1.0)


# ------------------------------------------------------------------ over the network
def test_pair_updates_need_both_gradients_and_penalty_uses_available_copies():
    alg = build(DIGITS)
    got = []
    inner = alg.exchange

    def spy(request, nbytes, **kw):
        got.append(inner(request, nbytes, **kw))
        return got[-1]

    alg.exchange = spy
    pairs = spy_commits(alg)
    one_sided = 0
    for t in range(12):
        before, start = alg.W.copy(), len(got)
        report = play(alg, range(t, t + 1))[0]
        models = got[start]
        a, b = pairs[-1]
        assert report.extras["pair_updates"] == a.size
        np.testing.assert_array_equal(report.links, models.edges.key[models.per_edge["delivered"]])
        changed = np.argwhere(alg.W != before)
        updated = set(zip(a, b)) | set(zip(b, a))
        assert all((i, j) in updated for i, j in changed)
        if len(got) > start + 1:                       # a gradient exchange took place
            grads = got[start + 1]
            both = grads.delivered & grads.delivered.T & models.delivered & models.delivered.T
            assert all(both[i, j] for i, j in zip(a, b))
            one_sided += int((grads.delivered ^ grads.delivered.T).sum() // 2)
        else:
            assert a.size == 0
        np.testing.assert_array_equal(alg.W, alg.W.T)
        eff = np.where(models.available, alg.W, 0.0)
        np.fill_diagonal(eff, 0.0)
        np.testing.assert_array_equal(report.effective, eff)
    assert one_sided > 0 and sum(a.size for a, _ in pairs) > 0


def test_stale_copies_are_used_up_to_the_cap():
    over = {"network.policy": {"name": "wait_all", "max_staleness": 2},
            "network.links.p": 0.3}
    alg = build(DIGITS, over)
    stale_used = 0
    inner = alg.exchange

    def spy(request, nbytes, **kw):
        nonlocal stale_used
        r = inner(request, nbytes, **kw)
        stale_used += int(((r.staleness > 0) & (alg.W > 0) & ~np.eye(alg.n, dtype=bool)).sum())
        assert r.staleness.max() <= 2
        return r

    alg.exchange = spy
    play(alg, range(8))
    assert stale_used > 0 and len(alg.net.store.posted) <= 3      # rows of usable copies
    assert torch.isfinite(alg.bank.flat).all()


def test_simplex_rows_stay_on_the_simplex():
    alg = build(DIGITS, {"algorithms.cobo.domain": "simplex", "network.links": "always",
                         "algorithms.cobo.gamma": 5.0})
    np.testing.assert_allclose(alg.W, (1 - np.eye(6)) / 5)
    play(alg, range(6))
    assert (alg.W >= 0).all()
    np.testing.assert_allclose(alg.W.sum(1), 1.0)
    assert not np.allclose(alg.W, alg.W.T)       # rows are projected independently


def test_run_writes_results_and_survives_rare_links(tmp_path):
    sc = Scenario(DIGITS).with_overrides({"network.links.p": 0.05,
                                          "algorithms": [{"name": "cobo", "sampling": "mixed"}]})
    res = run(sc, out=tmp_path, quiet=True)
    m = res.metrics
    assert np.isfinite(m["loss"]).all()
    w = res.arrays("collab", "cobo", 0)
    assert w["W"].shape == (4, 6, 6) and list(w["rounds"]) == [0, 4, 8, 12]
    eff = res.arrays("effective", "cobo", 0)
    assert eff["W"].shape == (3, 6, 6) and eff["row_sum"].shape == (12, 6)
    assert res.arrays("links", "cobo", 0)["delivered"].shape == (12, 6, 6)


@pytest.mark.parametrize("over, field", [
    ({"network.policy": {"name": "async"}}, "algorithms[0].policy.name"),
    ({"algorithms.cobo.gradient": "ema", "train.momentum": 0.5}, "algorithms[0].train.momentum"),
    ({"algorithms.cobo.rho": 2.5}, "algorithms[0].rho"),
])
def test_config_errors(over, field):
    with pytest.raises(ConfigError) as e:
        Scenario(QUAD).with_overrides(over).resolve()
    assert e.value.field == field


# ------------------------------------------------------------------ rotated digits (Figure 4)
def test_rotations_partition_gives_each_cluster_one_angle():
    data = build_client_data({"dataset": {"name": "rotated", "angles": [0, 90, 180]},
                              "partition": {"name": "rotations", "sizes": [1, 2, 1]}},
                             4, np.random.default_rng(0))
    assert list(data.cluster) == [0, 1, 1, 2]
    assert data.group == ["0 deg", "90 deg", "90 deg", "180 deg"]
    raw = load_dataset("digits", np.random.default_rng(0)).x[:20]
    np.testing.assert_allclose(rotate_images(raw, 90), np.rot90(raw, 1, axes=(2, 3)), atol=1e-6)
    np.testing.assert_allclose(rotate_images(raw, 180), raw[:, :, ::-1, ::-1], atol=1e-6)
    with pytest.raises(ConfigError, match="data.partition.name"):
        build_client_data({"dataset": "digits", "partition": "rotations"}, 4,
                          np.random.default_rng(0))
