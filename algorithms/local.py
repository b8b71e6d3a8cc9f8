"""Local: every client trains on its own data only; no communication
(docs/specifications/baselines.md#local)."""
from __future__ import annotations

import numpy as np
import torch

from algorithms import register
from algorithms.base import Algorithm


@register("local")
class Local(Algorithm):
    """Local training only: E SGD steps per round on each client's own data."""

    group = "baselines"  # the run table's group

    def __init__(self, ctx):
        super().__init__(ctx)
        self.bank = self.new_bank()

    def round(self, t: int) -> None:
        done = self.compute_phase(active=self.net.alive()).finished
        self.local_sgd(self.bank, self.train.local_steps, clients=self.index(done, self.device))

    def personal_models(self) -> torch.Tensor:
        return self.bank.flat

    def collaboration(self) -> np.ndarray:
        return np.eye(self.n)
