"""FedBuff: federated learning with buffered asynchronous aggregation (Nguyen, Malik, Zhan,
Yousefpour, Rabbat, Malek & Huba, AISTATS 2022, Algorithm 1), event-driven (docs/async.md).

Algorithm 1, with the client side of :mod:`algorithms.async_server`:

- client i (the client thread): from the server model it downloaded, ``y_0 = x^tau``, ``Q``
  local SGD steps (``train.local_steps``, learning rate ``train.lr``) give ``y_Q``; it uploads
  ``Delta_i = y_0 - y_Q``;
- the server accumulates ``Delta_bar += Delta_i`` and counts ``k += 1``; when ``k = K``
  (``buffer_size``) it steps ``x^{t+1} = x^t - eta_g Delta_bar / K`` (``server_lr``), then
  empties the buffer (``Delta_bar = 0, k = 0``) and ``t += 1``.

Every client trains all the time (the concurrency C of Algorithm 1 is N): the server answers
each upload at once with its current model, so a client waits for nobody. The staleness of an
upload, the server updates since its ``y_0`` (``t - tau``), is kept per upload; with equal
speeds and ``K = N`` the first update is FedAvg's average of the clients' local models
(tests/test_fedbuff.py).

The buffer is ``K`` rows, one per place: the upload filling place p writes row p, and the
update reads the K rows (so the uploads of a buffer are computed side by side in the batched
mode).
"""
from __future__ import annotations

from dataclasses import dataclass

import torch

from algorithms import register
from algorithms.async_server import AsyncServerAlgorithm
from netsim.schema.params import Params, param


@dataclass(frozen=True)
class FedBuffParams(Params):
    """FedBuff's parameters (Algorithm 1's K and eta_g)."""

    buffer_size: int = param(10, "K: uploads the server buffers before it updates its model",
                             lo=1)
    server_lr: float = param(1.0, "eta_g: the server's step on the buffer's mean delta",
                             lo=0.0, lo_open=True)


@register("fedbuff")
class FedBuff(AsyncServerAlgorithm):
    """Buffered asynchronous aggregation: the server steps on the mean of every K client deltas
    (Nguyen et al. 2022, Algorithm 1)."""

    params = FedBuffParams
    hp: FedBuffParams

    def __init__(self, ctx):
        super().__init__(ctx)
        self.buffer = torch.zeros(self.hp.buffer_size, self.bank.flat.shape[1],
                                  device=self.device)
        self.held = 0                                       # k: deltas in the buffer

    def server_receive(self, t: float, i: int, tau: int, msg_id: int) -> None:
        p = self.held
        self.net.events.add(t, self.hub, "buffer", i, msg_id)
        self.act("stash", (i, p), reads=[("x", i), ("b", i)], writes=[("buf", p)])
        self.held += 1
        if self.held == self.hp.buffer_size:
            self.net.events.add(t, self.hub, "update", -1, self.version + 1)
            self.act("update", None, reads=[("buf", q) for q in range(self.held)],
                     writes=[("server",)])
            self.held = 0
            self.version += 1

    def act_stash(self, payloads: list[tuple[int, int]]) -> None:
        """``Delta_i = y_0 - y_Q`` into the buffer's place p."""
        i, p = (torch.as_tensor(c, device=self.device) for c in zip(*payloads))
        self.buffer[p] = self.base[i] - self.bank.flat[i]

    def act_update(self, payloads: list[None]) -> None:
        """``x <- x - eta_g Delta_bar / K`` (one update per call: updates conflict)."""
        self.server_model -= self.hp.server_lr * self.buffer.mean(0, keepdim=True)
