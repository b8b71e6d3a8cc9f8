"""D-PSGD's synchronous rounds in the event-driven engine (Lian, Zhang, Zhang, Hsieh, Zhang &
Liu, NeurIPS 2017, Algorithm 1: the round engine's ``dpsgd``), the reference point of AD-PSGD
(docs/async.md).

Client i's round r, at its own clock: it computes the gradient ``g_i = grad F_i(x_i^r)`` for as
long as the compute model says and sends ``x_i^r`` to its neighbours; it waits until every
neighbour's round-r message is resolved (:mod:`algorithms.round_barrier`), then mixes and steps,

    x_i^{r+1} = sum_j W_ij x_j^r - gamma g_i,   W_ij = 1 / (1 + max(deg_i, deg_j)) (Metropolis),

with the weight of a neighbour whose round-r model did not arrive put on i itself (the paper's
algorithm; the round engine's ``loss_recovery: none``), and starts round r + 1 with its gradient
at ``x_i^{r+1}``. A model from a neighbour already in a later round waits for its round. The
models are synchronous D-PSGD's with ``wait_all``; the clock of each client is its own.
"""
from __future__ import annotations

import numpy as np
import torch

from algorithms import register
from algorithms.async_base import AsyncAlgorithm
from algorithms.round_barrier import SynchronousRounds
from algorithms.snapshots import Snapshots
from netsim.errors import ConfigError
from netsim.runtime.mixing import metropolis_weights
from netsim.runtime.rows import copy_rows
from netsim.sim.async_net import IN_FLIGHT
from netsim.sim.grouping import Keys


@register("sync_dpsgd")
class SyncDPSGD(SynchronousRounds, AsyncAlgorithm):
    """Synchronous D-PSGD (Metropolis weights), each client waiting for its round's models,
    event by event. No parameters of its own: gamma is ``train.lr``."""

    def __init__(self, ctx):
        super().__init__(ctx)
        e = self.net.edges
        adj = np.zeros((self.n, self.n), bool)
        adj[e.src, e.dst] = True
        if not np.array_equal(adj, adj.T):
            raise ConfigError("network.topology.name", ctx.cfg["network"]["topology"]["name"],
                              "an undirected topology for sync_dpsgd (complete, ring, torus, "
                              "grid, small_world, scale_free, random_geometric)")
        self.weight = np.asarray(metropolis_weights(adj), float)[e.dst, e.src]   # W_ij per edge
        self.snaps = Snapshots(2 * self.n, self.bank.flat.shape[1], self.bank.flat.dtype,
                               self.device)
        self.init_rounds()

    def personal_models(self) -> torch.Tensor:
        return self.bank.flat

    # ------------------------------------------------------------------ events
    def start_step(self, i: int, t: float, k: int) -> None:
        """Round r = ``steps_done[i]``: mix the round-(r - 1) models that arrived and step
        (r > 0), then compute the gradient."""
        r = int(self.steps_done[i])
        used = self.take_held(i, lambda q: q == r - 1)
        slots, weights = np.zeros(0, np.int64), np.zeros(0)
        if used is not None:
            slots, weights = used.data, self.weight[used.edge]
            self.net.events.add_block(float(t), i, "use", used.src, used.id)
            self.merged(i, t, used.sent_at)
        self.act("wake", (i, k, r > 0, slots, weights),
                 reads=[("x", i), ("g", i), Keys("s", slots)],
                 writes=[("x", i), ("g", i)])
        self.snaps.release_many(slots)

    def act_wake(self, payloads: list[tuple[int, int, bool, np.ndarray, np.ndarray]]) -> None:
        """``x_i <- (1 - sum_j W_ij) x_i + sum_j W_ij s_j - gamma g_i`` over the models that
        arrived (where the round is not the first; one sparse product of the weights with the
        snapshot rows), then the gradients at the new ``x_i``."""
        dev, x = self.device, self.bank.flat
        step = [p for p in payloads if p[2]]
        if step:
            idx = torch.as_tensor([p[0] for p in step], device=dev)
            keep = torch.as_tensor([1.0 - p[4].sum() for p in step], dtype=x.dtype, device=dev)
            row = np.repeat(np.arange(len(step)), [len(p[3]) for p in step])
            at = torch.as_tensor(np.stack([row, np.concatenate([p[3] for p in step])]),
                                 dtype=torch.long, device=dev)
            w = torch.as_tensor(np.concatenate([p[4] for p in step]), dtype=x.dtype, device=dev)
            mix = torch.sparse_coo_tensor(at, w, (len(step), len(self.snaps.rows)),
                                          check_invariants=False)   # valid by construction
            new = x.index_select(0, idx).mul_(keep[:, None])
            new -= self.grads.index_select(0, idx).mul_(self.train.lr)
            copy_rows(x, idx, self.snaps.add_combination(new, mix))
        self.compute_grads([p[:2] for p in payloads], lambda idx: x.index_select(0, idx))

    def finish_step(self, i: int, t: float) -> None:
        """Send ``x_i^r`` to the neighbours; wait for theirs."""
        out = self.net.out_edges(i)
        sid = self.snaps.take()
        outcome, ids = self.net.send(t, i, out, self.model_bytes, data=sid)
        flying = ids[outcome == IN_FLIGHT]
        if flying.size:
            self.snaps.hold(sid, int(flying.size))
            self.act("snap", (i, sid), reads=[("x", i)], writes=[("s", sid)])
        else:
            self.snaps.untaken(sid)
            sid = -1
        self.round_sent(i, t, out, outcome, sid)

    def act_snap(self, payloads: list[tuple[int, int]]) -> None:
        i, sid = (torch.as_tensor(c, device=self.device) for c in zip(*payloads))
        copy_rows(self.snaps.rows, sid, self.bank.flat.index_select(0, i))
