"""Greedy Graph Construction (GGC, Alg. 2) and Batched GGC (BGGC, Alg. 3) of DPFL (Kharrat, Canini,
Horváth; docs/specifications/dpfl.md#update-equations). A helper module of ``algorithms/dpfl.py``
(no algorithm here).

Client k looks for collaborators ``X`` among candidates ``S`` maximising the reward (Eq. 7)

    R(S) = -F_k^V( sum_{i in S ∪ {k}} p_i w_i / sum_{i in S ∪ {k}} p_i ),

its validation loss at the p-weighted average of the models of ``S ∪ {k}``, with the randomised
double greedy of Buchbinder et al. / Fourati et al. (2023): ``X <- {k}``, ``Y <- S ∪ {k}``; for j
in a random order of S, ``a = max(R(X ∪ {j}) - R(X), 0)``, ``b = max(R(Y \\ {j}) - R(Y), 0)``, add j
to X with probability ``a / (a + b)`` (``tie`` = 1 when a = b = 0), else remove it from Y; stop when
X holds ``budget`` peers (the check sits inside the loop, as in Alg. 3 and the authors' code).

Both functions run the greedy of K clients in lock step: at step s every still-undecided client
evaluates its two new sets, and the 2K rewards are one batched forward pass. Cached ``R(X)``,
``R(Y)`` make that two evaluations per candidate (Alg. 2 recomputes four; the results are equal).

- :func:`ggc` computes every reward from the sets (Eq. 9): it needs all candidate models at once.
- :func:`bggc` never holds more than ``batch`` (= B_c) received models per client: pass 1 streams
  the candidates in batches into the running sum ``w^Y = sum_{Y} p_i w_i`` (Eq. 10); pass 2 streams
  them again, in the shuffled order, keeping ``w^X`` and ``w^Y`` (Eqs. 11-12):
  ``R(X ∪ {j}) = -F^V((w^X + p_j w_j) / (p_X + p_j))``,
  ``R(Y \\ {j}) = -F^V((w^Y - p_j w_j) / (p_Y - p_j))``.

Both draw the shuffled order and the decision coins with :func:`draw_order` from the generator
they are given, so with equal seeds they take the same decisions (Theorem 1; tested).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np
import torch
from torch import Tensor

from netsim.data import ClientData
from netsim.runtime import ClientBank

#: ``fetch(ids[K, B]) -> (models[K, B, d], arrived[K, B])``: receive the models ``ids`` (-1: none)
Fetch = Callable[[np.ndarray], tuple[Tensor, np.ndarray]]


@dataclass
class Selection:
    """Outcome for K clients: ``peers[K, N]`` (the collaborators C_k, self excluded) and
    ``model[K, d]`` (the p-weighted average over ``C_k ∪ {k}``, Eq. 4)."""

    peers: np.ndarray
    model: Tensor


class ValidationReward:
    """``R_k(w) = -F_k^V(w)``: minus client k's mean loss over its whole validation split (Eq. 7).

    The authors' code uses ``(10 - loss) / 10``, an increasing affine map of ``-loss``: a and b
    scale by the same factor and ``p = a / (a + b)`` is unchanged, so the decisions are the same.
    """

    def __init__(self, bank: ClientBank, data: ClientData):
        x, y, mask = data.full("val")
        self.bank, self.x, self.y, self.mask = bank, x.to(bank.flat.dtype), y, mask

    def __call__(self, clients: Tensor, rows: Tensor) -> Tensor:
        """Rewards ``[M]`` of parameter rows ``[M, d]`` for the (repeatable) ``clients[M]``."""
        c = clients.to(self.x.device)
        _, loss = self.bank.evaluate(self.x[c], self.y[c], self.mask[c], clients=c, flat=rows)
        return -loss


Reward = Callable[[Tensor, Tensor], Tensor]


def draw_order(rng: np.random.Generator, candidates: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``Shuffle(S)`` of each row of ``candidates[K, N]`` and one decision coin per position.

    Returns ``order[K, L]`` (candidate indices, -1 past a row's |S|; L = max |S|) and ``u[K, L]``
    uniform in [0, 1): j = order[k, s] is added when ``u[k, s] < p``.
    """
    cand = np.asarray(candidates, bool)
    keys = rng.random(cand.shape)
    keys[~cand] = 2.0
    size = cand.sum(1)
    width = int(size.max(initial=0))
    order = np.argsort(keys, axis=1, kind="stable")[:, :width]
    order[np.arange(width)[None, :] >= size[:, None]] = -1
    return order, rng.random(order.shape)


def decide(gain_add: Tensor, gain_remove: Tensor, u: Tensor, tie: float = 1.0) -> Tensor:
    """Alg. 2 lines 7-10: ``a = max(gain_add, 0)``, ``b = max(gain_remove, 0)``, add iff
    ``u < p = a / (a + b)``; ``p = tie`` when a = b = 0 (1 in the paper, its code and Buchbinder
    et al.; with a non-submodular, noisy reward both gains are often negative)."""
    a, b = gain_add.clamp(min=0), gain_remove.clamp(min=0)
    total = a + b
    p = torch.where(total > 0, a / torch.where(total > 0, total, torch.ones_like(total)),
                    torch.full_like(total, tie))
    return u < p


def average(members: np.ndarray | Tensor, models: Tensor, p: Tensor) -> Tensor:
    """``sum_i m_i p_i w_i / sum_i m_i p_i`` for each row of ``members[K, N]`` (Eq. 4)."""
    w = torch.as_tensor(members, device=models.device).to(models.dtype) * p.to(models.dtype)
    return (w @ models) / w.sum(1, keepdim=True)


def _peers(x: np.ndarray, clients: np.ndarray) -> np.ndarray:
    out = x.copy()
    out[np.arange(len(clients)), clients] = False
    return out


def _full(budget: int | None, x: np.ndarray) -> np.ndarray:
    """Which clients reached the budget: |X \\ {k}| = budget (X holds k itself)."""
    return np.zeros(len(x), bool) if budget is None else x.sum(1) - 1 >= budget


def _step(reward: Reward, clients: Tensor, act: Tensor, with_j: Tensor, without_j: Tensor,
          r_x: Tensor, r_y: Tensor, u: np.ndarray, tie: float) -> Tensor:
    """One decision of the active rows ``act``: rewards of ``X ∪ {j}`` and ``Y \\ {j}`` (one batched
    evaluation), the coin, and the cached ``R(X)``, ``R(Y)`` updated in place; returns ``add``."""
    m = len(act)
    r = reward(clients[act].repeat(2), torch.cat([with_j, without_j]))
    r_add, r_rem = r[:m], r[m:]
    add = decide(r_add - r_x[act], r_rem - r_y[act],
                 torch.as_tensor(u, dtype=r.dtype, device=r.device), tie)
    r_x[act] = torch.where(add, r_add, r_x[act])
    r_y[act] = torch.where(add, r_y[act], r_rem)
    return add


def ggc(clients: np.ndarray, candidates: np.ndarray, models: Tensor, p: Tensor,
        budget: int | None, reward: Reward, rng: np.random.Generator, tie: float = 1.0
        ) -> Selection:
    """Alg. 2 for the K ``clients`` at once over ``candidates[K, N]`` (S_k, self excluded), with all
    ``models[N, d]`` at hand and rewards from the sets (Eq. 9); ``budget``: most peers (None: no
    cap); ``tie``: p when a = b = 0 (see :func:`decide`)."""
    clients = np.asarray(clients, int)
    cand = np.asarray(candidates, bool)
    order, u = draw_order(rng, cand)
    ct = torch.as_tensor(clients, device=models.device)
    x = np.zeros_like(cand)
    x[np.arange(len(clients)), clients] = True
    y = cand | x
    r_x, r_y = reward(ct, average(x, models, p)), reward(ct, average(y, models, p))
    full = _full(budget, x)
    for s in range(order.shape[1]):
        j = order[:, s]
        act = np.flatnonzero((j >= 0) & ~full)
        if act.size == 0:
            break
        xa, ya = x[act].copy(), y[act].copy()
        xa[np.arange(act.size), j[act]] = True
        ya[np.arange(act.size), j[act]] = False
        add = _step(reward, ct, torch.as_tensor(act, device=ct.device), average(xa, models, p),
                    average(ya, models, p), r_x, r_y, u[act, s], tie).cpu().numpy()
        x[act[add]], y[act[~add]] = xa[add], ya[~add]
        full = _full(budget, x)
    return Selection(_peers(x, clients), average(x, models, p))


def bggc(clients: np.ndarray, candidates: np.ndarray, own: Tensor, p: Tensor,
         budget: int | None, reward: Reward, rng: np.random.Generator, fetch: Fetch,
         batch: int, tie: float = 1.0) -> Selection:
    """Alg. 3 for the K ``clients`` at once: the same decisions as :func:`ggc` (same ``rng`` state)
    while each client holds at most ``batch`` received models (plus its ``own[K, d]`` model and the
    two running sums).

    ``fetch(ids[K, B])`` receives the models ``ids`` (-1: none requested); one call is one
    communication step. Pass 1 takes ``ceil(L / batch)`` calls, pass 2 as many or fewer (clients at
    their budget stop asking); with a single batch the pass-1 models are kept for pass 2. A model
    missing in pass 1 leaves Y before pass 2 (w^Y stays the sum over the set Y); one missing in
    pass 2 gets no decision (it is not added to X and stays in Y).
    """
    clients = np.asarray(clients, int)
    cand = np.asarray(candidates, bool).copy()
    order, u = draw_order(rng, cand)
    rows, width = np.arange(len(clients)), order.shape[1]
    batch = max(1, min(int(batch), max(width, 1)))
    pt = p.to(device=own.device, dtype=own.dtype)
    ct = torch.as_tensor(clients, device=own.device)
    natural = np.argsort(~cand, axis=1, kind="stable")[:, :width]
    natural[np.arange(width)[None, :] >= cand.sum(1)[:, None]] = -1
    w_y, p_y = own * pt[ct, None], pt[ct].clone()
    kept = None
    for b in range(0, width, batch):                                   # pass 1: Eq. 10
        ids = natural[:, b:b + batch]
        models, ok = fetch(ids)
        ok = ok & (ids >= 0)
        weights = torch.as_tensor(ok, device=own.device, dtype=own.dtype) * pt[np.maximum(ids, 0)]
        w_y += torch.einsum("kb,kbd->kd", weights, models)
        p_y += weights.sum(1)
        miss_r, miss_c = np.nonzero((ids >= 0) & ~ok)
        cand[miss_r, ids[miss_r, miss_c]] = False
        if width <= batch:
            kept = (ids, models, ok)
        del models
    w_x, p_x = own * pt[ct, None], pt[ct].clone()
    r_x, r_y = reward(ct, w_x / p_x[:, None]), reward(ct, w_y / p_y[:, None])
    x = np.zeros_like(cand)
    x[rows, clients] = True
    full = _full(budget, x)
    for b in range(0, width, batch):                                   # pass 2: Eqs. 11-12
        ids = order[:, b:b + batch].copy()
        ids[full] = -1
        ids[(ids >= 0) & ~cand[rows[:, None], np.maximum(ids, 0)]] = -1
        if (ids < 0).all():
            break
        models, ok = _from_kept(kept, ids) if kept is not None else fetch(ids)
        for i in range(ids.shape[1]):
            j = ids[:, i]
            act = np.flatnonzero((j >= 0) & ok[:, i] & ~full)
            if act.size == 0:
                continue
            at = torch.as_tensor(act, device=own.device)
            pj, wj = pt[j[act]], models[at, i]
            add = _step(reward, ct, at, (w_x[at] + pj[:, None] * wj) / (p_x[at] + pj)[:, None],
                        (w_y[at] - pj[:, None] * wj) / (p_y[at] - pj)[:, None], r_x, r_y,
                        u[act, b + i], tie)
            w_x[at] = torch.where(add[:, None], w_x[at] + pj[:, None] * wj, w_x[at])
            p_x[at] = torch.where(add, p_x[at] + pj, p_x[at])
            w_y[at] = torch.where(add[:, None], w_y[at], w_y[at] - pj[:, None] * wj)
            p_y[at] = torch.where(add, p_y[at], p_y[at] - pj)
            added = act[add.cpu().numpy()]
            x[added, j[added]] = True
            full = _full(budget, x)
        del models
    return Selection(_peers(x, clients), w_x / p_x[:, None])


def _from_kept(kept: tuple[np.ndarray, Tensor, np.ndarray], ids: np.ndarray
               ) -> tuple[Tensor, np.ndarray]:
    """Pass-2 models taken from the single pass-1 batch still held (no second download)."""
    held_ids, models, ok = kept
    pos = np.zeros((held_ids.shape[0], int(held_ids.max(initial=0)) + 2), int)
    r, c = np.nonzero(held_ids >= 0)
    pos[r, held_ids[r, c]] = c
    col = pos[np.arange(ids.shape[0])[:, None], np.maximum(ids, 0)]
    rows = np.arange(ids.shape[0])[:, None]
    return models[torch.as_tensor(rows), torch.as_tensor(col)], ok[rows, col] & (ids >= 0)
