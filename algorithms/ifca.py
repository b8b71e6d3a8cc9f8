"""IFCA: Iterative Federated Clustering Algorithm (Ghosh et al., NeurIPS 2020); specification:
docs/specifications/baselines.md#ifca.

The server (node N of a star) keeps K cluster models ``theta_1..theta_K``, initialised
independently. A round: the server sends all K models to the sampled clients (K d floats each);
a client that received them picks ``j_i = argmin_j F_i(theta_j)`` (its loss on its whole training
set, ``select: data``, Ghosh et al.; or on one fresh mini-batch per model, ``select: batch``, CoBo's
code), runs E local SGD steps from ``theta_{j_i}`` and uploads its model and ``j_i``; the server
sets ``theta_j`` to the mean of the arrived models of cluster j (``aggregation: mean``) or adds their
summed updates (``aggregation: sum``: CoBo's code steps each centre with the summed gradients of its
clients). K is the true number of clusters unless given. Personalised model: the model of the
client's last chosen cluster; collaboration: the same-cluster indicator.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np
import torch

from algorithms import register
from algorithms.fedavg import ServerAveraging, ServerParams
from netsim.errors import ConfigError
from netsim.runtime import ClientBank
from netsim.runtime.rows import copy_rows
from netsim.schema.params import param


@dataclass(frozen=True)
class IFCAParams(ServerParams):
    """IFCA's parameters."""

    weighting: Literal["data", "uniform"] = param(
        "uniform", "aggregation weights: uniform (IFCA's code) or training-set sizes")
    clusters: int | None = param(None, "K cluster models; null = the true number of clusters", lo=1)
    select: Literal["data", "batch"] = param(
        "data", "choose the cluster by the loss on the whole training set (Ghosh et al.) or on one "
        "mini-batch per model (CoBo's code)")
    aggregation: Literal["mean", "sum"] = param(
        "mean", "new centre: mean of the members' models, or centre + sum of their updates (CoBo's "
        "code)")


@register("ifca")
class IFCA(ServerAveraging):
    """IFCA: K cluster models; each client trains the one with the lowest loss on its data."""

    group = "clustered"  # the run table's group

    params = IFCAParams
    hp: IFCAParams

    def __init__(self, ctx):
        self.k = ctx.spec["clusters"] or len(np.unique(ctx.data.cluster))
        super().__init__(ctx)
        init = ClientBank(ctx.model, self.k, self.device, ctx.streams.torch("init", "cpu"),
                          task=self.data.task, same_init=False)
        self.server_models = init.flat
        self.onehot = torch.zeros(self.k, self.n, device=self.device)
        self.assign(self.index(np.ones(self.n, bool), self.device),
                    torch.zeros(self.n, dtype=torch.long))   # cluster 0 until the first choice
        self.train_split = self.data.full("train")

    @classmethod
    def check_config(cls, spec: dict, cfg: dict, path: str) -> None:
        k = spec["clusters"]
        if k is None and cfg["data"]["partition"]["name"] in ("iid", "dirichlet", "pathological"):
            raise ConfigError(f"{path}.clusters", None, "an int >= 1",
                              f"partition {cfg['data']['partition']['name']!r} has no true clusters")
        if k is not None and k > cfg["clients"]:
            raise ConfigError(f"{path}.clusters", k, f"an int in [1, {cfg['clients']}]")

    def round(self, t: int) -> None:
        size, t0 = self.bank.size_bytes, self.net.now
        sampled = np.zeros(self.n, bool)
        sampled[self.rng.choice(self.n, self.m, replace=False)] = True
        comp, received = self.broadcast(sampled, self.k * size)     # all K models down
        idx = self.index(received, self.device)
        if idx.numel():
            self.assign(idx, self.choose(idx))
        copy_rows(self.bank.flat, idx, self.server_models[self.group_of[idx]])
        self.bank.reset_momentum(idx)
        start = self.bank.flat.clone()
        self.local_sgd(self.bank, self.train.local_steps,
                       clients=self.index(comp.finished, self.device))
        arrived = torch.as_tensor(self.gather(comp, size + 8, t0), device=self.device)  # + cluster id
        if self.hp.aggregation == "mean":
            self.aggregate(arrived)
        else:
            self.server_models += (self.onehot * arrived[None, :]) @ (self.bank.flat - start)

    def choose(self, idx: torch.Tensor) -> torch.Tensor:
        """``argmin_j F_i(theta_j)`` for the listed clients (first index on ties)."""
        if self.hp.select == "data":
            x, y, mask = self.train_split
            x, y, mask = x[idx], y[idx], mask[idx]
        else:
            x = y = None
        losses = []
        for j in range(self.k):                      # a loop over the K candidate models
            rows = self.server_models[j].expand(idx.numel(), -1)
            if x is None:
                xb, yb = self.data.sample_batch("train", self.train.batch_size, self.gen, idx)
                losses.append(self.bank.loss(xb, yb, idx, flat=rows))
            else:
                losses.append(self.bank.evaluate(x, y, mask, idx, flat=rows)[1])
        return torch.stack(losses, 1).argmin(1)

    def assign(self, idx: torch.Tensor, cluster: torch.Tensor) -> None:
        """Move the listed clients to their chosen clusters (``server_index``, then
        :meth:`regroup`)."""
        self.server_index[idx.cpu().numpy()] = cluster.cpu().numpy()
        self.regroup()
