"""The client side and the server node of event-driven server-based algorithms (FedBuff,
FedAsync; docs/async.md).

The network is a star of the N clients around a reliable server, node N
(:class:`netsim.sim.async_net.AsyncNetwork` with ``server=True``, as the round engine's). Each
client, at its own pace:

- starts from the server model it last received, ``x_i = b_i``, and runs ``train.local_steps``
  plain SGD steps on its own mini-batches (as long as the compute model says);
- when done, uploads its result with the version ``tau_i`` of the model it started from;
- the server folds the upload into its model (:meth:`AsyncServerAlgorithm.server_receive`:
  each algorithm's rule) and replies at once with its current model and version; the client
  starts again when the reply arrives.

A client whose upload does not reach the server, or whose reply does not reach it (link down,
budget, loss, the client down at the delivery), starts again from the model it holds, ``b_i``:
its local work is lost. The server never waits, so no client waits for another.

Tensor state (keys of the actions): the clients' working models ``x`` (the bank), their last
received models ``b``, the replies in flight ``in`` (one per client at most) and the server
model ``server``. The server's version ``t`` counts its model updates; the staleness of an
upload, ``t - tau_i`` at its arrival, is kept per upload (``uploads/`` arrays).
"""
from __future__ import annotations

import numpy as np
import torch

from algorithms.async_base import AsyncAlgorithm
from algorithms.async_local import local_sgd
from netsim.runtime.rows import copy_rows
from netsim.sim.async_net import IN_FLIGHT


class AsyncServerAlgorithm(AsyncAlgorithm):
    """Clients training from the server's model at their own pace; the server's rule is
    :meth:`server_receive`. ``rho`` > 0 adds the proximal term ``rho (x - b_i)`` to every local
    gradient (FedAsync's regularised local objective)."""

    server = True
    group = "federated"
    rho = 0.0

    def __init__(self, ctx):
        super().__init__(ctx)
        self.hub = self.n
        e = self.net.edges
        self.up = np.empty(self.n, np.int64)                  # client i -> server
        self.up[e.src[e.dst == self.hub]] = np.flatnonzero(e.dst == self.hub)
        self.down = np.empty(self.n, np.int64)                # server -> client i
        self.down[e.dst[e.src == self.hub]] = np.flatnonzero(e.src == self.hub)
        self.server_model = self.bank.flat[:1].clone()        # every client starts from it
        self.bank.flat.copy_(self.server_model.expand_as(self.bank.flat))
        self.base = self.bank.flat.clone()                    # b_i: the model last received
        self.inbox = torch.zeros_like(self.base)              # the reply in flight to i
        self.version = 0                                      # t: server model updates
        self.tau = np.zeros(self.n, np.int64)                 # version of b_i
        self.inbox_version = np.zeros(self.n, np.int64)
        self.uploads: list[tuple[float, int, int]] = []       # (time, client, staleness)

    # ------------------------------------------------------------------ what the run sees
    def personal_models(self) -> torch.Tensor:
        return self.server_model.expand(self.n, -1)

    def health(self) -> dict:
        return {"model": (self.server_model, torch.zeros(self.n, dtype=torch.long,
                                                         device=self.device))}

    def extra_arrays(self) -> dict[str, dict[str, np.ndarray]]:
        """Every upload's arrival time, client and staleness (server versions since the model
        it started from)."""
        rows = np.asarray(self.uploads, np.float64).reshape(-1, 3)
        return {"uploads": {"time": rows[:, 0], "client": rows[:, 1].astype(np.int64),
                            "staleness": rows[:, 2].astype(np.int64)}}

    # ------------------------------------------------------------------ clients
    def start_step(self, i: int, t: float, k: int) -> None:
        self.act("train", (i, k), reads=[("x", i), ("b", i)], writes=[("x", i)])

    def act_train(self, payloads: list[tuple[int, int]]) -> None:
        """Local SGD from ``x_i = b_i`` (with the proximal term towards ``b_i`` when rho > 0)."""
        local_sgd(self, payloads, self.bank.flat, self.base, self.rho)

    def finish_step(self, i: int, t: float) -> None:
        outcome, _ = self.net.send(t, i, self.up[i:i + 1], self.model_bytes,
                                   data=int(self.tau[i]))
        if outcome[0] != IN_FLIGHT:
            self.restart(i, t)

    def restart(self, i: int, t: float) -> None:
        """No new model for client i: it starts again from ``b_i`` at ``t``."""
        self.net.events.add(t, i, "restart")
        self.act("restart", i, reads=[("b", i)], writes=[("x", i)])
        self.wake_at(i, t)

    def act_restart(self, payloads: list[int]) -> None:
        idx = torch.as_tensor(payloads, device=self.device)
        copy_rows(self.bank.flat, idx, self.base.index_select(0, idx))

    def act_receive(self, payloads: list[int]) -> None:
        """The reply arrived: ``b_i = x_i =`` the server model it carries."""
        idx = torch.as_tensor(payloads, device=self.device)
        got = self.inbox.index_select(0, idx)
        copy_rows(self.base, idx, got)
        copy_rows(self.bank.flat, idx, got)

    # ------------------------------------------------------------------ the server
    def on_message(self, t: float, msg, delivered: bool) -> None:
        if msg.dst == self.hub:                             # the server is never down
            self.uploads.append((t, msg.src, self.version - msg.data))
            self.server_receive(t, msg.src, msg.data, msg.id)
            self.reply(t, msg.src)
        elif delivered:
            i = msg.dst
            self.net.events.add(t, i, "receive", self.hub, msg.id)
            self.merged(i, t, msg.sent_at)
            self.act("receive", i, reads=[("in", i)], writes=[("b", i), ("x", i)])
            self.tau[i] = self.inbox_version[i]
            self.wake_at(i, t)
        else:
            self.restart(msg.dst, t)

    def reply(self, t: float, i: int) -> None:
        """The server sends its current model and version to client i."""
        outcome, _ = self.net.send(t, self.hub, self.down[i:i + 1], self.model_bytes)
        if outcome[0] != IN_FLIGHT:
            self.restart(i, t)
            return
        self.act("reply", i, reads=[("server",)], writes=[("in", i)])
        self.inbox_version[i] = self.version

    def act_reply(self, payloads: list[int]) -> None:
        idx = torch.as_tensor(payloads, device=self.device)
        copy_rows(self.inbox, idx, self.server_model[0].expand(len(idx), -1))

    def server_receive(self, t: float, i: int, tau: int, msg_id: int) -> None:
        """Fold client i's upload (its ``x_i``, started from version ``tau``) into the server
        model; bump :attr:`version` for each update of it."""
        raise NotImplementedError
