"""The independent reference of the batched SGD tests: one torch.nn module and one
torch.optim.SGD per client, stepped alongside a ClientBank."""
from __future__ import annotations

import torch
import torch.nn.functional as F
from netsim.runtime.sgd import SGD


def reference_optimizers(refs: list[torch.nn.Module], lr: float, momentum: float,
                         weight_decay: float) -> list[torch.optim.SGD]:
    return [torch.optim.SGD(r.parameters(), lr=lr, momentum=momentum, weight_decay=weight_decay)
            for r in refs]


def step_both(bank, refs: list[torch.nn.Module], opts: list[torch.optim.SGD], x: torch.Tensor,
              y: torch.Tensor, tol: float) -> None:
    """One ``bank.sgd_step`` and the same step of every client's module (train mode, cross
    entropy); the pre-step losses agree within ``tol``."""
    group = opts[0].param_groups[0]
    loss = bank.sgd_step(x, y, SGD(lr=group["lr"], momentum=group["momentum"],
                                   weight_decay=group["weight_decay"]))
    for i, (ref, opt) in enumerate(zip(refs, opts)):
        ref.train()
        opt.zero_grad()
        ref_loss = F.cross_entropy(ref(x[i]), y[i])
        ref_loss.backward()
        opt.step()
        assert abs(ref_loss.item() - loss[i].item()) < tol
