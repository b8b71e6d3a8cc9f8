"""FedAsync (algorithms/fedasync.py; Xie, Koyejo & Gupta 2019, Algorithm 1, Section 3's
staleness functions). With alpha = 1 and s constant every arriving model replaces the global
one. With frozen local training (lr 0) every model stays a convex combination of the initial
ones (the server's and the clients' distinct starting models): the test replays, from the event
trace alone, each mix ``x_t = (1 - alpha_t) x_{t-1} + alpha_t x_new`` with its own
``alpha_t = alpha s(t - tau)`` and finds the server's model. A planted mix whose weights do not
sum to one, and a planted polynomial without its +1, are caught."""
from __future__ import annotations

import numpy as np
import pytest
import torch

import algorithms.fedasync as fedasync
from async_helpers import SCENARIOS, play, scenario, spread

RUN = {**SCENARIOS["stragglers"], "schedule.until": 1.0, "schedule.mode": "reference"}
FROZEN = {**RUN, "train": {"lr": 0.0, "batch_size": 4, "local_steps": 1}}


def mixes(monkeypatch, spec: dict) -> list[tuple[torch.Tensor, torch.Tensor]]:
    """(server model after the mix, the model mixed in) of every mix of a run."""
    seen, mix = [], fedasync.FedAsync.act_mix

    def record(self, payloads):
        mix(self, payloads)
        seen.extend((self.server_model[0].clone(), self.bank.flat[i].clone())
                    for i, _ in payloads)

    monkeypatch.setattr(fedasync.FedAsync, "act_mix", record)
    play(scenario({**RUN, "algorithms": [spec]}))
    return seen


def test_alpha_one_constant_replaces_the_global_model(monkeypatch):
    seen = mixes(monkeypatch, {"name": "fedasync", "alpha": 1.0, "staleness": "constant"})
    assert len(seen) > 30
    assert all(torch.equal(after, new) for after, new in seen)


def test_planted_swapped_mix_is_caught(monkeypatch):
    def swapped(self, payloads):
        for i, w in payloads:
            self.server_model.mul_(w).add_(self.bank.flat[i:i + 1], alpha=1 - w)

    monkeypatch.setattr(fedasync.FedAsync, "act_mix", swapped)
    alg = play(scenario({**RUN, "algorithms": [{"name": "fedasync", "alpha": 1.0,
                                                "staleness": "constant"}]}))
    assert not torch.equal(alg.server_model[0], alg.bank.flat[alg.uploads[-1][1]])


def s(name: str, lag: int, a: float, b: int) -> float:
    """Section 3's staleness functions, written out again."""
    if name == "constant":
        return 1.0
    if name == "polynomial":
        return 1.0 / (lag + 1) ** a
    return 1.0 if lag <= b else 1.0 / (a * (lag - b) + 1)


def replayed_server(alg, x0: torch.Tensor, spec: dict) -> torch.Tensor:
    """The server model the trace implies with frozen clients: coefficients over ``x0`` (row 0:
    the server's initial model, row 1 + i: client i's)."""
    n = alg.n
    server, base = np.eye(n + 1)[0], np.eye(n + 1)[1:]
    version, tau, sent = 0, np.zeros(n, np.int64), {}
    for _, client, kind, peer, msg in alg.net.events.rows:
        if kind == "send" and client == alg.hub:
            sent[msg] = (server.copy(), version)
        elif kind == "receive":
            base[client], tau[client] = sent[msg]
        elif kind == "mix":
            version += 1
            w = spec["alpha"] * s(spec["staleness"], version - int(tau[peer]), spec["a"],
                                  spec["b"])
            server = (1 - w) * server + w * base[peer]
    assert server.min() >= 0 and server.sum() == pytest.approx(1.0)     # a convex combination
    return torch.as_tensor(server) @ x0


def frozen_gap(spec: dict) -> float:
    start = {}

    def setup(alg):
        spread(alg.bank.flat)
        alg.base.copy_(alg.bank.flat)
        alg.server_model.copy_(torch.randn(alg.server_model.shape,
                                           generator=torch.Generator().manual_seed(1)))
        start["x0"] = torch.cat([alg.server_model, alg.bank.flat]).double()

    alg = play(scenario({**FROZEN, "algorithms": [spec]}), setup=setup)
    assert sum(row[2] == "mix" for row in alg.net.events.rows) > 30
    want = replayed_server(alg, start["x0"], spec)
    return float((alg.server_model[0].double() - want).abs().max())


@pytest.mark.parametrize("staleness", ["constant", "polynomial", "hinge"])
def test_frozen_global_model_is_the_replayed_convex_combination(staleness):
    spec = {"name": "fedasync", "alpha": 0.6, "staleness": staleness, "a": 0.5, "b": 1}
    assert frozen_gap(spec) < 1e-5


def test_planted_polynomial_without_its_one_is_caught(monkeypatch):
    monkeypatch.setattr(fedasync, "staleness_weight", lambda hp, lag: float(lag) ** -hp.a)
    spec = {"name": "fedasync", "alpha": 0.6, "staleness": "polynomial", "a": 0.5, "b": 1}
    assert frozen_gap(spec) > 1e-3
