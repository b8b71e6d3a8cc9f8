"""Adam for one parameter vector per client, batched (PDBO's outer step on lambda_i)."""
from __future__ import annotations

import torch
from torch import Tensor


class BatchedAdam:
    """Adam (Kingma & Ba) on ``[N, K]`` (one row per client) with a step count per client, so a
    client whose gradient is not finite skips its update alone."""

    def __init__(self, param: Tensor, lr: float, betas: tuple[float, float], eps: float = 1e-8):
        self.param, self.lr, self.betas, self.eps = param.clone(), lr, betas, eps
        self.m = torch.zeros_like(param)
        self.s = torch.zeros_like(param)
        self.t = torch.zeros(param.shape[0], 1, dtype=param.dtype, device=param.device)

    def step(self, grad: Tensor, ok: Tensor) -> None:
        b1, b2 = self.betas
        ok = ok[:, None]
        g = torch.where(ok, grad, torch.zeros_like(grad))
        self.t = self.t + ok.to(self.t.dtype)
        self.m = torch.where(ok, b1 * self.m + (1 - b1) * g, self.m)
        self.s = torch.where(ok, b2 * self.s + (1 - b2) * g * g, self.s)
        t = self.t.clamp(min=1)
        m_hat, s_hat = self.m / (1 - b1 ** t), self.s / (1 - b2 ** t)
        self.param = torch.where(ok, self.param - self.lr * m_hat / (s_hat.sqrt() + self.eps),
                                 self.param)
