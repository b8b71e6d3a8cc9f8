"""GGC (Alg. 2) and BGGC (Alg. 3) of DPFL: Theorem 1, the memory bound, a per-client reference."""
from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from algorithms.ggc import ValidationReward, average, bggc, decide, draw_order, ggc
from netsim.data import ClientData
from netsim.models import build_model
from netsim.runtime import ClientBank

N, FEATURES, CLASSES = 11, 5, 3


@pytest.fixture(scope="module")
def setup():
    """11 clients with different models (float64) and 12 validation samples each."""
    rng = np.random.default_rng(0)
    split = lambda m: [rng.normal(size=(m, FEATURES)).astype(np.float32) for _ in range(N)]
    labels = lambda m: [rng.integers(0, CLASSES, m) for _ in range(N)]
    data = ClientData.from_clients({"train": split(4), "val": split(12), "test": split(4)},
                                   {"train": labels(4), "val": labels(12), "test": labels(4)},
                                   num_classes=CLASSES, input_shape=(FEATURES,),
                                   task="classification")
    model = build_model({"name": "mlp", "hidden": [6]}, (FEATURES,), CLASSES, "classification",
                        device="cpu")
    bank = ClientBank(model, N, "cpu", torch.Generator().manual_seed(1), same_init=False,
                      dtype=torch.float64)
    p = torch.as_tensor(rng.integers(5, 30, N), dtype=torch.float64)
    return bank, ValidationReward(bank, data), p


class CountingFetch:
    """Hands out models of ``flat`` and records how many each client held at a time."""

    def __init__(self, flat, drop=None):
        self.flat, self.drop, self.calls, self.most = flat, drop, 0, 0

    def __call__(self, ids):
        self.calls += 1
        self.most = max(self.most, int((ids >= 0).sum(1).max(initial=0)))
        ok = ids >= 0
        if self.drop is not None:
            ok &= ~self.drop[np.arange(len(ids))[:, None], np.maximum(ids, 0)]
        return self.flat[torch.as_tensor(np.maximum(ids, 0))], ok


def _all_others(clients):
    cand = np.ones((len(clients), N), bool)
    cand[np.arange(len(clients)), clients] = False
    return cand


@pytest.mark.parametrize("budget", [1, 2, 3, 4, 7, None])
@pytest.mark.parametrize("clients", [[5], list(range(N))])
def test_theorem1_bggc_equals_ggc(setup, budget, clients):
    """Same client(s), candidates, budget and seed: identical collaborator sets (Theorem 1),
    with B_c in {2, 3, 4, 7} not dividing the 10 candidates, and BGGC holding <= B_c models."""
    bank, reward, p = setup
    clients = np.asarray(clients)
    cand = _all_others(clients)
    batch = budget or N - 1
    for seed in range(4):
        a = ggc(clients, cand, bank.flat, p, budget, reward, np.random.default_rng(seed))
        fetch = CountingFetch(bank.flat)
        b = bggc(clients, cand, bank.flat[clients], p, budget, reward,
                 np.random.default_rng(seed), fetch, batch)
        np.testing.assert_array_equal(a.peers, b.peers)
        torch.testing.assert_close(a.model, b.model)
        assert fetch.most <= batch
        passes = 1 if batch >= N - 1 else 2
        assert fetch.calls <= passes * math.ceil((N - 1) / batch)
        if budget is not None:
            assert a.peers.sum(1).max() <= budget


def test_selections_vary_and_reach_the_budget(setup):
    """The test above is not vacuous: across seeds the sets differ and some hit the budget."""
    bank, reward, p = setup
    clients = np.arange(N)
    sets = [ggc(clients, _all_others(clients), bank.flat, p, 7, reward,
                np.random.default_rng(s)).peers for s in range(4)]
    assert any(not np.array_equal(sets[0], s) for s in sets[1:])
    assert max(s.sum(1).max() for s in sets) == 7
    assert min(s.sum(1).min() for s in sets) < 7


def _reference_ggc(k, cand_row, order_row, u_row, models, p, budget, reward):
    """Alg. 2 for one client with Python sets and every reward computed from scratch."""
    def r(members):
        m = np.zeros(N, bool)
        m[sorted(members)] = True
        return reward(torch.tensor([k]), average(m[None], models, p)).item()

    x, y = {k}, set(np.flatnonzero(cand_row)) | {k}
    for j, u in zip(order_row, u_row):
        if j < 0 or (budget is not None and len(x) - 1 == budget):
            break
        a = max(r(x | {j}) - r(x), 0.0)
        b = max(r(y - {j}) - r(y), 0.0)
        if u < (a / (a + b) if a + b > 0 else 1.0):
            x.add(int(j))
        else:
            y.discard(int(j))
    return x - {k}


@pytest.mark.parametrize("budget", [2, None])
def test_lock_step_ggc_equals_per_client_reference(setup, budget):
    """Running K clients in lock step with batched rewards changes nothing: each client gets the
    set a plain per-client Alg. 2 gets from the same order and coins (candidates differ)."""
    bank, reward, p = setup
    clients = np.arange(N)
    cand = np.random.default_rng(3).random((N, N)) < 0.6
    cand[clients, clients] = False
    order, u = draw_order(np.random.default_rng(9), cand)
    got = ggc(clients, cand, bank.flat, p, budget, reward, np.random.default_rng(9)).peers
    for k in clients:
        want = _reference_ggc(k, cand[k], order[k], u[k], bank.flat, p, budget, reward)
        assert set(np.flatnonzero(got[k])) == want
        assert want <= set(np.flatnonzero(cand[k]))


def test_decision_rule():
    """p = a / (a + b) with a = max(gain_add, 0), b = max(gain_remove, 0); p = 1 when a = b = 0."""
    t = torch.tensor
    add = decide(t([0.0, -1.0, 0.3, -0.1, 0.2, 0.2]), t([0.0, -2.0, -0.1, 0.5, 0.2, 0.2]),
                 t([0.99, 0.99, 0.99, 0.0, 0.49, 0.51]))
    assert add.tolist() == [True, True, True, False, True, False]
    zero = torch.zeros(3)
    assert decide(zero, zero, t([0.2, 0.5, 0.7]), tie=0.6).tolist() == [True, True, False]


def test_draw_order_is_a_permutation_of_each_candidate_set():
    cand = np.random.default_rng(0).random((6, 9)) < 0.5
    order, u = draw_order(np.random.default_rng(1), cand)
    assert order.shape == u.shape == (6, cand.sum(1).max())
    for row, c in zip(order, cand):
        assert sorted(row[row >= 0]) == list(np.flatnonzero(c))
        assert (row[row < 0] == -1).all() and (row >= 0).sum() == c.sum()


def test_bggc_missing_models_are_never_selected(setup):
    """A model lost in pass 1 leaves Y and is never chosen; the returned model is the p-average of
    the chosen set (Eq. 4)."""
    bank, reward, p = setup
    clients = np.arange(N)
    drop = np.random.default_rng(2).random((N, N)) < 0.3
    sel = bggc(clients, _all_others(clients), bank.flat, p, None, reward,
               np.random.default_rng(0), CountingFetch(bank.flat, drop), 4)
    assert not (sel.peers & drop).any()
    members = sel.peers | np.eye(N, dtype=bool)
    torch.testing.assert_close(sel.model, average(members, bank.flat, p))


def test_reward_is_minus_the_validation_loss(setup):
    bank, reward, _ = setup
    data_x, data_y, mask = reward.x, reward.y, reward.mask
    k = 4
    out = bank.model.forward(bank.params(bank.flat[k:k + 1]), data_x[k:k + 1])[0]
    loss = torch.nn.functional.cross_entropy(out[mask[k]], data_y[k][mask[k]])
    got = reward(torch.tensor([k]), bank.flat[k:k + 1])
    torch.testing.assert_close(got, -loss.reshape(1).to(got.dtype))
