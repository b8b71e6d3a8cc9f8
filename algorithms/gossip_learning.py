"""Gossip learning (Ormándi, Hegedűs & Jelasity 2013, "Gossip learning with linear models on
fully distributed data"; Hegedűs, Danner & Jelasity 2019, "Gossip learning as a decentralized
alternative to federated learning"), event-driven (docs/async.md).

Algorithm 1 of both papers: each node k holds a model ``x_k`` and its age ``t_k`` (the updates
it went through); every ``Delta`` it sends ``(x_k, t_k)`` to one random peer, and on receiving
``(x_r, t_r)`` it merges and updates (``onReceiveModel``). The 2019 paper's merge is the
age-weighted average

    a = t_r / (t_k + t_r),   x_k <- (1 - a) x_k + a x_r,   t_k <- max(t_k, t_r)

(two models of equal age average; ``a = 1/2`` also when both ages are 0), and its update takes
SGD steps on the local data, ``t_k`` growing by one per step.

Here an update costs the compute model's time, so a node works at its own pace: when it wakes
it merges, in arrival order, the models received since its last wake, then updates
(``train.local_steps`` SGD steps, ``t_k += local_steps``) for as long as the compute model
says; when done it sends ``(x_k, t_k)`` to a uniformly random out-neighbour and wakes again
``period`` seconds after its last wake (or at once when the update took longer). A node
updates at every wake, whether a model arrived or not. A message carries the sender's model as
it was sent (a snapshot row); what is not delivered is dropped. With the learning rate 0 the
models move only by merges, which tests/test_gossip_learning.py replays from the event trace.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from algorithms import register
from algorithms.async_base import AsyncAlgorithm
from algorithms.async_local import local_sgd
from netsim.runtime.rows import copy_rows
from netsim.schema.params import Params, param
from netsim.sim.async_net import IN_FLIGHT
from netsim.sim.grouping import Keys


@dataclass(frozen=True)
class GossipLearningParams(Params):
    """Gossip learning's parameters (Algorithm 1's Delta)."""

    period: float = param(0.0, "Delta: simulated seconds between a node's wake-ups (each "
                          "wake-up merges, updates, then sends; 0: again as soon as the "
                          "update is done)", lo=0.0)


def merge_weight(age: float, received: float) -> float:
    """The weight ``a = t_r / (t_k + t_r)`` of a received model of age ``received`` merged into
    one of age ``age`` (1/2 when both are 0)."""
    total = age + received
    return received / total if total > 0 else 0.5


@register("gossip_learning")
class GossipLearning(AsyncAlgorithm):
    """Random-peer model passing with age-weighted merges and local updates (Hegedűs et al.
    2019, Algorithm 1)."""

    params = GossipLearningParams
    hp: GossipLearningParams

    def __init__(self, ctx):
        super().__init__(ctx)
        self.age = np.zeros(self.n, np.int64)
        self.work = torch.zeros_like(self.bank.flat)          # the update being computed
        self.snap = torch.zeros(2 * self.n, self.bank.flat.shape[1], device=self.device)
        self.free = list(range(len(self.snap) - 1, -1, -1))
        self.inbox: list[list] = [[] for _ in range(self.n)]  # (slot, age, message) per node
        self.last_wake = np.zeros(self.n)
        self.model_bytes += 8.0                               # the age travels too

    def personal_models(self) -> torch.Tensor:
        return self.bank.flat

    def _slot(self) -> int:
        """A free snapshot row (the rows double when none is left; held work sees the new
        tensor)."""
        if not self.free:
            old = len(self.snap)
            self.snap = torch.cat([self.snap, torch.zeros_like(self.snap)])
            self.free = list(range(2 * old - 1, old - 1, -1))
        return self.free.pop()

    # ------------------------------------------------------------------ events
    def start_step(self, i: int, t: float, k: int) -> None:
        """Merge what arrived, in order, then compute the update."""
        self.last_wake[i] = t
        taken, self.inbox[i] = self.inbox[i], []
        keep, weights, age = 1.0, [], int(self.age[i])
        for slot, received, msg in taken:
            a = merge_weight(age, received)
            keep, weights = keep * (1.0 - a), [w * (1.0 - a) for w in weights] + [a]
            age = max(age, received)
            self.net.events.add(t, i, "merge", msg.src, msg.id)
        self.age[i] = age
        slots = np.array([slot for slot, _, _ in taken], np.int64)
        if taken:
            self.merged(i, t, np.array([msg.sent_at for _, _, msg in taken]))
        self.act("wake", (i, k, keep, slots, np.array(weights)),
                 reads=[("x", i), Keys("s", slots)], writes=[("x", i), ("y", i)])
        self.free.extend(int(s) for s in slots)

    def act_wake(self, payloads: list[tuple[int, int, float, np.ndarray, np.ndarray]]) -> None:
        """``x_k <- keep x_k + sum_r w_r x_r`` (the merges in a row), then the update into
        :attr:`work`."""
        dev, x = self.device, self.bank.flat
        idx = torch.as_tensor([p[0] for p in payloads], device=dev)
        keep = torch.as_tensor([p[2] for p in payloads], dtype=x.dtype, device=dev)
        rows = torch.as_tensor(np.concatenate([np.full(len(p[3]), p[0]) for p in payloads]),
                               dtype=torch.long, device=dev)
        slots = torch.as_tensor(np.concatenate([p[3] for p in payloads]), dtype=torch.long,
                                device=dev)
        weights = torch.as_tensor(np.concatenate([p[4] for p in payloads]), dtype=x.dtype,
                                  device=dev)
        copy_rows(x, idx, x[idx] * keep[:, None])
        x.index_add_(0, rows, self.snap[slots] * weights[:, None])
        copy_rows(self.work, idx, x[idx])
        local_sgd(self, [p[:2] for p in payloads], self.work)

    def finish_step(self, i: int, t: float) -> None:
        """The update is done: apply it, send the model to a random peer, sleep."""
        self.age[i] += self.train.local_steps
        out = self.net.out_edges(i)
        slot = -1
        if len(out):
            slot = self._slot()
            edge = out[self.rng.integers(len(out))]
            outcome, _ = self.net.send(t, i, np.array([edge]), self.model_bytes,
                                       data=(slot, int(self.age[i])))
            if outcome[0] != IN_FLIGHT:
                self.free.append(slot)
                slot = -1
        writes = [("x", i)] + ([("s", slot)] if slot >= 0 else [])
        self.act("apply", (i, slot), reads=[("y", i)], writes=writes)
        self.wake_at(i, max(t, self.last_wake[i] + self.hp.period))

    def act_apply(self, payloads: list[tuple[int, int]]) -> None:
        """``x_k`` <- the update; the message's snapshot of it."""
        i, slot = (np.asarray(c) for c in zip(*payloads))
        idx = torch.as_tensor(i, device=self.device)
        copy_rows(self.bank.flat, idx, self.work.index_select(0, idx))
        sent = slot >= 0
        if sent.any():
            copy_rows(self.snap, slot[sent],
                      self.work.index_select(0, torch.as_tensor(i[sent], device=self.device)))

    def on_message(self, t: float, msg, delivered: bool) -> None:
        slot, age = msg.data
        if delivered:
            self.inbox[msg.dst].append((slot, age, msg))
        else:
            self.free.append(slot)
