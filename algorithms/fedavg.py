"""Server-based baselines over the simulated star network: FedAvg, FedAvg+FT, FedProx, Oracle.

A round (McMahan et al.): the server (node N) sends each sampled client
its model; a client that received it starts its E local steps at the arrival time; clients that
finish upload their models; the server averages what arrived before the receiver policy stops it,
``w_k <- sum_i n_i x_i / sum_i n_i`` over the arrived clients of group k. FedAvg has one group;
the Oracle has one per ground-truth cluster (cluster-wise FedAvg). With a deadline policy,
stragglers past the deadline are left out of the aggregate. Specification:
docs/specifications/baselines.md#fedavg.
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


@dataclass(frozen=True)
class ServerParams(Params):
    """The parameters of every server-based algorithm."""

    participation: float = param(1.0, "share of clients sampled per round",
                                 lo=0, hi=1, lo_open=True)
    weighting: Literal["data", "uniform"] = param(
        "data", "aggregation weights: training-set sizes or uniform")


class ServerAveraging(Algorithm):
    """FedAvg with one server model per group of clients (groups given by ``groups()``)."""

    server = True
    params = ServerParams
    hp: ServerParams

    def __init__(self, ctx):
        super().__init__(ctx)
        self.bank = self.new_bank()
        self.server_index = self.groups()
        self.onehot = torch.zeros(int(self.server_index.max()) + 1, self.n, device=self.device)
        self.regroup()
        sizes = self.data.n["train"].to(self.device, torch.float32)
        self.weight = sizes if self.hp.weighting == "data" else torch.ones_like(sizes)
        self.server_models = self.bank.flat[:1].repeat(len(self.onehot), 1).clone()
        self.m = max(1, int(round(self.hp.participation * self.n)))

    def groups(self) -> np.ndarray:
        """Group id of each client; one server model per group."""
        return np.zeros(self.n, int)

    def regroup(self) -> None:
        """From ``server_index``: ``group_of``, each client's server model (a copy on the device,
        so rebuilt after every change of ``server_index``), and the server's one-hot rows."""
        self.group_of = torch.tensor(self.server_index, device=self.device)
        self.onehot.zero_()
        self.onehot[self.group_of, torch.arange(self.n, device=self.device)] = 1.0

    def prox(self) -> tuple[float, torch.Tensor] | None:
        """FedProx's proximal anchor; None for plain FedAvg."""
        return None

    def round(self, t: int) -> None:
        t0 = self.net.now
        sampled = np.zeros(self.n, bool)
        sampled[self.rng.choice(self.n, self.m, replace=False)] = True
        comp, received = self.broadcast(sampled, self.bank.size_bytes)
        idx = self.index(received, self.device)
        self.bank.set_rows(idx, self.server_models[0] if len(self.server_models) == 1 else
                           self.server_models.index_select(0, self.group_of[idx]))
        self.bank.reset_momentum(idx)
        self.local_sgd(self.bank, self.train.local_steps,
                       clients=self.index(comp.finished, self.device), prox=self.prox())
        arrived = self.gather(comp, self.bank.size_bytes, t0)
        self.aggregate(torch.as_tensor(arrived, device=self.device))

    def aggregate(self, arrived: torch.Tensor) -> None:
        """``w_k <- sum_i a_ki n_i x_i / sum_i a_ki n_i`` over the arrived clients of group k."""
        a = self.onehot * (self.weight * arrived)[None, :]
        total = a.sum(1, keepdim=True)
        has = total[:, 0] > 0
        if bool(has.all()):                         # every group heard from: no masked copy
            torch.mm(a / total, self.bank.flat, out=self.server_models)
        else:
            self.server_models[has] = (a[has] / total[has]) @ self.bank.flat

    def personal_models(self) -> torch.Tensor:
        return self.server_models.index_select(0, self.group_of)

    def health(self) -> dict[str, tuple[torch.Tensor, torch.Tensor]]:
        """The personal models are the server models: each checked once."""
        return {"model": (self.server_models, self.group_of)}

    def collaboration(self) -> np.ndarray:
        a = (self.onehot * self.weight[None, :]).cpu().numpy()
        w = a[self.server_index]
        return w / w.sum(1, keepdims=True)


@register("fedavg")
class FedAvg(ServerAveraging):
    """FedAvg: one global model, data-size weighted averaging of the clients' local models."""

    group = "federated"  # the run table's group


@register("oracle")
class Oracle(ServerAveraging):
    """Oracle: FedAvg inside each ground-truth cluster (block-diagonal collaboration)."""

    group = "baselines"  # the run table's group

    def groups(self) -> np.ndarray:
        cluster = np.asarray(self.data.cluster)
        _, ids = np.unique(cluster, return_inverse=True)
        return ids

    @classmethod
    def check_config(cls, spec: dict, cfg: dict, path: str) -> None:
        if cfg["data"]["partition"]["name"] in ("iid", "dirichlet", "pathological"):
            raise ConfigError(f"{path}.name", "oracle", "a partition with ground-truth clusters",
                              f"partition {cfg['data']['partition']['name']!r} has none")


@dataclass(frozen=True)
class FedProxParams(ServerParams):
    """FedProx's parameters."""

    mu: float = param(0.1, "proximal weight mu", lo=0)


@register("fedprox")
class FedProx(ServerAveraging):
    """FedProx: local objective f_k(w) + mu/2 ||w - w^t||^2 (Li et al.), otherwise FedAvg."""

    group = "federated"  # the run table's group

    params = FedProxParams
    hp: FedProxParams

    def prox(self) -> tuple[float, torch.Tensor]:
        return self.hp.mu, self.personal_models()


@dataclass(frozen=True)
class FedAvgFTParams(ServerParams):
    """FedAvg+FT's parameters."""

    finetune_rounds: int | None = param(None, "rounds of local fine-tuning at the end (default: "
                                        "finetune_share of the rounds)", lo=1)
    finetune_share: float = param(0.2, "share of the rounds fine-tuned when finetune_rounds is "
                                  "null (at least one round), so that it follows schedule.rounds",
                                  lo=0, hi=1, lo_open=True)


@register("fedavg_ft")
class FedAvgFT(ServerAveraging):
    """FedAvg, then every client fine-tunes the global model locally for the last rounds."""

    group = "federated"  # the run table's group

    params = FedAvgFTParams
    hp: FedAvgFTParams

    def __init__(self, ctx):
        super().__init__(ctx)
        rounds = ctx.schedule.rounds
        self.ft = self.hp.finetune_rounds or max(1, int(self.hp.finetune_share * rounds))
        self.start_ft = rounds - self.ft
        self.tuning = False

    @classmethod
    def check_config(cls, spec: dict, cfg: dict, path: str) -> None:
        ft = spec["finetune_rounds"]
        if ft is not None and ft >= cfg["schedule"]["rounds"]:
            raise ConfigError(f"{path}.finetune_rounds", ft,
                              f"fewer than schedule.rounds = {cfg['schedule']['rounds']}",
                              "lower it too, or set it to null to fine-tune finetune_share of "
                              "the rounds")

    def round(self, t: int) -> None:
        if t < self.start_ft:
            super().round(t)
            return
        if not self.tuning:
            self.bank.flat.copy_(super().personal_models())
            self.bank.reset_momentum()
            self.tuning = True
        done = self.compute_phase(active=self.net.alive()).finished
        self.local_sgd(self.bank, self.train.local_steps, clients=self.index(done, self.device))

    def personal_models(self) -> torch.Tensor:
        return self.bank.flat if self.tuning else super().personal_models()

    def collaboration(self) -> np.ndarray:
        return np.eye(self.n) if self.tuning else super().collaboration()


@dataclass(frozen=True)
class FedProxFTParams(FedProxParams, FedAvgFTParams):
    """FedProx+FT's parameters: FedAvg+FT's, then FedProx's mu."""


@register("fedprox_ft")
class FedProxFT(FedAvgFT):
    """FedProx, then every client fine-tunes the global model locally for the last rounds."""

    params = FedProxFTParams
    hp: FedProxFTParams
    prox = FedProx.prox
