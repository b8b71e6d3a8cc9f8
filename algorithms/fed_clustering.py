"""Federated Clustering, FC (Werner et al., TMLR 2023); specification:
docs/specifications/baselines.md#federated-clustering.

Every client j has its own model x_j, held by the server (node N of a star). A step: the server
sends all N models to every client (N d floats); client i computes ``g_{i->j} = grad f_i(x_j)`` on
one mini-batch of its data for every model j (N gradients, one batched call for all clients);
then for each model to update, Threshold-Clustering (TC) aggregates the gradients, started at the
updated client's own gradient v:

    repeat R times:  tau = the q-quantile of {||g - v||} (sorted[floor(c q)] of the c candidates);
                     v <- (1/c) sum_g [ g if ||g - v|| <= tau else v ],

and the model takes a heavy-ball step ``m <- mu m + v; x <- x - eta m`` (mu = train.momentum).

- ``orientation: werner`` (default, PRFL code): model j aggregates ``{g_{i->j}}_i`` over the clients
  whose gradients reached the server (all N gradients uploaded, N d floats);
- ``orientation: cobo`` (CoBo's code transposes the roles): client i aggregates its own
  ``{g_{i->j}}_j`` over all models, starting at ``g_{i->i}``, and uploads only v_i (d floats).

``quantile: null`` takes the threshold from the true cluster sizes (index |C| - 1: the paper gives FC
the true clusters); CoBo's code uses 0.2 and R = 10. Collaboration: row r = the weight 1/c each
kept candidate had in the last TC average of r (the clustering).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np
import torch

from algorithms import register
from algorithms.base import Algorithm
from netsim.errors import ConfigError
from netsim.schema.params import Params, param


def threshold_clustering(cand: torch.Tensor, own: torch.Tensor, q_index: torch.Tensor,
                         rounds: int) -> tuple[torch.Tensor, torch.Tensor]:
    """TC for r rows at once: candidates ``cand[r, c, d]``, start ``own[r, d]``, the threshold
    rank ``q_index[r]`` among the c sorted distances. Returns ``(v[r, d], kept[r, c])``."""
    v = own
    rows = torch.arange(cand.shape[0], device=cand.device)
    kept = torch.ones(cand.shape[:2], dtype=torch.bool, device=cand.device)
    for _ in range(rounds):
        dist = (cand - v[:, None]).norm(dim=2)
        tau = dist.sort(dim=1).values[rows, q_index]
        kept = dist <= tau[:, None]
        v = torch.where(kept[..., None], cand, v[:, None]).mean(1)
    return v, kept


@dataclass(frozen=True)
class FCParams(Params):
    """Federated Clustering's parameters."""

    orientation: Literal["werner", "cobo"] = param(
        "werner", "werner: model j aggregates grad f_i(x_j) over i; cobo: client i aggregates grad "
        "f_i(x_j) over j (CoBo's code)")
    quantile: float | None = param(None, "TC threshold quantile q; null = from the true cluster "
                                   "sizes (CoBo's code: 0.2)", lo=0, hi=1)
    tc_rounds: int = param(3, "TC iterations R (PRFL runs 3, CoBo's code 10)", lo=1)


@register("fc")
class FederatedClustering(Algorithm):
    """Federated Clustering: per-model threshold clustering of all clients' gradients (Werner et al.)."""

    group = "clustered"  # the run table's group

    server = True
    params = FCParams
    hp: FCParams

    def __init__(self, ctx):
        super().__init__(ctx)
        self.bank = self.new_bank()
        self.buf = torch.zeros_like(self.bank.flat)
        cluster = np.asarray(self.data.cluster)
        self.cluster_size = (cluster[:, None] == cluster[None, :]).sum(1)
        self.W = np.eye(self.n)

    @classmethod
    def check_config(cls, spec: dict, cfg: dict, path: str) -> None:
        if spec["train"]["clip"] is not None:
            raise ConfigError(f"{path}.train.clip", spec["train"]["clip"], "null",
                              "FC steps with the aggregated gradient v; clipping is not defined")
        if spec["quantile"] is None and cfg["data"]["partition"]["name"] in (
                "iid", "dirichlet", "pathological"):
            raise ConfigError(f"{path}.quantile", None, "a float in [0, 1]",
                              f"partition {cfg['data']['partition']['name']!r} has no true clusters")

    def round(self, t: int) -> None:
        for _ in range(self.train.local_steps):
            self.step()

    def step(self) -> None:
        """One FC step: models down, N gradients per client, TC, heavy-ball step."""
        n, size = self.n, self.bank.size_bytes
        werner = self.hp.orientation == "werner"
        t0 = self.net.now
        comp, _ = self.broadcast(np.ones(n, bool), n * size, steps=n)
        arrived = np.flatnonzero(self.gather(comp, (n if werner else 1) * size, t0))
        if arrived.size == 0:
            return
        rows = torch.as_tensor(arrived, device=self.device)
        grads = self.cross_gradients(rows)                      # [m, N, d]: grad f_i(x_j)
        if werner:                                              # model j <- its arrived senders
            cand = grads[:, rows].transpose(0, 1)
            cols = arrived
        else:                                                   # client i <- its own gradients
            cand = grads
            cols = np.arange(n)
        own = cand[torch.arange(len(arrived)), torch.as_tensor(np.searchsorted(cols, arrived))]
        v, kept = threshold_clustering(cand, own, self.threshold_rank(arrived, len(cols)),
                                       self.hp.tc_rounds)
        self.W[arrived] = 0.0
        self.W[np.ix_(arrived, cols)] = kept.cpu().numpy() / len(cols)
        self.heavy_ball(rows, v)

    def cross_gradients(self, rows: torch.Tensor) -> torch.Tensor:
        """``grad f_i(x_j)`` for the listed clients i and every model j, one batch per client."""
        n, m = self.n, rows.numel()
        x, y = self.data.sample_batch("train", self.train.batch_size, self.gen, rows)
        owners = rows.repeat_interleave(n)
        _, g = self.bank.grad(x.repeat_interleave(n, 0), y.repeat_interleave(n, 0), owners,
                              flat=self.bank.flat.repeat(m, 1))
        self.bank.track_statistics(x, clients=rows)      # BatchNorm: each model on its owner's batch
        return g.view(m, n, -1)

    def threshold_rank(self, updated: np.ndarray, c: int) -> torch.Tensor:
        """Rank of tau among the c sorted distances for each updated row."""
        q = self.hp.quantile
        rank = (self.cluster_size[updated] - 1 if q is None
                else np.full(len(updated), int(np.floor(c * q))))
        return torch.as_tensor(np.clip(rank, 0, c - 1), device=self.device)

    def heavy_ball(self, rows: torch.Tensor, v: torch.Tensor) -> None:
        """``m <- mu m + (v + wd x); x <- x - eta m`` for the updated rows."""
        tr = self.train
        x = self.bank.flat[rows]
        m = tr.momentum * self.buf[rows] + v + tr.weight_decay * x
        self.buf[rows] = m
        self.bank.flat[rows] = x - tr.lr * m

    def personal_models(self) -> torch.Tensor:
        return self.bank.flat

    def collaboration(self) -> np.ndarray:
        return self.W.copy()
