"""FedBuff (algorithms/fedbuff.py; Nguyen et al. 2022, Algorithm 1): with equal speeds, reliable
links, K = N and eta_g = 1 the first server update is FedAvg's average of the clients' local
models, recomputed here from the clients' batches; the staleness kept per upload is the
server's updates since the model the client started from, replayed from the event trace. A
planted update that drops one delta, and a planted reply that forgets its version, are caught."""
from __future__ import annotations

import numpy as np
import torch

import algorithms.async_server as async_server
import algorithms.fedbuff as fedbuff
from async_helpers import SCENARIOS, play, scenario

#: equal speeds, reliable links, one propagation delay: every client's first upload reaches the
#: server at about 0.11 s, the second at about 0.22 s
EQUAL = {"network.links": {"name": "always"},
         "network.latency": {"base": 0.01, "bandwidth": 1.0e9},
         "network.compute": {"step_time": 0.05},
         "train": {"lr": 0.1, "batch_size": 4, "local_steps": 2},
         "schedule.until": 0.2, "schedule.mode": "reference"}


def local_models(alg, start: torch.Tensor) -> torch.Tensor:
    """Each client's ``local_steps`` SGD steps from ``start`` on its first batches, one client
    at a time."""
    steps, out = alg.train.local_steps, []
    for i in range(alg.n):
        y = start.clone()
        for q in range(steps):
            x, t = alg.batches.batch(np.array([i]), np.array([q]))
            _, g = alg.bank.grad(x, t, clients=torch.tensor([i]), flat=y[None])
            y = y - alg.train.lr * g[0]
        out.append(y)
    return torch.stack(out)


def first_update_gap() -> float:
    start = {}
    alg = play(scenario({**EQUAL, "algorithms": [{"name": "fedbuff", "buffer_size": 6}]}),
               setup=lambda a: start.update(x=a.server_model[0].clone()))
    assert alg.version == 1
    assert [s for _, _, s in alg.uploads] == [0] * 6                 # no staleness
    assert sorted(c for _, c, _ in alg.uploads) == list(range(6))    # each client once
    fedavg = local_models(alg, start["x"]).mean(0)      # equal data: weighted = plain mean
    assert (alg.data.n["train"] == alg.data.n["train"][0]).all()
    return float((alg.server_model[0] - fedavg).abs().max())


def test_full_buffer_without_staleness_is_fedavg():
    assert first_update_gap() < 1e-5


def test_planted_update_dropping_a_delta_is_caught(monkeypatch):
    def update(self, payloads):
        self.server_model -= self.hp.server_lr * self.buffer[1:].mean(0, keepdim=True)

    monkeypatch.setattr(fedbuff.FedBuff, "act_update", update)
    assert first_update_gap() > 1e-4


def replayed_staleness(alg) -> list[int]:
    """Each upload's staleness from the trace: the server's updates before its arrival less
    those before the reply that gave the client its model."""
    version, tau, reply_version, out = 0, np.zeros(alg.n, np.int64), {}, []
    for _, client, kind, peer, msg in alg.net.events.rows:
        if kind == "send" and client == alg.hub:
            reply_version[msg] = version
        elif kind == "receive":
            tau[client] = reply_version[msg]
        elif kind == "buffer":
            out.append(version - int(tau[peer]))
        elif kind == "update":
            version += 1
    return out


def staleness_run() -> tuple[list[int], list[int]]:
    over = {**SCENARIOS["stragglers"], "schedule.until": 1.0,
            "algorithms": [{"name": "fedbuff", "buffer_size": 2}]}
    alg = play(scenario(over))
    return [s for _, _, s in alg.uploads], replayed_staleness(alg)


def test_staleness_is_the_updates_since_the_clients_model():
    kept, replayed = staleness_run()
    assert len(kept) > 30 and max(kept) >= 2
    assert kept == replayed


def test_planted_reply_forgetting_its_version_is_caught(monkeypatch):
    reply = async_server.AsyncServerAlgorithm.reply

    def forgetful(self, t, i):
        reply(self, t, i)
        self.inbox_version[i] = 0

    monkeypatch.setattr(async_server.AsyncServerAlgorithm, "reply", forgetful)
    kept, replayed = staleness_run()
    assert kept != replayed
