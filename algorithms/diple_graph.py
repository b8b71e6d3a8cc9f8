"""DiPLe's stage I: learning the directed graph (Zheng, Naghizadeh, Yener; Alg. 1 stage I, eq. 3;
docs/specifications/diple.md, update equations and ambiguities 1-4). A helper module of
``algorithms/diple.py`` (no algorithm here).

:class:`GraphLearning` holds the stage-I methods of :class:`algorithms.diple.DiPLe`, all clients
batched; in round r (:meth:`GraphLearning.stage_one`):

1. E local SGD steps ``w_loc,i^{r,-1} -> w_loc,i^{r,0}`` (``unit``: steps or epochs, ambiguity 3);
2. every candidate j (:meth:`GraphLearning.candidates`: all, neighbours ``a_ij^{r-1} > 0`` or
   sampled peers, ambiguity 4) sends ``w_loc,j^{r,0}`` to i, one engine exchange whose messages
   carry the models (the network's message store keeps them);
3. for every delivered pair, bisection with threshold eps on ``a in [0, 1]`` minimising
   ``f_i((1 - a) w_loc,i^{r,0} + a w_loc,j^{r,0})`` (eq. 3, ``a < eps/2 -> 0``;
   :meth:`GraphLearning.learn_weights`: all pairs of all clients in blocks, one loss call per
   iteration); a candidate whose model does not arrive keeps its previous coefficient;
4. the row normalised into ``alpha_ii + sum_j alpha_ij = 1`` (``self_weight``, ambiguity 1).

The mixin uses the helpers of :class:`algorithms.base.Algorithm` (``compute_phase``,
``exchange``, ``local_sgd``, ``index``) and reads what it and ``DiPLe.__init__`` set: ``hp``,
``n``, ``bank``, ``data``, ``gen``, ``rng``, ``device``, ``train``, ``net``, ``eps``,
``e_steps``, ``reach`` ([dst, src] base-topology in-edges) and the coefficients ``a``; it sets
``a`` and ``A``.
"""
from __future__ import annotations

import numpy as np
import torch
from torch import Tensor

from algorithms.diple_weights import BISECTION_FLOATS, bisect, bisection_iterations, normalise_rows
from netsim.sim.facade import ExchangeResult


class GraphLearning:
    """DiPLe's stage I (Alg. 1): candidates, the batched bisection of eq. 3 and the graph A."""

    def stage_one(self, alive: np.ndarray) -> ExchangeResult:
        """Stage I of round r: E local steps (step 1), candidate models sent (step 2), bisection
        of every delivered pair (step 3, eq. 3), the row normalised (step 4); returns the
        exchange of the candidate models."""
        comp = self.compute_phase(active=alive, steps=self.e_steps)
        done = comp.finished
        for s in range(int(np.max(self.e_steps))):
            self.local_sgd(self.bank, 1, clients=self.index(done & (self.e_steps > s), self.device))
        cand = self.candidates()
        ex = self.exchange(cand & done[None, :], self.bank.size_bytes, ready=comp.finish_time,
                           rows=self.bank.flat)
        models = self.net.store.rows(ex.payload)
        fresh = ex.delivered[: self.n, : self.n] & done[:, None]

        split, b = self.hp.bisection_split, self.hp.bisection_batch
        sizes = self.data.n[split].cpu().numpy() if b is None else np.full(self.n, b)
        iters = bisection_iterations(self.eps, self.hp.search)
        per_iter = 2 if self.hp.search == "loss" else 1
        self.compute_phase(active=fresh.any(1),
                           steps=self.eval_steps(sizes, iters * per_iter * fresh.sum(1),
                                                 self.hp.search == "loss"))
        a = np.where(cand, self.a, 0.0)               # not evaluated: keep a_ij^{r-1}
        owner, peer = np.nonzero(fresh)
        if owner.size:
            learned = self.learn_weights(torch.as_tensor(owner, device=self.device),
                                         torch.as_tensor(peer, device=self.device), models)
            a[owner, peer] = learned.cpu().numpy()
        self.a = a
        self.A = self.normalise(a)
        return ex

    def normalise(self, a: np.ndarray) -> np.ndarray:
        """Step 4: the row-stochastic A from the pairwise coefficients (ambiguity 1)."""
        return normalise_rows(a, self.hp.self_weight, self.hp.init_weight, self.eps)

    def candidates(self) -> np.ndarray:
        """``[dst, src]``: the peers whose model each client evaluates this round."""
        mode = self.hp.candidates
        if mode != "sample":
            return self.reach & (self.a > 0) if mode == "neighbours" else self.reach.copy()
        keys = np.where(self.reach, self.rng.random((self.n, self.n)), np.inf)
        pick = (keys.argsort(axis=1).argsort(axis=1) < self.hp.sample_peers) & self.reach
        return pick | ((self.a > 0) & self.reach) if self.hp.keep_neighbours else pick

    def bisection_data(self, owner: Tensor) -> tuple[Tensor, Tensor, Tensor | None]:
        """The data of each pair's owner: a fixed batch per client (mask None) or its full split."""
        split, b = self.hp.bisection_split, self.hp.bisection_batch
        if b is not None:
            x, y = self.data.sample_batch(split, b, self.gen)
            return x[owner], y[owner], None
        x, y, mask = self.data.full(split)
        return x[owner], y[owner], mask[owner]

    def learn_weights(self, owner: Tensor, peer: Tensor, models: Tensor) -> Tensor:
        """eq. 3 for every pair (owner i, peer j) at once, in blocks of at most BISECTION_FLOATS."""
        out = torch.empty(len(owner), dtype=torch.float64, device=self.device)
        block = max(1, BISECTION_FLOATS // (2 * self.bank.d))     # pairs per block
        x_all, y_all, m_all = self.bisection_data(owner)
        reps = 2 if self.hp.search == "loss" else 1    # points per pair and iteration
        for s in range(0, len(owner), block):
            sl = slice(s, s + block)
            own = self.bank.flat.index_select(0, owner[sl])       # 2-5x faster than flat[owner]
            diff = models.index_select(0, peer[sl]) - own
            k = len(own)
            rows = torch.empty(reps * k, self.bank.d, dtype=own.dtype, device=self.device)
            c = owner[sl].repeat(reps)
            x = x_all[sl].repeat(reps, *[1] * (x_all.dim() - 1))
            y = y_all[sl].repeat(reps, *[1] * (y_all.dim() - 1))
            mask = None if m_all is None else m_all[sl].repeat(reps, 1)

            def phi(a: Tensor) -> Tensor:
                a = a.to(own.dtype)[:, None]
                for r in range(reps):                     # rows = (1 - a) w_i + a w_j
                    torch.addcmul(own, a[r * k:(r + 1) * k], diff, out=rows[r * k:(r + 1) * k])
                if self.hp.search == "gradient":
                    return (self.bank.grad(x, y, clients=c, flat=rows)[1] * diff).sum(1).double()
                if mask is None:
                    return self.bank.loss(x, y, clients=c, flat=rows).double()
                return self.bank.evaluate(x, y, mask, clients=c, flat=rows)[1].double()

            with torch.no_grad():
                out[sl] = bisect(phi, k, self.eps, self.hp.search, self.device)
        return out

    def eval_steps(self, split_sizes: np.ndarray, models: np.ndarray,
                   forward_only: bool) -> np.ndarray:
        """Simulated compute of evaluating ``models[i]`` models on ``split_sizes[i]`` samples, in
        local-step units (a forward pass is a third of a training step); stage I's bisection and
        the end-of-round selection."""
        b = self.train.batch_size
        return models * split_sizes / b / (3.0 if forward_only else 1.0)
