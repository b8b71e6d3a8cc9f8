"""pFedGraph (Ye et al., ICML 2023), cosine variant, as specified in
docs/specifications/baselines.md#pfedgraph.

Server-based (the server is node N of a star, like FedAvg). Per round, for the clients whose
upload arrived:

1. local training: E SGD steps on ``CE + s lam <c_i, θ> / ||θ||`` (from the second round on), with
   ``c_i = sum_j A_ij θ_j / ||θ_j||`` sent by the server; ``s = +1`` as released (``reg_sign:
   released``, which lowers the cosine to c_i) or ``s = -1`` (``pull``, towards c_i);
2. graph: ``Δθ_j = θ_j - θ_init`` (the common initial model), ``d_ij = -cos(Δθ_i, Δθ_j)``, set to -1
   where ``d_ij < -threshold``; each row solves the QP
   ``min_a alpha a^T a + (d_i - 2 alpha p)^T a  s.t. a >= 0, sum a = 1`` (self included; p = data
   fractions of the round's clients). Since ``alpha a^T a + (d - 2 alpha p)^T a
   = alpha ||a - (p - d / (2 alpha))||^2 + const``, the solution is the Euclidean projection of
   ``p - d_i / (2 alpha)`` onto the simplex, computed exactly for all rows at once
   (:func:`project_simplex`, Held et al. 1974 / Duchi et al. 2008);
3. personalised aggregation ``θ_i <- sum_j A_ij θ_j`` and the new ``c_i``.

Messages: model down (plus c_i once a graph exists: 2d) and model up. The initial graph is
``1/(N-1)`` off the diagonal, 0 on it (unused: the first aggregation overwrites it).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np
import torch
from torch import Tensor

from algorithms import register
from algorithms.fedavg import ServerAveraging, ServerParams
from netsim.runtime import ClientBank
from netsim.schema.params import param


def project_simplex(v: Tensor) -> Tensor:
    """Row-wise Euclidean projection of ``v[K, m]`` onto ``{a >= 0, sum a = 1}``."""
    u, _ = torch.sort(v, dim=1, descending=True)
    css = u.cumsum(1) - 1.0
    k = torch.arange(1, v.shape[1] + 1, device=v.device, dtype=v.dtype)
    # at least 1: a non-finite row keeps no entry, and must reach the health check as NaN rather
    # than index the gather out of bounds (a device-side assert on CUDA)
    rho = (u - css / k > 0).sum(1, keepdim=True).clamp(min=1)
    theta = css.gather(1, rho - 1) / rho.to(v.dtype)
    return (v - theta).clamp(min=0)


def graph_rows(delta: Tensor, p: Tensor, alpha: float, threshold: float) -> Tensor:
    """pFedGraph's QP for every row: the optimal ``A[K, K]`` from the updates ``Δθ[K, d]`` and the
    data fractions ``p[K]``."""
    unit = delta / delta.norm(dim=1, keepdim=True).clamp(min=1e-12)
    d = -(unit @ unit.T)
    d = torch.where(d < -threshold, torch.full_like(d, -1.0), d)
    return project_simplex(p[None, :] - d / (2.0 * alpha))


def cosine_regulariser_grad(theta: Tensor, c: Tensor, lam: float) -> Tensor:
    """Gradient of ``lam <c, θ> / ||θ||`` for each row: ``lam (c / ||θ|| - <c, θ> θ / ||θ||^3)``."""
    norm = theta.norm(dim=1, keepdim=True).clamp(min=1e-12)
    dot = (c * theta).sum(1, keepdim=True)
    return lam * (c / norm - dot * theta / norm ** 3)


@dataclass(frozen=True)
class PFedGraphParams(ServerParams):
    """pFedGraph's parameters."""

    alpha: float = param(0.8, "QP weight alpha of the data-size prior p", lo=0, lo_open=True)
    lam: float = param(0.01, "weight lam of the cosine regulariser", lo=0)
    reg_sign: Literal["released", "pull"] = param(
        "released", "released: +lam (the code; pushes θ away from c_i); pull: -lam (towards c_i, "
        "the paper's intent)")
    threshold: float = param(0.9, "d_ij = -cos(Δθ_i, Δθ_j) below -threshold becomes -1", lo=0, hi=1)


@register("pfedgraph")
class PFedGraph(ServerAveraging):
    """pFedGraph: cosine-similarity collaboration graph from a per-client QP (server-based)."""

    group = "learned graph"  # the run table's group

    params = PFedGraphParams
    hp: PFedGraphParams

    def __init__(self, ctx):
        super().__init__(ctx)
        self.theta_init = self.bank.flat[0].clone()
        self.graph = (np.ones((self.n, self.n)) - np.eye(self.n)) / max(self.n - 1, 1)
        self.cluster: Tensor | None = None
        self.sign = 1.0 if self.hp.reg_sign == "released" else -1.0

    def groups(self) -> np.ndarray:
        """One personalised server model per client."""
        return np.arange(self.n)

    def broadcast(self, to: np.ndarray, nbytes, steps: int | None = None):
        """The server's messages carry θ_i and c_i (2d) once a graph exists."""
        return super().broadcast(to, nbytes * (2 if self.cluster is not None else 1), steps)

    def local_sgd(self, bank: ClientBank, steps: int, clients: Tensor | None = None,
                  prox=None) -> None:
        """E SGD steps on ``CE + s lam <c_i, θ> / ||θ||`` (plain SGD before the first graph)."""
        if self.cluster is None:
            super().local_sgd(bank, steps, clients)
            return
        tr, c = self.train, self.cluster[clients]
        for _ in range(steps):
            x, y = self.data.sample_batch("train", tr.batch_size, self.gen, clients)
            extra = cosine_regulariser_grad(bank.flat[clients], c, self.sign * self.hp.lam)
            bank.sgd_step(x, y, tr.sgd, clients=clients,
                          extra_grad=extra)

    def aggregate(self, arrived: Tensor) -> None:
        """Graph rows of the arrived clients (QP), then ``θ_i <- sum_j A_ij θ_j`` and ``c_i``."""
        s = arrived.nonzero().squeeze(1)
        if s.numel() == 0:
            return
        theta = self.bank.flat[s]
        p = self.weight[s] / self.weight[s].sum()
        a = graph_rows(theta - self.theta_init, p.to(theta.dtype), self.hp.alpha,
                       self.hp.threshold)
        rows = s.cpu().numpy()
        self.graph[rows] = 0.0
        self.graph[np.ix_(rows, rows)] = a.cpu().numpy()
        self.server_models[s] = a @ theta
        if self.cluster is None:
            self.cluster = torch.zeros_like(self.bank.flat)
        self.cluster[s] = a @ (theta / theta.norm(dim=1, keepdim=True).clamp(min=1e-12))

    def collaboration(self) -> np.ndarray:
        return self.graph
