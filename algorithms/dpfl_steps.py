"""DPFL's communication steps under the budget B_c (Kharrat, Canini, Horváth; Alg. 1 lines 3 and
9, Alg. 3 lines 2-3; docs/specifications/dpfl.md#network-assumptions). A helper module of
``algorithms/dpfl.py`` (no algorithm here).

:class:`BudgetedSteps` holds the communication methods of :class:`algorithms.dpfl.DPFL`. A
*communication step* is one engine exchange in which each client receives at most B_c models:

- a training round's "send w_k to all j with k in Ω_j, receive w_j for all j in Ω_k" (Alg. 1
  line 9) is one step (:meth:`BudgetedSteps.receive`);
- BGGC (Alg. 1 line 3) streams the candidates in batches of at most B_c models, ``ceil(N / B_c)``
  steps per pass (Alg. 3 lines 2-3, and again in its second pass): every batch is one step,
  requested through :meth:`BudgetedSteps.fetcher`.

The engine's per-node peer budget (``network.budget.peers_per_round`` = B_c) counts per exchange
(``Network.budget_window = "exchange"``, set by ``DPFL.__init__``), so it holds per step. Every
message carries a model and its weight p_i (``payload`` bytes).

The mixin uses the helpers of :class:`algorithms.base.Algorithm` (``exchange``) and reads ``n``,
``bank``, ``device`` and ``payload``. The network gathers the models that arrive in any step
(the round's ``links/`` row).
"""
from __future__ import annotations

import numpy as np
import torch


class BudgetedSteps:
    """DPFL's communication steps: one exchange each, at most B_c models per receiver."""

    def receive(self, clients: np.ndarray, want: np.ndarray, ready: np.ndarray | None = None,
                round_start: float | None = None) -> np.ndarray:
        """One communication step: each of ``clients`` asks for the models ``want[K, N]``;
        returns which arrived ``[K, N]``."""
        request = np.zeros((self.n, self.n), bool)
        request[clients] = want
        ex = self.exchange(request, self.payload, ready=ready, round_start=round_start)
        return ex.delivered[clients] & want

    def fetcher(self, clients: np.ndarray):
        """BGGC's ``fetch``: receive the listed models in one communication step."""
        def fetch(ids: np.ndarray) -> tuple[torch.Tensor, np.ndarray]:
            want = np.zeros((len(clients), self.n), bool)
            r, c = np.nonzero(ids >= 0)
            want[r, ids[r, c]] = True
            arrived = self.receive(clients, want)
            safe = np.maximum(ids, 0)
            ok = arrived[np.arange(len(clients))[:, None], safe] & (ids >= 0)
            return self.bank.flat[torch.as_tensor(safe, device=self.device)], ok
        return fetch
