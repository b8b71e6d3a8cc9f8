"""The newest copy of every sender's model at every receiver, over several exchanges.

Algorithms that use peers' models with staleness (DiPLe: stale copies under ``max_staleness``,
late arrivals under ``late: stale`` or ``async``; CoBo: the copy the engine says each receiver
holds, ``staleness`` rounds old) keep them here: one ``[N, d]`` snapshot per exchange in a ring,
and for every edge the exchange whose copy the receiver holds.
"""
from __future__ import annotations

from collections import deque

import numpy as np
import torch
from torch import Tensor

from netsim.runtime.mixing import mix
from netsim.sim.engine import ExchangeResult


class Mailbox:
    """The newest copy of every sender's model at every receiver.

    A ring buffer keeps the models sent in the last ``depth`` exchanges (all senders send their
    current model, so one ``[N, d]`` snapshot per exchange); ``got[i, j]`` is the exchange whose
    copy of j's model i holds (-1: none). Copies that arrive late in a later round (deadline with
    ``late: stale``, async) are found from the engine's staleness.
    """

    def __init__(self, n: int, depth: int):
        self.got = np.full((n, n), -1)
        self.ring: deque = deque(maxlen=depth)      # (exchange id, round, models, late)
        self.round_of: list[int] = []               # round of every exchange id

    def post(self, ex: ExchangeResult, models: Tensor, rnd: int) -> None:
        """Record one exchange of ``models`` (the senders' models, ``[N, d]``) in round ``rnd``."""
        e = len(self.round_of)
        self.round_of.append(rnd)
        self.ring.append((e, rnd, models, ex.late))
        self.got[ex.delivered] = e
        rounds = np.asarray(self.round_of + [-1])[self.got]        # got = -1 -> round -1
        copy_round = np.where(ex.staleness >= 0, rnd - ex.staleness, -1)
        newer = copy_round > rounds
        for e2, r2, _, late in self.ring:                           # oldest first: newest wins
            self.got[newer & late & (copy_round == r2)] = e2

    def usable(self, ex: ExchangeResult) -> np.ndarray:
        """``[dst, src]``: a copy is available to the engine's policy and still in the buffer."""
        return ex.available & (self.got >= self.ring[0][0])

    def newest(self) -> Tensor:
        """The models sent in the last exchange, ``[N, d]``."""
        return self.ring[-1][2]

    def mix_stale(self, weights: Tensor, staleness: np.ndarray) -> Tensor:
        """``sum_k w_ik x_k^{(s_ik)}`` for an algorithm that posts one exchange per round: each
        peer's copy sent ``staleness[i, k]`` exchanges ago, as the engine reports it (``weights``
        [N, N] is zero where no copy is usable); one ``[N, N] @ [N, d]`` product per staleness."""
        out = None
        for s in np.unique(staleness[staleness >= 0]):
            mask = torch.as_tensor(staleness == s, device=weights.device)
            part = torch.where(mask, weights, torch.zeros_like(weights)) @ self.ring[-1 - int(s)][2]
            out = part if out is None else out.add_(part)
        return torch.zeros_like(self.newest()) if out is None else out

    def mix(self, weights: np.ndarray, like: Tensor) -> Tensor:
        """``sum_j weights[i, j] copy_ij`` for every receiver i (zero weight where no copy)."""
        out = torch.zeros_like(like)
        for e, _, models, _ in self.ring:
            w = np.where(self.got == e, weights, 0.0)
            if w.any():
                out += mix(w, models)
        return out
