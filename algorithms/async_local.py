"""Local training of event-driven clients: several plain SGD steps per computation (FedBuff,
FedAsync, gossip learning; docs/async.md)."""
from __future__ import annotations

import torch

from algorithms.async_base import AsyncAlgorithm
from netsim.runtime.rows import copy_rows


def local_sgd(alg: AsyncAlgorithm, payloads: list[tuple[int, int]], x: torch.Tensor,
              anchor: torch.Tensor | None = None, rho: float = 0.0) -> None:
    """``train.local_steps`` SGD steps, in place, of the rows ``x[i]`` of the listed clients
    (payloads ``(i, k)``: client i's computation number k, whose q-th step uses the batch
    number ``k * local_steps + q``), all clients in each step's one call; ``rho`` > 0 adds the
    proximal gradient ``rho (x_i - anchor_i)``."""
    steps, lr = alg.train.local_steps, alg.train.lr
    idx = torch.as_tensor([i for i, _ in payloads], device=alg.device)
    for q in range(steps):
        alg.compute_grads([(i, k * steps + q) for i, k in payloads], lambda rows: x[rows])
        g = alg.grads[idx]
        if rho:
            g = g + rho * (x[idx] - anchor[idx])
        copy_rows(x, idx, x[idx] - lr * g)
