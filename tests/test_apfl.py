"""APFL (docs/specifications/baselines.md#apfl): limits alpha = 1 (Local) and alpha = 0
(FedAvg), the alpha gradient, the collaboration rows."""
from __future__ import annotations

import numpy as np
import torch

from netsim import Scenario, run

from helpers import build

TINY = {
    "name": "tiny_apfl",
    "seed": 0,
    "clients": 5,
    "data": {"dataset": "digits", "partition": {"name": "pathological", "classes_per_client": 2}},
    "model": "logreg",
    "network": {"latency": {"base": 0.001, "bandwidth": 1.0e7}},
    "train": {"lr": 0.1, "batch_size": 8, "local_steps": 3},
    "schedule": {"rounds": 3, "eval_every": 1},
    "algorithms": ["apfl"],
    "outputs": {"figures": False, "progress": False},
}


def final_test(res, alg):
    m = res.metrics
    m = m[(m["algorithm"] == alg) & (m["split"] == "test")]
    return m.sort_values(["round", "client"])[["accuracy", "loss"]].to_numpy()


def test_alpha_one_is_local_training_and_alpha_zero_is_fedavg(tmp_path):
    """vbar = v with alpha = 1: v follows exactly Local's SGD on the same batches; with alpha = 0
    the personalised model is the server model, trained exactly as FedAvg's."""
    res = run(Scenario(TINY).with_overrides({"algorithms": [
        "local", "fedavg", {"name": "apfl", "label": "apfl1", "alpha": 1.0},
        {"name": "apfl", "label": "apfl0", "alpha": 0.0}]}), out=tmp_path, quiet=True)
    np.testing.assert_allclose(final_test(res, "apfl1"), final_test(res, "local"), atol=1e-5)
    np.testing.assert_allclose(final_test(res, "apfl0"), final_test(res, "fedavg"), atol=1e-5)
    W = res.arrays("collab", "apfl1", 0)["W"][-1]
    np.testing.assert_allclose(W, np.eye(5), atol=1e-6)


def test_one_step_matches_autograd_for_v_w_and_adaptive_alpha():
    alg = build(TINY, {"algorithms": [{"name": "apfl", "adaptive": True, "alpha": 0.4,
                                       "alpha_lr": 0.3, "alpha_reg": 0.02}]})
    gen = torch.Generator().manual_seed(3)
    alg.bank.flat.copy_(torch.randn(alg.n, alg.bank.d, generator=gen) * 0.1)
    alg.v.copy_(torch.randn(alg.n, alg.bank.d, generator=gen) * 0.1)
    w0, v0, a0 = alg.bank.flat.clone(), alg.v.clone(), alg.alpha.clone()
    idx = torch.tensor([0, 2, 4])
    state = alg.gen.get_state()
    alg.local_sgd(alg.bank, 1, clients=idx)

    alg.gen.set_state(state)
    x, y = alg.data.sample_batch("train", alg.train.batch_size, alg.gen, idx)
    w = w0[idx].clone().requires_grad_(True)
    v = v0[idx].clone().requires_grad_(True)
    a = a0[idx].clone().requires_grad_(True)
    f_vbar = alg.bank.loss(x, y, clients=idx, flat=a[:, None] * v + (1 - a[:, None]) * w.detach())
    gv, ga = torch.autograd.grad(f_vbar.sum(), (v, a))
    (gw,) = torch.autograd.grad(alg.bank.loss(x, y, clients=idx, flat=w).sum(), (w,))
    lr = alg.train.lr
    torch.testing.assert_close(alg.bank.flat[idx], w0[idx] - lr * gw)
    torch.testing.assert_close(alg.v[idx], v0[idx] - lr * gv)
    torch.testing.assert_close(alg.alpha[idx], (a0[idx] - 0.3 * (ga + 0.02 * a0[idx])).clamp(0, 1))
    torch.testing.assert_close(alg.alpha[1], a0[1])


def test_adaptive_alpha_moves_within_the_unit_interval_and_rows_sum_to_one(tmp_path):
    """W = (1 - alpha_i) p + alpha_i e_i with p the data-size weights: alpha_i is read back from
    any off-diagonal entry."""
    res = run(Scenario(TINY).with_overrides({"algorithms": [
        {"name": "apfl", "adaptive": True, "alpha_lr": 5.0}]}), out=tmp_path, quiet=True)
    W = res.arrays("collab", "apfl", 0)["W"]
    np.testing.assert_allclose(W.sum(2), 1.0, atol=1e-5)
    n = res.clients["n_train"].to_numpy(float)
    p = n / n.sum()
    alpha = 1 - W[-1][:, 0][1:] / p[0]                 # rows 1..4, column 0
    np.testing.assert_allclose(1 - W[-1][0, 1] / p[1], 1 - W[-1][0, 2] / p[2], atol=1e-5)
    assert ((alpha >= 0) & (alpha <= 1)).all() and np.abs(alpha - 0.25).max() > 1e-3
    assert np.isfinite(res.metrics["loss"]).all()
