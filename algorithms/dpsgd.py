"""D-PSGD (Lian et al. 2017); specification: docs/specifications/baselines.md#d-psgd.

Undirected graph, Metropolis–Hastings weights ``W_ij = 1 / (1 + max(deg_i, deg_j))`` on the base
topology; ``x_i <- sum_j W_ij x_j - eta g_i(x_i)`` with the gradient at the pre-gossip point.

Missing messages (link down, lost, refused, late), ``loss_recovery``:

- ``none`` (default, the paper's algorithm): node i puts ``W_ij`` on itself. Rows stay
  stochastic but W is no longer doubly stochastic, so the network average drifts (frozen
  models of unit-variance values, 20 nodes, 20% loss: consensus within 100 rounds on a value
  0.035 per coordinate, 0.13 at most, off the initial average; tests/test_push_sum.py);
- ``running_sums``: push-sum with W as the (column-stochastic) split and running sums
  (:mod:`netsim.runtime.pushsum`): the share of a missed message arrives with the next one on
  that edge and the de-biased models ``z / w`` keep the exact average. Without loss it is
  D-PSGD (w stays 1); messages carry one more float (w).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from algorithms import register
from algorithms.gossip import Gossip
from netsim.errors import ConfigError
from netsim.runtime.mixing import metropolis_weights, mix as mix_rows
from netsim.runtime.pushsum import LossRecovery, PushSum, PushSumParams
from netsim.schema.params import param


@dataclass(frozen=True)
class DPSGDParams(PushSumParams):
    """D-PSGD's parameters: push-sum's, with the paper's loss handling by default."""

    loss_recovery: LossRecovery = param(
        "none", "none: a missing message's weight goes to the receiver (the paper; the average "
        "drifts); running_sums: push-sum with the Metropolis split and running sums (the average "
        "is kept)")


@register("dpsgd")
class DPSGD(Gossip):
    """Decentralised parallel SGD with Metropolis weights."""

    group = "decentralised"  # the run table's group

    params = DPSGDParams
    hp: DPSGDParams

    #: the mixing matrix kept for the results, the next one, the Metropolis weights (float64)
    #: and the round's boolean masks
    pair_bytes = 32

    def __init__(self, ctx):
        super().__init__(ctx)
        self.last_mixing = np.eye(self.n)
        adj = self.net.in_edges()
        if not np.array_equal(adj, adj.T):
            raise ConfigError("network.topology.name", ctx.cfg["network"]["topology"]["name"],
                              "an undirected topology for dpsgd (complete, ring, torus, grid, "
                              "small_world, scale_free, random_geometric)")
        self.weights = np.asarray(metropolis_weights(adj), float)
        self.push_sum = None
        if self.hp.loss_recovery == "running_sums":
            self.push_sum = PushSum.from_params(self.n, self.hp, self.push_sum_graph().draining,
                                                mass=self.net.store.mass)
            self.w = self.push_sum.fresh_weights(self.device)
            self.z = self.push_sum.bias(self.bank.flat, self.w)

    def collaboration(self) -> np.ndarray:
        return self.last_mixing

    def payload_bytes(self) -> float:
        return float(self.bank.size_bytes + (4 if self.push_sum else 0))

    def mixing(self, ex) -> np.ndarray:
        w = self.weights * ex.delivered
        np.fill_diagonal(w, 0.0)
        w[np.diag_indices(self.n)] = 1.0 - w.sum(axis=1)
        return w

    def round(self, t: int) -> None:
        ex, delta = self.step(t)
        if self.push_sum is not None:
            self.push_sum_round(ex, delta)
            return
        d = self.mixing(ex)
        self.last_mixing = d
        before = self.bank.flat - delta
        mix = torch.as_tensor(d, dtype=before.dtype, device=self.device)
        self.bank.flat.copy_(mix_rows(mix, before).add_(delta))

    def push_sum_round(self, ex, delta: torch.Tensor) -> None:
        """``z <- W z + held shares + delta``, ``w <- W w + held``; a node that sent nothing
        this round keeps its whole state (identity column of the split)."""
        e, requested = ex.edges, ex.per_edge["requested"]
        sent = np.zeros(self.n, bool)
        sent[e.src[requested]] = True
        own = np.where(sent, np.diag(self.weights), 1.0)
        self.z, self.w = self.push_sum.step_edges([self.z, self.w], e.key,
                                                  self.weights[e.dst, e.src], own, requested,
                                                  ex.per_edge["delivered"])
        self.last_mixing = self.push_sum.last_mixing
        self.push_sum.add_step(self.z, delta, self.w)
        self.push_sum.debias_into(self.bank.flat, self.z, self.w)

    def health(self) -> dict[str, torch.Tensor]:
        extra = {} if self.push_sum is None else {"push-sum weight": self.w}
        return {**super().health(), **extra}

    def personal_models(self) -> torch.Tensor:
        return self.bank.flat
