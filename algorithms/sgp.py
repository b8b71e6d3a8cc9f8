"""Stochastic Gradient Push (Assran et al. 2019; Nedić & Olshevsky 2016); specification:
docs/specifications/baselines.md#sgp (and, as PDBO's inner solver,
docs/specifications/pdbo.md#inner-solver-sgp).

Push-sum over time-varying directed links: node j splits its state uniformly over its realised
out-neighbours and itself, ``p_{j->i} = delta_{j->i} / (1 + sum_k delta_{j->k})`` (column
stochastic), and every message carries the biased parameters and the push-sum weight together.

- ``form: nedic`` (default, the PDBO authors' experiments): ``z_i <- sum_j p_{j->i} z_j - gamma g_i``,
  ``w_i <- sum_j p_{j->i} w_j``, gradients at the de-biased ``x_i = z_i / w_i``;
- ``form: assran`` (SGP paper, Alg. 1, local step first): ``phi_j = w_j x_j'`` with ``x_j'`` the
  de-biased model after its local steps, ``z_i <- sum_j p_{j->i} phi_j`` (Alg. 1 adds the
  unscaled step ``-gamma g_j`` to ``z_j``; the two agree while ``w_j = 1``).

Missed messages (lost, refused by a budget, late): with ``loss_recovery: running_sums`` (default)
their mass arrives with the next message that gets through on that edge, so ``sum z`` and
``sum w`` (plus the mass in flight) are conserved; with ``none`` (the papers' idealised
push-sum) it is lost. See :mod:`netsim.runtime.pushsum`.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np
import torch

from algorithms import register
from algorithms.gossip import Gossip
from netsim.runtime.pushsum import PushSum, PushSumParams
from netsim.schema.params import param
from topologies.generators import exponential_peer


@dataclass(frozen=True)
class SGPParams(PushSumParams):
    """SGP's parameters."""

    form: Literal["nedic", "assran"] = param(
        "nedic", "nedic (own gradient added once) or assran (Alg. 1)")
    peers: Literal["all", "exponential"] = param(
        "all", "all out-neighbours of the topology, or one rotating exponential-graph peer per "
        "step (SGP's default)")


@register("sgp")
class SGP(Gossip):
    """Stochastic Gradient Push over the realised directed links."""

    group = "decentralised"  # the run table's group

    params = SGPParams
    hp: SGPParams

    def __init__(self, ctx):
        super().__init__(ctx)
        graph = self.push_sum_graph() if self.hp.peers == "all" else None
        self.push_sum = PushSum.from_params(self.n, self.hp,
                                            None if graph is None else graph.draining,
                                            mass=self.net.store.mass)
        self.w = self.push_sum.fresh_weights(self.device)
        self.z = self.push_sum.bias(self.bank.flat, self.w)

    def requests(self, t: int) -> np.ndarray:
        if self.hp.peers == "all":
            return super().requests(t)
        req = np.zeros((self.n, self.n), bool)
        req[exponential_peer(self.n, t), np.arange(self.n)] = True
        return req

    def payload_bytes(self) -> float:
        return float(self.bank.size_bytes + 4)

    def round(self, t: int) -> None:
        ex, delta = self.step(t)
        z = self.z if self.hp.form == "nedic" else self.push_sum.bias(self.bank.flat, self.w)
        e = ex.edges
        z, w = self.push_sum.step_uniform([z, self.w], e.key, e.src, ex.per_edge["link_up"],
                                          ex.per_edge["delivered"])
        self.w = w
        self.z = self.push_sum.add_step(z, delta, w) if self.hp.form == "nedic" else z
        self.push_sum.debias_into(self.bank.flat, self.z, self.w)

    def collaboration(self) -> np.ndarray:
        return self.push_sum.last_mixing

    def health(self) -> dict[str, torch.Tensor]:
        return {**super().health(), "push-sum weight": self.w}

    def personal_models(self) -> torch.Tensor:
        return self.bank.flat
