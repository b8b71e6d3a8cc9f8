"""APFL: adaptive personalised federated learning (Deng, Kamani, Mahdavi 2020); specification:
docs/specifications/baselines.md#apfl.

FedAvg over the simulated star (``ServerAveraging``: model down, E local steps, model up, data-size
weighted average) where every client also keeps a personal model v_i and a mixing weight alpha_i;
its personalised model is ``vbar_i = alpha_i v_i + (1 - alpha_i) w`` with w the server model.
Each local step, on one mini-batch xi:

- ``w_i <- w_i - eta grad f_i(w_i; xi)`` (the global copy, FedAvg's step);
- ``v_i <- v_i - eta grad_v f_i(vbar_i; xi) = v_i - eta alpha_i grad f_i(vbar_i; xi)``, with
  ``vbar_i = alpha_i v_i + (1 - alpha_i) w_i`` at the pre-step models;
- adaptive alpha (``adaptive: true``):
  ``alpha_i <- clip(alpha_i - eta_a (<v_i - w_i, grad f_i(vbar_i; xi)> + reg alpha_i), 0, 1)``,
  the exact derivative of f_i(vbar_i) in alpha_i, every step (Deng et al., Alg. 1); FedTorch's
  ``alpha_update`` approximates grad f_i(vbar) by ``alpha g_v + (1 - alpha) g_w``, adds
  ``0.02 alpha`` (``alpha_reg``) and updates once per round.

Defaults follow DiPLe's baseline: fixed alpha = 0.25. v_i is plain SGD (no momentum); the global
copy uses the scenario's optimiser like FedAvg.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from algorithms import register
from algorithms.fedavg import ServerAveraging, ServerParams
from netsim.runtime import ClientBank
from netsim.runtime.rows import copy_rows
from netsim.schema.params import param


@dataclass(frozen=True)
class APFLParams(ServerParams):
    """APFL's parameters."""

    alpha: float = param(0.25, "mixing weight alpha of the personal model (the initial value when "
                         "adaptive)", lo=0, hi=1)
    adaptive: bool = param(False, "learn alpha_i by SGD on f_i(vbar_i) every local step; false = "
                           "fixed alpha")
    alpha_lr: float | None = param(None, "step size of the alpha update; null = train.lr", lo=0)
    alpha_reg: float = param(0.0, "regulariser of the alpha update (FedTorch: 0.02)", lo=0)


@register("apfl")
class APFL(ServerAveraging):
    """APFL: personal model mixed with the FedAvg model, alpha fixed or adaptive (Deng et al.)."""

    group = "federated"  # the run table's group

    params = APFLParams
    hp: APFLParams

    def __init__(self, ctx):
        super().__init__(ctx)
        self.v = self.bank.flat.clone()
        self.alpha = torch.full((self.n,), self.hp.alpha, dtype=self.v.dtype, device=self.device)
        self.alpha_lr = self.train.lr if self.hp.alpha_lr is None else self.hp.alpha_lr

    def local_sgd(self, bank: ClientBank, steps: int, clients: torch.Tensor | None = None,
                  prox: tuple[float, torch.Tensor] | None = None) -> None:
        """E local APFL steps of the listed clients: global copy, personal model, alpha."""
        tr = self.train
        idx = torch.arange(self.n, device=self.device) if clients is None else clients
        for _ in range(steps):
            x, y = self.data.sample_batch("train", tr.batch_size, self.gen, idx)
            a = self.alpha[idx, None]
            w, v = bank.flat[idx], self.v[idx]
            _, g = bank.grad(x, y, clients=idx, flat=a * v + (1 - a) * w)
            bank.sgd_step(x, y, tr.sgd, clients=idx, prox=prox)
            copy_rows(self.v, idx, v - tr.lr * a * g)
            if self.hp.adaptive:
                da = ((v - w) * g).sum(1) + self.hp.alpha_reg * a[:, 0]
                self.alpha[idx] = (a[:, 0] - self.alpha_lr * da).clamp(0.0, 1.0)

    def personal_models(self) -> torch.Tensor:
        a = self.alpha[:, None]
        return a * self.v + (1 - a) * super().personal_models()

    def collaboration(self) -> np.ndarray:
        a = self.alpha.cpu().numpy().astype(float)
        w = (1 - a)[:, None] * super().collaboration()
        w[np.diag_indices(self.n)] += a
        return w
