"""PDBO-MTL's personal predictor: a softmax(lambda_i)-weighted mixture of K base learners.

Agent i predicts ``p_i(y | x) = sum_k softmax(lambda_i)_k softmax(h_k(x; theta_k))_y`` (PDBO,
Sec. 5 and App. A.2: FedEM cast as PDBO). The K learners ``theta_1..theta_K`` (same architecture)
are the inner, consensus parameters; ``lambda_i`` (K logits) is agent i's personal outer
parameter. ``forward`` returns ``log p_i(y | x)``: since these log-probabilities already
normalise, the bank's cross-entropy of them is the mixture's negative log-likelihood, and its
argmax the mixture's prediction.

Per-client parameters: ``learners.<name>`` of shape ``(K, *base_shape)`` for each parameter of
the base model, then ``mixture`` of shape ``(K,)`` (initialised to zero = uniform weights). In a
flat row the learners come first: ``row[:inner_dim]`` is the inner vector x_i, ``row[inner_dim:]``
is lambda_i. All M clients and K learners run in one call of the base model (M*K rows).

A base model with batch normalisation gives each learner its own running statistics
(``learners.<buffer>`` of shape ``(K, *shape)``), local to the client like the base model's.

Not registered in ``MODELS``: the PDBO algorithms wrap whatever base model the scenario names.
"""
from __future__ import annotations

import torch
from torch import Tensor, nn

from netsim.models.base import BatchedModel, Params, Stats

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
        self.init_const = {f"learners.{name}": v for name, v in base.init_const.items()}
        self.buffers = {f"learners.{name}": (self.k, *shape)
                        for name, shape in base.buffers.items()}
        self.buffer_init = {f"learners.{name}": v for name, v in base.buffer_init.items()}
        self.counters = tuple(f"learners.{name}" for name in base.counters)
        self.out_dim = base.out_dim
        self.flops_per_sample = self.k * base.flops_per_sample
        self.backend = base.backend

    def init(self, n: int, gen: torch.Generator, device: str | torch.device) -> Params:
        """Each learner as the base model initialises it (its own distributions, e.g. the
        char-LSTM's N(0, 1) embedding); the mixture logits start at zero (uniform weights). For
        uniform-init bases the draws equal BatchedModel.init's on the stacked shapes."""
        base = self.base.init(n * self.k, gen, device)
        out = {f"learners.{name}": v.reshape(n, self.k, *v.shape[1:]) for name, v in base.items()}
        out[MIXTURE] = torch.zeros((n, self.k), device=device)
        return out

    @property
    def inner_dim(self) -> int:
        """Length of the learners' part x_i of a flat row (the mixture logits follow it)."""
        return self.num_params - self.k

    def forward(self, params: Params, x: Tensor, buffers: Params | None = None,
                stats: Stats | None = None) -> Tensor:
        """``x: [M, B, ...]`` -> ``log p(y | x)``: ``[M, B, classes]`` (``buffers`` and ``stats``
        as :meth:`BatchedModel.forward`, for a base model with batch normalisation)."""
        m, b = x.shape[:2]
        rows = {name: params[f"learners.{name}"].reshape(m * self.k, *shape)
                for name, shape in self.base.shapes.items()}
        xs = x.unsqueeze(1).expand(m, self.k, *x.shape[1:]).reshape(m * self.k, *x.shape[1:])
        kw: dict = {}
        if buffers is not None:
            kw["buffers"] = {name: buffers[f"learners.{name}"].reshape(m * self.k, *shape)
                             for name, shape in self.base.buffers.items()}
        if stats is not None:
            kw["stats"] = {}
        logp = torch.log_softmax(self.base.forward(rows, xs, **kw), -1).view(m, self.k, b, -1)
        if stats is not None:
            stats.update({f"learners.{name}": v.reshape(m, self.k, *v.shape[1:])
                          for name, v in kw["stats"].items()})
        log_pi = torch.log_softmax(params[MIXTURE], -1)
        return torch.logsumexp(logp + log_pi[:, :, None, None], dim=1)

    def reference(self, params: Params) -> nn.Module:
        return _EnsembleModule(
            [self.base.reference(self._learner(params, j))
             for j in range(self.k)], params[MIXTURE])

    def _learner(self, state: Params, j: int) -> Params:
        """Learner j's parameters, and its running statistics and counters found in ``state``."""
        out = {name: state[f"learners.{name}"][j]
               for name in (*self.base.shapes, *self.base.buffers) if f"learners.{name}" in state}
        return out | {name: state[f"learners.{name}"] for name in self.base.counters
                      if f"learners.{name}" in state}


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
