"""AD-PSGD (algorithms/adpsgd.py; Lian et al. 2018, Algorithm 1): with the gradient step off,
every atomic pairwise average keeps x_i + x_j, so the sum of all models is invariant under
delays, loss, stragglers and failures (while the models move towards each other), and the step
applies the gradient of the model read at wake-up although it changed meanwhile; a planted
asymmetric average, and a planted gradient of the current model, are caught."""
from __future__ import annotations

import numpy as np
import pytest
import torch

import algorithms.adpsgd as adpsgd
from async_helpers import SCENARIOS, play, scenario, spread

FROZEN = {"train": {"lr": 0.0, "batch_size": 4, "local_steps": 1}, "schedule.until": 1.0}


def sum_drift(over: dict) -> tuple[float, float, int]:
    """Largest relative drift of the sum of the models over the windows, the final spread of the
    models relative to the initial one, and the number of averages made."""
    start, drift = {}, []

    def setup(alg):
        spread(alg.bank.flat)
        start["sum"] = alg.bank.flat.double().sum(0)
        start["spread"] = float(alg.bank.flat.std(0).mean())

    def check(alg):
        total = alg.bank.flat.double().sum(0)
        drift.append(float((total - start["sum"]).abs().max() / start["sum"].abs().max()))

    alg = play(scenario({**over, **FROZEN}), 0, check, setup)
    averages = sum(row[2] == "average" for row in alg.net.events.rows)
    return max(drift), float(alg.bank.flat.std(0).mean()) / start["spread"], averages


@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_pairwise_average_keeps_the_sum(name):
    drift, shrink, averages = sum_drift(SCENARIOS[name])
    assert averages > 50
    assert drift < 1e-5
    assert shrink < 0.5                                  # and the models did mix


def test_planted_asymmetric_average_is_caught(monkeypatch):
    monkeypatch.setattr(adpsgd, "pair_average",
                        lambda a, b: (0.6 * a + 0.4 * b, 0.5 * a + 0.5 * b))
    drift, _, _ = sum_drift(SCENARIOS["loss"])
    assert drift > 1e-3


def gradient_check(monkeypatch, planted: bool) -> tuple[int, int, int]:
    """Reference run that records the model each client read at wake-up and, at each average,
    compares the gradient applied with the gradient at that model on the same batch. Returns
    (averages checked, mismatches, averages where x_i had changed since the read). ``planted``:
    the gradient is taken at the model current at the average instead (a wrong line 6)."""
    read, counts = {}, [0, 0, 0]
    start, average = adpsgd.ADPSGD.start_step, adpsgd.ADPSGD.act_average

    def start_step(self, i, t, k):
        read[i] = (self.bank.flat[i].clone(), k)           # reference: the state at wake-up
        start(self, i, t, k)

    def act_average(self, payloads):
        if planted:
            self.act_grad([(i, read[i][1]) for i, _ in payloads])
        for i, _ in payloads:
            x_hat, k = read[i]
            x, y = self.batches.batch(np.array([i]), np.array([k]))
            _, g = self.bank.grad(x, y, clients=torch.tensor([i]), flat=x_hat[None])
            counts[0] += 1
            counts[1] += not torch.equal(self.grads[i], g[0])
            counts[2] += not torch.equal(self.bank.flat[i], x_hat)
        average(self, payloads)

    monkeypatch.setattr(adpsgd.ADPSGD, "start_step", start_step)
    monkeypatch.setattr(adpsgd.ADPSGD, "act_average", act_average)
    play(scenario({**SCENARIOS["stragglers"], "schedule.mode": "reference"}), 0)
    return tuple(counts)


def test_gradient_is_of_the_model_read_at_wake_up(monkeypatch):
    """Algorithm 1, line 6: the step applies g(x_hat_i), the gradient at the model i read when
    it woke, although neighbours averaged with i while it computed."""
    checked, wrong, stale = gradient_check(monkeypatch, planted=False)
    assert checked > 50 and wrong == 0 and stale > 5


def test_planted_fresh_gradient_is_caught(monkeypatch):
    _, wrong, _ = gradient_check(monkeypatch, planted=True)
    assert wrong > 5
