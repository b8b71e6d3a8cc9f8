"""PDBO-MTL's inner problem: the learners by Stochastic Gradient Push (Terashita & Hara,
problem (1) and App. A.3; docs/specifications/pdbo.md#inner-solver-sgp). A helper module of
``algorithms/pdbo.py`` (no algorithm here).

:class:`InnerSGP` holds the inner-solver methods of :class:`algorithms.pdbo.PDBOMTL`. With every
lambda_i fixed, :meth:`InnerSGP.solve_inner` runs T = ``inner_steps`` steps of SGP in the
Nedić–Olshevsky form the authors run, all agents batched:

- ``z_i <- sum_j p_{j->i} z_j - gamma_t (grad_x f_i(z_i / w_i, lambda_i; xi) + wd x_i)`` and
  ``w <- P w``: every client that finished its step's compute pushes its pre-step (z, w) along
  its realised out-links (one engine exchange of d_x + 1 floats per step, combined by SGP's own
  step :meth:`netsim.runtime.pushsum.PushSum.step_uniform`) while the gradient
  (:meth:`InnerSGP._inner_grad` of :meth:`InnerSGP._inner_loss`, the mixture NLL + wd / 2
  ||x||^2) is computed; a client that did not finish adds no gradient;
- gamma_t = train.lr times 0.1 at each of the last ``decay_last`` steps (:meth:`InnerSGP.inner_lr`);
- the on-time arrivals feed the edge statistics p_bar, delta_bar that HGP debiases with
  (:class:`algorithms.hgp.EdgeStats`, docs/specifications/pdbo.md#inner-solver-sgp);
- ``inner: local`` drops the push (local SGD, no communication).

The round's ``links/`` row is the realised graph of the last inner step (the exchanges before it
are not logged).

The de-biased learners are ``x_i = z_i / w_i`` (:meth:`InnerSGP.x`). The mixin uses the helpers
of :class:`algorithms.base.Algorithm` (``compute_phase``, ``exchange``, ``index``) and reads
what it and ``PDBOMTL.__init__`` set: ``hp``, ``n``, ``bank``, ``data``, ``gen``, ``device``,
``train``, ``net``, ``push_sum``, ``x0``, ``dx``, ``lam``, ``sgp_bytes`` and the state
``(z, w)``; it sets ``z``, ``w`` and ``last_mixing``.
"""
from __future__ import annotations

import numpy as np
import torch
from torch import Tensor

from algorithms.hgp import EdgeStats
from netsim.runtime.mixing import push_sum_weights


class InnerSGP:
    """PDBO-MTL's inner solver: T SGP steps on the learners with lambda fixed (App. A.3)."""

    def _inner_loss(self, x: Tensor, lam: Tensor, xb: Tensor, yb: Tensor) -> Tensor:
        """``f(x, lam; xi)`` summed over agents: mixture NLL + wd / 2 ||x||^2 (a scalar)."""
        return (self.bank.loss_fn(torch.cat([x, lam], 1), xb, yb).sum()
                + 0.5 * self.train.weight_decay * x.pow(2).sum())

    def _inner_grad(self, x: Tensor, xb: Tensor, yb: Tensor, stats: dict | None = None) -> Tensor:
        """``grad_x f(x, lam; xi)`` of every agent, ``[N, d_x]``: one backward pass through the
        bank's per-parameter views (:meth:`netsim.runtime.ClientBank.grad`; the same values as
        differentiating :meth:`_inner_loss`). ``stats`` (BatchNorm): receives the batch
        statistics of this forward pass."""
        _, g = self.bank.grad(xb, yb, flat=torch.cat([x, self.lam], 1), stats=stats)
        return g[:, : self.dx] + self.train.weight_decay * x

    def x(self) -> Tensor:
        """The de-biased learners ``x_i = z_i / w_i`` of every agent."""
        return self.push_sum.debias(self.z, self.w, self.x0.dtype)

    def inner_lr(self, step: int) -> float:
        """train.lr x 0.1 per milestone of ``decay_last`` reached (App. A.3)."""
        left = self.hp.inner_steps - step
        return self.train.lr * 0.1 ** sum(left <= last for last in self.hp.decay_last)

    def solve_inner(self) -> EdgeStats | None:
        """T inner steps from the current (z, w) with lambda fixed; returns SGP's edge stats."""
        sgp = self.hp.inner == "sgp"
        stats = EdgeStats(self.n) if sgp else None
        mixing = np.zeros((self.n, self.n))
        for s in range(self.hp.inner_steps):
            t0 = self.net.now
            done = self.compute_phase(active=self.net.alive(), steps=1).finished
            xb, yb = self.data.sample_batch("train", self.train.batch_size, self.gen)
            batch: dict | None = None if self.bank.running is None else {}
            g = self._inner_grad(self.x(), xb, yb, batch)
            if batch is not None:                        # BatchNorm: as a training step would
                idx = self.index(done, self.device)
                self.bank.update_statistics({k: v[idx] for k, v in batch.items()}, idx)
            mask = torch.as_tensor(done, dtype=g.dtype, device=self.device)[:, None]
            update = self.inner_lr(s) * mask * g
            if sgp:  # the pre-step (z, w) goes out while the gradient is computed (Nedić form)
                ex = self.exchange(self.net.in_edges() & done[None, :], self.sgp_bytes,
                                   ready=np.full(self.n, t0), logged=s == self.hp.inner_steps - 1)
                stats.update(push_sum_weights(ex.link_up), ex.delivered, done)
                self.z, self.w = self.push_sum.step_uniform(
                    [self.z, self.w], ex.edges.key, ex.edges.src, ex.per_edge["link_up"],
                    ex.per_edge["delivered"])
                mixing += self.push_sum.last_mixing
            self.z = self.z - update * self.push_sum.step_scale(self.w, update.dtype)
        if sgp:
            self.last_mixing = mixing / self.hp.inner_steps
        return stats
