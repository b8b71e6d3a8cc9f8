"""DiPLe (docs/specifications/diple.md): bisection, row normalisation, eq. 4, stale copies, runs."""
from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from algorithms import diple_graph
from algorithms.diple_weights import bisect, bisection_iterations, normalise_rows
from netsim import Scenario, run
from netsim.errors import ConfigError

from helpers import build

TINY = {
    "name": "tiny_diple",
    "seed": 0,
    "clients": 4,
    "data": {"dataset": "digits",
             "partition": {"name": "group_classes", "clusters": 2, "classes_per_group": 2}},
    "model": "logreg",
    "network": {"topology": "complete", "latency": {"base": 0.001, "bandwidth": 1.0e7}},
    "train": {"lr": 0.1, "batch_size": 16, "local_steps": 3},
    "schedule": {"rounds": 4, "eval_every": 1},
    "algorithms": [{"name": "diple", "stage2_steps": 2}],
    "outputs": {"figures": False, "progress": False},
}


# ------------------------------------------------------------------ bisection (eq. 3)
CENTRES = torch.tensor([-0.3, 0.0, 0.013, 0.2, 0.5, 0.77, 0.99, 1.0, 1.4], dtype=torch.float64)


@pytest.mark.parametrize("search", ["loss", "gradient"])
@pytest.mark.parametrize("eps", [0.2, 0.05, 0.01])
def test_bisection_finds_the_minimiser_within_eps_and_the_boundaries(search, eps):
    calls = []

    def phi(a):  # phi_k(a) = cosh(3 (a - c_k)) (convex) or its derivative
        calls.append(len(a))
        c = CENTRES.repeat(len(a) // len(CENTRES))
        return torch.cosh(3 * (a - c)) if search == "loss" else 3 * torch.sinh(3 * (a - c))

    a = bisect(phi, len(CENTRES), eps, search)
    target = CENTRES.clamp(0, 1)
    assert (a - target).abs().max() <= eps
    assert a[CENTRES <= 0].eq(0).all() and a[CENTRES >= 1].eq(1).all()
    assert a[target < eps / 2].eq(0).all()           # zeroed below eps/2
    # one batched evaluation per iteration, k = ceil(log2 1/eps) or ceil(log2 (2 - eps)/eps)
    k = math.ceil(math.log2(1 / eps) if search == "gradient" else math.log2((2 - eps) / eps))
    assert len(calls) == k == bisection_iterations(eps, search)
    assert set(calls) == {len(CENTRES) * (2 if search == "loss" else 1)}


def test_learned_weight_is_the_exact_minimiser_of_a_quadratic_mixture_loss():
    """Linear regression: phi(a) = f_i((1 - a) w_i + a w_j) is a parabola, whose minimiser follows
    from three evaluations; every pair's bisection lands within eps of it (clipped to [0, 1])."""
    alg = build(TINY, {"data": {"dataset": {"name": "clustered_linear_regression",
                                            "n_samples": 400},
                                "partition": {"name": "clusters", "clusters": 2}}})
    gen = torch.Generator().manual_seed(1)
    alg.bank.flat.copy_(torch.randn(alg.n, alg.bank.d, generator=gen))
    peers = torch.randn(alg.n, alg.bank.d, generator=gen)
    owner, peer = torch.tensor([0, 0, 1, 2, 3, 3]), torch.tensor([1, 2, 0, 3, 0, 1])
    a = alg.learn_weights(owner, peer, peers)

    x, y, mask = alg.data.full("val")
    own, other = alg.bank.flat[owner], peers[peer]
    f = torch.stack([alg.bank.evaluate(x[owner], y[owner], mask[owner], clients=owner,
                                       flat=own + s * (other - own))[1] for s in (0.0, 0.5, 1.0)])
    c2 = 2 * (f[0] - 2 * f[1] + f[2])                 # phi(a) = c0 + c1 a + c2 a^2
    c1 = f[2] - f[0] - c2
    best = (-c1 / (2 * c2)).clamp(0, 1).double()
    best = torch.where(best < alg.eps / 2, torch.zeros_like(best), best)
    assert (c2 > 0).all()
    assert (a - best).abs().max() <= alg.eps


@pytest.mark.parametrize("search", ["loss", "gradient"])
def test_learned_weights_do_not_depend_on_the_bisection_blocks(search, monkeypatch):
    """Each pair's bisection is its own: the coefficients are the same bit for bit whether the
    pairs share one block or take one block each (``BISECTION_FLOATS``)."""
    alg = build(TINY, {"model": {"name": "mlp", "hidden": [16]},
                       "algorithms": [{"name": "diple", "search": search,
                                       "bisection_batch": 8 if search == "gradient" else None}]})
    gen = torch.Generator().manual_seed(2)
    alg.bank.flat.copy_(0.3 * torch.randn(alg.n, alg.bank.d, generator=gen))
    peers = 0.3 * torch.randn(alg.n, alg.bank.d, generator=gen)
    owner, peer = torch.tensor([0, 0, 1, 2, 3, 3, 1]), torch.tensor([1, 2, 0, 3, 0, 1, 3])
    state = alg.gen.get_state()                  # the same fixed batch (gradient) both times
    one_block = alg.learn_weights(owner, peer, peers)
    monkeypatch.setattr(diple_graph, "BISECTION_FLOATS", 2 * alg.bank.d)   # a pair per block
    alg.gen.set_state(state)
    assert torch.equal(alg.learn_weights(owner, peer, peers), one_block)
    assert int(((one_block > 0) & (one_block < 1)).sum()) >= 3            # inside (0, 1)


# ------------------------------------------------------------------ graph normalisation
def test_odds_rows_are_exact_for_one_neighbour_and_sum_to_one():
    a = np.array([[0.0, 0.3, 0.0], [0.7, 0.0, 0.0], [1.0, 0.5, 0.0]])
    A = normalise_rows(a, "odds", 0.5, 0.05)
    np.testing.assert_allclose(A.sum(1), 1.0)
    np.testing.assert_allclose(A[0], [0.7, 0.3, 0.0])            # r = 3/7: alpha_ij = a_ij
    np.testing.assert_allclose(A[1], [0.7, 0.3, 0.0])
    r = np.array([0.95 / 0.05, 1.0, 1.0])                         # a = 1 is capped at 1 - eps
    np.testing.assert_allclose(A[2], r / r.sum())
    raw = normalise_rows(a, "raw", 0.5, 0.05)
    np.testing.assert_allclose(raw[0], [0.5 / 0.8, 0.3 / 0.8, 0.0])
    np.testing.assert_allclose(raw.sum(1), 1.0)


# ------------------------------------------------------------------ stage II (eq. 4)
def test_mixture_step_is_sgd_on_the_mixture_loss_with_the_chain_rule():
    alg = build(TINY)
    gen = torch.Generator().manual_seed(2)
    alg.mixer.copy_(torch.randn(alg.n, alg.bank.d, generator=gen) * 0.1)
    self_w = torch.tensor([0.2, 0.5, 0.9, 1.0])
    nb = torch.randn(alg.n, alg.bank.d, generator=gen) * 0.1
    before = alg.mixer.clone()
    state = alg.gen.get_state()
    done = np.array([True, True, False, True])
    alg.mixture_step(done, self_w, nb)

    alg.gen.set_state(state)
    idx = torch.tensor([0, 1, 3])
    x, y = alg.data.sample_batch("train", alg.train.batch_size, alg.gen, idx)
    w = before[idx].clone().requires_grad_(True)
    loss = alg.bank.loss(x, y, clients=idx, flat=self_w[idx, None] * w + nb[idx]).sum()
    (g,) = torch.autograd.grad(loss, w)                           # d/dw_i f_i(alpha_ii w_i + nb_i)
    torch.testing.assert_close(alg.mixer[idx], before[idx] - alg.train.lr * g)
    torch.testing.assert_close(alg.mixer[2], before[2])


# ------------------------------------------------------------------ whole runs
def test_run_learns_a_row_stochastic_graph_linking_the_group(tmp_path):
    res = run(Scenario(TINY).with_overrides({"schedule.rounds": 6}), out=tmp_path, quiet=True)
    W = res.arrays("collab", "diple", 0)["W"]
    assert W.shape == (7, 4, 4)
    np.testing.assert_allclose(W.sum(2), 1.0, atol=1e-6)
    assert (W >= 0).all()
    same = np.equal.outer(res.clients["cluster"].to_numpy(), res.clients["cluster"].to_numpy())
    np.fill_diagonal(same, False)
    other = ~same & ~np.eye(4, dtype=bool)
    learned = W[1:]                                               # after the first bisection
    assert learned[:, same].mean() > 0.1 > learned[:, other].mean()
    links = res.arrays("links", "diple", 0)["delivered"]
    assert links.shape == (6, 4, 4)
    m = res.metrics
    assert np.isfinite(m["loss"]).all()


def test_no_delivery_keeps_the_initial_graph_and_trains_locally(tmp_path):
    res = run(Scenario(TINY).with_overrides({"network.links": {"name": "bernoulli", "p": 0.0},
                                             "algorithms": ["local", {"name": "diple"}],
                                             "schedule.rounds": 2}), out=tmp_path, quiet=True)
    W = res.arrays("collab", "diple", 0)["W"][-1]
    np.testing.assert_allclose(W, normalise_rows(np.full((4, 4), 0.5), "odds", 0.5, 0.05))
    assert res.summary["algorithms"]["diple"]["messages_sent"] == 0
    assert np.isfinite(res.metrics["loss"]).all()


def test_rare_links_crashes_and_sampling_give_finite_results(tmp_path):
    sc = Scenario(TINY).with_overrides({
        "clients": 6, "network.links": {"name": "bernoulli", "p": 0.05},
        "network.failures": {"crash": {"share": 0.5, "at": 0.002}},
        "network.policy": {"name": "wait_all", "max_staleness": 2},
        "algorithms": [{"name": "diple", "candidates": "sample", "sample_peers": 2,
                        "keep_neighbours": True, "grad_at": "fresh", "mixture_init": "carry",
                        "self_weight": "raw", "search": "gradient", "bisection_batch": 8,
                        "unit": "epoch"}],
        "schedule.rounds": 3})
    res = run(sc, out=tmp_path, quiet=True)
    assert np.isfinite(res.metrics["loss"]).all()
    np.testing.assert_allclose(res.arrays("collab", "diple", 0)["W"].sum(2), 1.0, atol=1e-6)


@pytest.mark.parametrize("params, field", [
    ({"candidates": "sample", "sample_peers": 4}, "algorithms[0].sample_peers"),
    ({"keep_neighbours": True}, "algorithms[0].keep_neighbours"),
    ({"search": "gradient"}, "algorithms[0].bisection_batch"),
])
def test_impossible_combinations_are_config_errors(params, field):
    with pytest.raises(ConfigError) as err:
        Scenario(TINY).with_overrides({"algorithms": [{"name": "diple", **params}]}).resolve()
    assert err.value.field == field


def test_validation_split_is_required_for_held_out_f_i():
    with pytest.raises(ConfigError) as err:
        Scenario(TINY).with_overrides({"data.val_fraction": 0.0}).resolve()
    assert err.value.field == "data.val_fraction"
    Scenario(TINY).with_overrides({"data.val_fraction": 0.0, "algorithms": [
        {"name": "diple", "bisection_split": "train", "select_on": "train"}]}).resolve()
