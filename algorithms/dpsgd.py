"""D-PSGD (Lian et al. 2017), ALGORITHMS.md section 5.

Undirected graph, Metropolis–Hastings weights ``W_ij = 1 / (1 + max(deg_i, deg_j))`` on the base
topology; ``x_i <- sum_j W_ij x_j - eta g_i(x_i)`` with the gradient at the pre-gossip point.
When the message from j does not arrive, node i puts ``W_ij`` on itself (rows stay stochastic;
double stochasticity and hence the exact average are lost for that round — a documented bias).
"""
from __future__ import annotations

import numpy as np
import torch

from algorithms import register
from algorithms.gossip import Gossip
from netsim.errors import ConfigError
from netsim.runtime.mixing import metropolis_weights, mix as mix_rows


@register("dpsgd")
class DPSGD(Gossip):
    """Decentralised parallel SGD with Metropolis weights; missing weight goes to the receiver."""

    def __init__(self, ctx):
        super().__init__(ctx)
        adj = self.sim.adjacency
        if not np.array_equal(adj, adj.T):
            raise ConfigError("network.topology.name", ctx.cfg["network"]["topology"]["name"],
                              "an undirected topology for dpsgd (complete, ring, torus, grid, "
                              "small_world, scale_free, random_geometric)")
        self.weights = np.asarray(metropolis_weights(adj), float)

    def mixing(self, ex) -> np.ndarray:
        w = self.weights * ex.delivered
        np.fill_diagonal(w, 0.0)
        w[np.diag_indices(self.n)] = 1.0 - w.sum(axis=1)
        return w

    def round(self, t: int) -> None:
        ex, delta = self.step(t)
        d = self.mixing(ex)
        self.last_mixing = d
        before = self.bank.flat - delta
        mix = torch.as_tensor(d, dtype=before.dtype, device=self.device)
        self.bank.flat.copy_(mix_rows(mix, before) + delta)

    def personal_models(self) -> torch.Tensor:
        return self.bank.flat
