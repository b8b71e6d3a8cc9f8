"""The hand-written floors' MLP 64-128-10 step (bench_peer, bench_whole), with no netsim import:
every client's batch in one row gather, and its gradients, stacked forward and backward with
``baddbmm``/``bmm``."""
from __future__ import annotations

import torch


def mlp_grads(x: torch.Tensor, y: torch.Tensor, w1: torch.Tensor, b1: torch.Tensor,
              w2: torch.Tensor, b2: torch.Tensor) -> tuple[torch.Tensor, ...]:
    """Gradients of the mean cross-entropy of each client's batch ``x[N, B, 64]``, ``y[N, B]``
    with respect to its stacked ``w1, b1, w2, b2`` (ReLU hidden layer)."""
    z1 = torch.baddbmm(b1[:, None], x, w1.transpose(1, 2))
    a1 = torch.relu(z1)
    dz2 = torch.softmax(torch.baddbmm(b2[:, None], a1, w2.transpose(1, 2)), -1)
    dz2.scatter_add_(-1, y[..., None], torch.full_like(y[..., None], -1, dtype=dz2.dtype))
    dz2 /= x.shape[1]
    dz1 = torch.bmm(dz2, w2).mul_(z1 > 0)
    return (torch.bmm(dz1.transpose(1, 2), x), dz1.sum(1), torch.bmm(dz2.transpose(1, 2), a1),
            dz2.sum(1))


def gather_batch(x: torch.Tensor, y: torch.Tensor, idx: torch.Tensor
                 ) -> tuple[torch.Tensor, torch.Tensor]:
    """Sample ``idx[i, b]`` of every client i from its padded rows ``x[N, max_n, 64]``,
    ``y[N, max_n]``: ``x[arange(N)[:, None], idx]`` as one row gather of the flattened data."""
    n, batch = idx.shape
    at = (torch.arange(n)[:, None] * x.shape[1] + idx).view(-1)
    return (x.flatten(0, 1).index_select(0, at).view(n, batch, -1),
            y.flatten(0, 1).index_select(0, at).view(n, batch))
