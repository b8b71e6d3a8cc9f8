"""PDBO-MTL's personal predictor: a softmax(lambda_i)-weighted mixture of K base learners.

Agent i predicts ``p_i(y | x) = sum_k softmax(lambda_i)_k softmax(h_k(x; theta_k))_y`` (seed 004,
Sec. 5 and App. A.2: FedEM cast as PDBO). The K learners ``theta_1..theta_K`` (same architecture)
are the inner, consensus parameters; ``lambda_i`` (K logits) is agent i's personal outer
parameter. ``forward`` returns ``log p_i(y | x)``: since these log-probabilities already
normalise, the bank's cross-entropy of them is the mixture's negative log-likelihood, and its
argmax the mixture's prediction.

Per-client parameters: ``learners.<name>`` of shape ``(K, *base_shape)`` for each parameter of
the base model, then ``mixture`` of shape ``(K,)`` (initialised to zero = uniform weights). In a
flat row the learners come first: ``row[:inner_dim]`` is the inner vector x_i, ``row[inner_dim:]``
is lambda_i. All M clients and K learners run in one call of the base model (M*K rows).

Not registered in ``MODELS``: the PDBO algorithms wrap whatever base model the scenario names.
"""
from __future__ import annotations

import torch
from torch import Tensor, nn

from netsim.models.base import BatchedModel, Params

MIXTURE = "mixture"


class EnsembleModel(BatchedModel):
    """K copies of ``base`` mixed with per-client weights softmax(lambda) (classification)."""

    def __init__(self, base: BatchedModel, k: int):
        if k < 1:
            raise ValueError(f"an ensemble needs at least one learner, got {k}")
        self.base, self.k = base, int(k)
        self.shapes = {f"learners.{name}": (self.k, *shape) for name, shape in base.shapes.items()}
        self.shapes[MIXTURE] = (self.k,)
        self.init_bound = {f"learners.{name}": b for name, b in base.init_bound.items()}
        self.init_bound[MIXTURE] = 0.0
        self.out_dim = base.out_dim
        self.flops_per_sample = self.k * base.flops_per_sample
        self.backend = base.backend

    @property
    def inner_dim(self) -> int:
        """Length of the learners' part x_i of a flat row (the mixture logits follow it)."""
        return self.num_params - self.k

    def forward(self, params: Params, x: Tensor) -> Tensor:
        """``x: [M, B, ...]`` -> ``log p(y | x)``: ``[M, B, classes]``."""
        m, b = x.shape[:2]
        rows = {name: params[f"learners.{name}"].reshape(m * self.k, *shape)
                for name, shape in self.base.shapes.items()}
        xs = x.unsqueeze(1).expand(m, self.k, *x.shape[1:]).reshape(m * self.k, *x.shape[1:])
        logp = torch.log_softmax(self.base.forward(rows, xs), -1).view(m, self.k, b, -1)
        log_pi = torch.log_softmax(params[MIXTURE], -1)
        return torch.logsumexp(logp + log_pi[:, :, None, None], dim=1)

    def reference(self, params: Params) -> nn.Module:
        return _EnsembleModule(
            [self.base.reference({name: params[f"learners.{name}"][j] for name in self.base.shapes})
             for j in range(self.k)], params[MIXTURE])


class _EnsembleModule(nn.Module):
    """Single-client twin (tests): log of the probability mixture of the learners' softmaxes."""

    def __init__(self, learners: list[nn.Module], logits: Tensor):
        super().__init__()
        self.learners = nn.ModuleList(learners)
        self.logits = nn.Parameter(logits.detach().clone())

    def forward(self, x: Tensor) -> Tensor:
        pi = torch.softmax(self.logits, 0)
        probs = sum(pi[j] * torch.softmax(h(x), -1) for j, h in enumerate(self.learners))
        return torch.log(probs)
