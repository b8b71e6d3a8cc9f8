"""FedAvg's synchronous rounds in the event-driven engine (McMahan, Moore, Ramage, Hampson &
Agüera y Arcas, AISTATS 2017, Algorithm 1 with every client each round: the round engine's
``fedavg``), the reference point of FedBuff and FedAsync (docs/async.md).

Round r, on the star of :mod:`algorithms.async_server` (the server is node N):

- client i, from the round-r server model ``b_i``, runs ``train.local_steps`` plain SGD steps
  (as long as the compute model says), uploads its model and waits for the next one;
- the server waits until every client's round-r upload is resolved (delivered; at once when it
  was not sent or was lost; a client down for good is no longer waited for), then sets its
  model to the average of the uploads it received, weighted by the clients' training-set sizes
  (the model stays when none arrived), and sends it to every client;
- a client starts round r + 1 from the model when it arrives; one whose reply does not reach it
  (link down, budget, loss, the client down then) starts round r + 1 at once from ``b_i``.

So the models are synchronous FedAvg's with ``wait_all`` (the average of the uploads that
arrive), and the round lasts until the slowest client's upload is in.
"""
from __future__ import annotations

import torch

from algorithms import register
from algorithms.async_server import AsyncServerAlgorithm
from netsim.sim.async_net import IN_FLIGHT


@register("sync_fedavg")
class SyncFedAvg(AsyncServerAlgorithm):
    """Synchronous FedAvg (every client every round, data-size weights), the server waiting
    for the round's uploads, event by event."""

    def __init__(self, ctx):
        super().__init__(ctx)
        self.weight = self.data.n["train"].to(self.device, self.bank.flat.dtype)
        self.server_round = 0                # uploads of this round count
        self.need = self.n                   # uploads it waits for this round
        self.resolved: set[int] = set()      # clients whose round upload is resolved
        self.got: list[int] = []             # ... and arrived
        self.lost_for_good: set[int] = set()

    def finish_step(self, i: int, t: float) -> None:
        """Upload; wait for the next model."""
        outcome, _ = self.net.send(t, i, self.up[i:i + 1], self.model_bytes,
                                   data=self.server_round)
        if outcome[0] != IN_FLIGHT:
            self._resolve(i, t)

    def on_message(self, t: float, msg, delivered: bool) -> None:
        if msg.dst != self.hub:
            super().on_message(t, msg, delivered)          # the new model (or its loss)
            return
        self.net.events.add(t, self.hub, "buffer", msg.src, msg.id)
        self.uploads.append((t, msg.src, self.version - msg.data))
        self.got.append(msg.src)
        self._resolve(msg.src, t)

    def gone(self, i: int, t: float) -> None:
        self.lost_for_good.add(i)
        if i not in self.resolved:
            self.need -= 1
            self._aggregate_when_ready(t)

    def _resolve(self, i: int, t: float) -> None:
        self.resolved.add(i)
        self._aggregate_when_ready(t)

    def _aggregate_when_ready(self, t: float) -> None:
        """Every upload of the round resolved: average, then send the model to every client
        still in the run."""
        if len(self.resolved) < self.need:
            return
        got = sorted(self.got)
        self.net.events.add(t, self.hub, "update", -1, self.version + 1)
        if got:
            self.act("average", tuple(got), reads=[("x", i) for i in got], writes=[("server",)])
        self.version += 1
        self.server_round += 1
        self.resolved, self.got = set(), []
        self.need = self.n - len(self.lost_for_good)
        for i in range(self.n):
            if i not in self.lost_for_good and not self.stopped[i]:
                self.reply(t, i)

    def act_average(self, payloads: list[tuple[int, ...]]) -> None:
        """The server model: the data-weighted mean of the uploads (one round per call:
        rounds conflict)."""
        for got in payloads:
            idx = torch.as_tensor(got, device=self.device)
            w = self.weight[idx]
            self.server_model[0] = (w[:, None] * self.bank.flat[idx]).sum(0) / w.sum()
