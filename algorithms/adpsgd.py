"""AD-PSGD: asynchronous decentralized parallel SGD (Lian, Zhang, Zhang & Liu, ICML 2018),
event-driven (docs/async.md).

Algorithm 1 of the paper, for worker i, repeated at its own pace:

- line 3: read the local model ``x_hat_i`` and compute a stochastic gradient
  ``g(x_hat_i; xi_i)`` on a batch of its data (here: at the wake-up, for as long as the compute
  model says);
- lines 4-5: pick a neighbour j at random and average atomically ``x_i, x_j <- (x_i + x_j) / 2``
  (a doubly stochastic W_k of eq. (2));
- line 6: ``x_i <- x_i - gamma g(x_hat_i; xi_i)``: the gradient of the *earlier* model, whatever
  averages happened meanwhile (eq. (2): ``X_{k+1} = X_k W_k - gamma dF(X_hat_k; xi_k, i_k)``).

On the network: i sends its model to j when its gradient is ready; the average is applied at
the instant the model reaches j (one atomic event on both rows), followed by i's gradient; i
wakes again when the averaged model is back (one more one-way delay, the reply taking the
request's time). A request that is not delivered (link down, budget, loss, j down) leaves
i to apply its gradient alone, at once. With ``gamma = 0`` each average keeps ``x_i + x_j``, so
the sum of all models is invariant (tests/test_adpsgd.py).
"""
from __future__ import annotations

import numpy as np
import torch

from algorithms import register
from algorithms.async_base import AsyncAlgorithm
from netsim.runtime.rows import copy_rows
from netsim.sim.async_net import IN_FLIGHT


def pair_average(a: torch.Tensor, b: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """The new rows of both ends of an atomic average (Algorithm 1, line 5)."""
    m = (a + b) * 0.5
    return m, m


@register("adpsgd")
class ADPSGD(AsyncAlgorithm):
    """Asynchronous pairwise averaging with stale gradients (Lian et al. 2018, Algorithm 1).
    No parameters of its own: gamma is ``train.lr``."""

    def personal_models(self) -> torch.Tensor:
        return self.bank.flat

    def start_step(self, i: int, t: float, k: int) -> None:
        self.act("grad", (i, k), reads=[("x", i)], writes=[("g", i)])

    def act_grad(self, payloads: list[tuple[int, int]]) -> None:
        self.compute_grads(payloads, lambda idx: self.bank.flat.index_select(0, idx))

    def finish_step(self, i: int, t: float) -> None:
        out = self.net.out_edges(i)
        edge = out[self.rng.integers(len(out))] if len(out) else None
        if edge is not None:
            outcome, _ = self.net.send(t, i, np.array([edge]), self.model_bytes)
            if outcome[0] == IN_FLIGHT:
                return                                       # on_message averages
        self._alone(i, t)

    def _alone(self, i: int, t: float) -> None:
        """No average this time: line 6 alone."""
        self.net.events.add(t, i, "apply")
        self.act("apply", i, reads=[("g", i)], writes=[("x", i)])
        self.wake_at(i, t)

    def on_message(self, t: float, msg, delivered: bool) -> None:
        i, j = msg.src, msg.dst
        if not delivered:
            self._alone(i, t)
            return
        self.net.events.add(t, j, "average", i, msg.id)
        self.merged(j, t, msg.sent_at)
        self.act("average", (i, j), reads=[("g", i)], writes=[("x", i), ("x", j)])
        self.wake_at(i, t + (t - msg.sent_at))

    def act_average(self, payloads: list[tuple[int, int]]) -> None:
        """Both ends take the average, i less its step (row gathers and copies: the rows of a
        group are distinct, each action writing both)."""
        i, j = (torch.as_tensor(c, device=self.device) for c in zip(*payloads))
        x = self.bank.flat
        new_i, new_j = pair_average(x.index_select(0, i), x.index_select(0, j))
        copy_rows(x, j, new_j)
        copy_rows(x, i, new_i - self.train.lr * self.grads.index_select(0, i))

    def act_apply(self, payloads: list[int]) -> None:
        i = torch.as_tensor(payloads, device=self.device)
        x = self.bank.flat
        copy_rows(x, i, x.index_select(0, i).sub_(self.train.lr * self.grads.index_select(0, i)))
