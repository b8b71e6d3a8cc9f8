"""Gossip learning (algorithms/gossip_learning.py; Ormándi et al. 2013, Hegedűs et al. 2019):
the merge weight is the received model's share of the two ages (two models of equal age
average); with frozen local training (lr 0) every model is the chain of age-weighted merges
that the event trace implies, replayed here from the trace alone, with ages that grow by the
paper's rule (``max`` at a merge, one per local step). A planted plain average (the 2013
paper's merge, ages ignored) and a planted extra age step are caught."""
from __future__ import annotations

import numpy as np
import pytest

import algorithms.gossip_learning as gossip_learning
from async_helpers import SCENARIOS, play, scenario, spread

FROZEN = {"train": {"lr": 0.0, "batch_size": 4, "local_steps": 2}, "schedule.until": 1.0,
          "algorithms": [{"name": "gossip_learning", "period": 0.03}]}


def test_merge_weight_is_the_received_share_of_the_ages():
    assert gossip_learning.merge_weight(3, 3) == 0.5
    assert gossip_learning.merge_weight(0, 0) == 0.5
    assert gossip_learning.merge_weight(2, 6) == 0.75


def replay(alg, x0: np.ndarray) -> tuple[np.ndarray, np.ndarray, int]:
    """Models and ages from the trace: a finish adds local_steps to the age, a send carries the
    sender's (model, age), a merge applies the paper's rule. Also the merges of unequal ages."""
    n, steps = alg.n, alg.train.local_steps
    coef, age, sent, unequal = np.eye(n), np.zeros(n, np.int64), {}, 0
    for _, client, kind, peer, msg in alg.net.events.rows:
        if kind == "finish":
            age[client] += steps
        elif kind == "send":
            sent[msg] = (coef[client].copy(), int(age[client]))
        elif kind == "merge":
            c, a = sent[msg]
            w = 0.5 if age[client] + a == 0 else a / (age[client] + a)
            unequal += a != age[client]
            coef[client] = (1 - w) * coef[client] + w * c
            age[client] = max(age[client], a)
    return coef @ x0, age, unequal


def frozen_gaps(name: str) -> tuple[float, int]:
    """Largest gap between the models and the replayed ones, and between the ages."""
    start = {}

    def setup(alg):
        spread(alg.bank.flat)
        start["x0"] = alg.bank.flat.double().numpy()

    alg = play(scenario({**SCENARIOS[name], **FROZEN}), setup=setup)
    want, ages, unequal = replay(alg, start["x0"])
    assert sum(row[2] == "merge" for row in alg.net.events.rows) > 50 and unequal > 20
    return (float(np.abs(alg.bank.flat.double().numpy() - want).max()),
            int(np.abs(alg.age - ages).max()))


@pytest.mark.parametrize("name", ["loss", "failures"])
def test_frozen_models_are_the_replayed_age_weighted_merges(name):
    assert frozen_gaps(name) == (pytest.approx(0.0, abs=1e-5), 0)


def test_planted_plain_average_is_caught(monkeypatch):
    monkeypatch.setattr(gossip_learning, "merge_weight", lambda age, received: 0.5)
    gap, _ = frozen_gaps("loss")
    assert gap > 1e-2


def test_planted_extra_age_step_is_caught(monkeypatch):
    finish = gossip_learning.GossipLearning.finish_step

    def older(self, i, t):
        self.age[i] += 1
        finish(self, i, t)

    monkeypatch.setattr(gossip_learning.GossipLearning, "finish_step", older)
    _, age_gap = frozen_gaps("loss")
    assert age_gap > 0
