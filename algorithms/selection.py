"""Best-validation model selection: the models an algorithm reports are those of the round with
the best validation score so far (DPFL, paper Sec. 4.1: per client; PDBO-MTL, the paper's
reporting: the outer step with the best mean validation accuracy)."""
from __future__ import annotations

import math

import torch
from torch import Tensor


class BestValidation:
    """The models ``[N, d]`` kept at their best validation score so far; ties keep the earliest.

    A score ``[N]`` selects per client (row i is kept when its score rises); a scalar score
    selects all rows together.
    """

    def __init__(self, models: Tensor, per_client: bool):
        self.models = models.clone()
        shape = (models.shape[0],) if per_client else ()
        self.score = torch.full(shape, -math.inf, dtype=models.dtype, device=models.device)

    def offer(self, score: Tensor, models: Tensor) -> None:
        """Keep the rows of ``models`` whose ``score`` beats the best so far."""
        better = score > self.score
        self.score = torch.where(better, score, self.score)
        rows = better.expand(self.models.shape[0])
        self.models[rows] = models[rows]
