"""Ditto (Li et al., ICML 2021) over the simulated star network; specification:
docs/specifications/baselines.md#ditto.

Each client keeps a personal model v_k next to its copy of the global model. A round is FedAvg's
(server = node N): the sampled clients that receive the global model ``w^t`` run E local steps,
each on one mini-batch used for both models:

- personal: ``v_k <- v_k - eta (grad f_k(v_k) + lambda (v_k - w^t))`` (Li et al., eq. 2 with the
  round-start global model as anchor);
- global copy: ``w_k <- w_k - eta grad f_k(w_k)`` (``global_grad: global``, Li et al.) or
  ``w_k <- w_k - eta grad f_k(v_k)`` (``global_grad: personal``: CoBo's code updates the global
  model with the personal models' gradients, plain SGD);

and the server averages the returned global copies, ``w <- w + mean_k (w_k - w^t)`` (uniform by
default, as in Ditto's code). Personalised model: v_k. Collaboration: uniform (everyone shares one
global model).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import torch

from algorithms import register
from algorithms.fedavg import ServerAveraging, ServerParams
from netsim.errors import ConfigError
from netsim.schema.params import param


@dataclass(frozen=True)
class DittoParams(ServerParams):
    """Ditto's parameters."""

    weighting: Literal["data", "uniform"] = param(
        "uniform", "aggregation weights: uniform (Ditto's code) or training-set sizes")
    lam: float = param(1.0, "lambda: pull of the personal model to the global one (CoBo vision 1, "
                       "LLM 0.1; DPFL 0.75)", lo=0)
    global_grad: Literal["global", "personal"] = param(
        "global", "gradient of the global copy's step: at the global copy (Li et al.) or at the "
        "personal model (CoBo's code)")


@register("ditto")
class Ditto(ServerAveraging):
    """Ditto: personal models regularised towards a FedAvg global model (lambda)."""

    group = "federated"  # the run table's group

    params = DittoParams
    hp: DittoParams

    def __init__(self, ctx):
        super().__init__(ctx)
        self.personal = self.new_bank()

    @classmethod
    def check_config(cls, spec: dict, cfg: dict, path: str) -> None:
        if spec["global_grad"] == "personal":
            for key in ("momentum", "weight_decay", "clip"):
                if spec["train"][key]:
                    raise ConfigError(f"{path}.train.{key}", spec["train"][key],
                                      "0 or null with global_grad: personal",
                                      "CoBo's Ditto steps both models with plain SGD")

    def local_sgd(self, bank, steps: int, clients: torch.Tensor | None = None,
                  prox=None) -> None:
        """E steps of the global copy (``bank``) and of the personal models on the same batches."""
        tr = self.train
        anchor = bank.flat.clone()                      # w^t: the global model just received
        for _ in range(steps):
            x, y = self.data.sample_batch("train", tr.batch_size, self.gen, clients)
            if self.hp.global_grad == "global":
                bank.sgd_step(x, y, tr.sgd, clients=clients)
                self.personal.sgd_step(x, y, tr.sgd, clients=clients, prox=(self.hp.lam, anchor))
            else:
                _, g = self.personal.grad(x, y, clients, track=True)  # BatchNorm, as a step
                bank.track_statistics(x, clients=clients)     # the global copy has no forward
                v = self.personal.flat[clients]
                self.personal.flat[clients] = v - tr.lr * (g + self.hp.lam * (v - anchor[clients]))
                bank.flat[clients] = bank.flat[clients] - tr.lr * g

    def personal_models(self) -> torch.Tensor:
        return self.personal.flat
