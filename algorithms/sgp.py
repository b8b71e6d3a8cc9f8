"""Stochastic Gradient Push (Assran et al. 2019; Nedić & Olshevsky 2016), ALGORITHMS.md 4.2 / 5.

Push-sum over time-varying directed links: node j splits its state uniformly over its realised
out-neighbours and itself, ``p_{j->i} = delta_{j->i} / (1 + sum_k delta_{j->k})`` (column
stochastic), and every message carries the biased parameters and the push-sum weight together.

- ``form: nedic`` (default, the PDBO authors' experiments): ``z_i <- sum_j p_{j->i} z_j - gamma g_i``,
  ``w_i <- sum_j p_{j->i} w_j``, gradients at the de-biased ``x_i = z_i / w_i``;
- ``form: assran`` (SGP paper, Alg. 1): ``phi_j = z_j - gamma g_j``; ``z_i <- sum_j p_{j->i} phi_j``.

A message that is lost or late is mass lost for that round (the sender already gave it away);
when nothing is lost, ``sum_i z_i`` and ``sum_i w_i`` are conserved exactly.
"""
from __future__ import annotations

import numpy as np
import torch

from algorithms import register
from algorithms.gossip import Gossip
from netsim.runtime.mixing import mix as mix_rows
from netsim.schema import Field
from topologies.generators import exponential_peer


def push_sum_weights(link_up: np.ndarray) -> np.ndarray:
    """Column-stochastic ``P[i, j] = p_{j->i}`` uniform over j's realised out-links and itself."""
    up = np.asarray(link_up, bool).copy()
    np.fill_diagonal(up, True)
    return up / up.sum(axis=0, keepdims=True)


def push_sum_step(z: torch.Tensor, w: torch.Tensor, mix: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """One push-sum combination ``z <- D z``, ``w <- D w`` with D = P masked by delivery."""
    return mix_rows(mix, z), mix_rows(mix, w)


@register("sgp")
class SGP(Gossip):
    """Stochastic Gradient Push over the realised directed links."""

    fields = {
        "form": Field("str", "nedic", "nedic (own gradient added once) or assran (Alg. 1)",
                      choices=("nedic", "assran")),
        "peers": Field("str", "all", "all out-neighbours of the topology, or one rotating "
                       "exponential-graph peer per step (SGP's default)", choices=("all", "exponential")),
    }

    def __init__(self, ctx):
        super().__init__(ctx)
        self.z = self.bank.flat.clone()
        self.w = torch.ones(self.n, 1, device=self.device)

    def requests(self, t: int) -> np.ndarray:
        if self.p["peers"] == "all":
            return super().requests(t)
        req = np.zeros((self.n, self.n), bool)
        req[exponential_peer(self.n, t), np.arange(self.n)] = True
        return req

    def payload_bytes(self) -> float:
        return float(self.bank.size_bytes + 4)

    def mixing(self, ex) -> np.ndarray:
        p = push_sum_weights(ex.link_up)
        return p * (ex.delivered | np.eye(self.n, dtype=bool))

    def round(self, t: int) -> None:
        ex, delta = self.step(t)
        d = self.mixing(ex)
        self.last_mixing = d
        mix = torch.as_tensor(d, dtype=self.z.dtype, device=self.device)
        if self.p["form"] == "nedic":
            z, w = push_sum_step(self.z, self.w, mix)
            z = z + delta
        else:
            z, w = push_sum_step(self.bank.flat * self.w, self.w, mix)
        self.z, self.w = z, w
        self.bank.flat.copy_(z / w)

    def personal_models(self) -> torch.Tensor:
        return self.bank.flat
