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
``train``, ``net``, ``push_sum``, ``x0``, ``dx``, ``lam``, ``sgp_bytes``, the state ``(z, w)``
and ``_rows`` (a :class:`netsim.runtime.scratch.Scratch` for the ``[x | lambda]`` rows of the
inner steps); it sets ``z``, ``w`` and ``last_mixing``.
"""
from __future__ import annotations

import numpy as np
import torch
from torch import Tensor

from algorithms.hgp import EdgeStats
from netsim.runtime.mixing import push_sum_weights


#: bytes of the rows one pass of :meth:`InnerSGP._x_into` or :meth:`InnerSGP._descend` works
#: on (in cache)
X_PASS_BYTES = 1 << 20


class InnerSGP:
    """PDBO-MTL's inner solver: T SGP steps on the learners with lambda fixed (App. A.3)."""

    def _inner_loss(self, x: Tensor, lam: Tensor, xb: Tensor, yb: Tensor) -> Tensor:
        """``f(x, lam; xi)`` summed over agents: mixture NLL + wd / 2 ||x||^2 (a scalar)."""
        return (self.bank.loss_fn(torch.cat([x, lam], 1), xb, yb).sum()
                + 0.5 * self.train.weight_decay * x.pow(2).sum())

    def _inner_grad(self, rows: Tensor, xb: Tensor, yb: Tensor,
                    stats: dict | None = None) -> Tensor:
        """``grad_x f(x, lam; xi)`` of every agent, ``[N, d_x]``, at ``rows = [x | lam]``: one
        backward pass through the bank's per-parameter views
        (:meth:`netsim.runtime.ClientBank.grad`; the same values as differentiating
        :meth:`_inner_loss`). ``stats`` (BatchNorm): receives the batch statistics of this
        forward pass."""
        _, g = self.bank.grad(xb, yb, flat=rows, stats=stats)
        return g[:, : self.dx] + self.train.weight_decay * rows[:, : self.dx]

    def x(self) -> Tensor:
        """The de-biased learners ``x_i = z_i / w_i`` of every agent."""
        return self.push_sum.debias(self.z, self.w, self.x0.dtype)

    def _x_into(self, rows: Tensor) -> Tensor:
        """:meth:`x` written into the first ``d_x`` columns of ``rows`` (``[N, d_x + d_lambda]``,
        lambda in the others) and returned as that view: each quotient in the promoted dtype
        (float64), rounded once on the store, as ``debias`` gives it. On the CPU a few rows at a
        time (:data:`X_PASS_BYTES` of float64) through a kept buffer, so that the cast, the
        division and the store run in cache: at K = 3 learners (N = 100, d_x = 28,830, one
        thread) 2.7-2.9 ms against 5.3-5.8 ms for ``debias`` and the concatenation with lambda."""
        z, w, x, n = self.z, self.w, rows[:, : self.dx], self.n
        dtype = torch.promote_types(z.dtype, w.dtype)
        step = self._pass_rows(dtype)
        wide = self._rows.like(z[:step], dtype)
        for a in range(0, n, step):
            part = wide[: min(step, n - a)]
            x[a:a + step].copy_(part.copy_(z[a:a + step]).div_(w[a:a + step]))
        return x

    def _pass_rows(self, dtype: torch.dtype) -> int:
        """Rows of ``d_x`` values in ``dtype`` one pass of :meth:`_x_into` or :meth:`_descend`
        takes: :data:`X_PASS_BYTES` on the CPU, all of them elsewhere."""
        if self.z.device.type != "cpu":
            return self.n
        return min(self.n, max(1, X_PASS_BYTES // (dtype.itemsize * max(1, self.dx))))

    def _descend(self, g: Tensor, coef: Tensor) -> None:
        """The local step after the mixing, in place: ``z -= (coef * g) * kappa`` (``coef``:
        gamma_t where the agent finished its compute, else 0, ``[N, 1]``; ``kappa``: the step's
        cap, :meth:`netsim.runtime.pushsum.PushSum.step_scale`), by the passes of
        :meth:`_x_into`: the same products in cache (K = 3 as above: 1.5 ms against 2.6 ms for
        the whole tensors)."""
        z, n, scale = self.z, self.n, self.push_sum.step_scale(self.w, g.dtype)
        step = self._pass_rows(g.dtype)
        work = self._rows.like(g[:step])
        for a in range(0, n, step):
            part = work[: min(step, n - a)]
            z[a:a + step].sub_(torch.mul(g[a:a + step], coef[a:a + step], out=part)
                               .mul_(scale[a:a + step]))

    def inner_lr(self, step: int) -> float:
        """train.lr x 0.1 per milestone of ``decay_last`` reached (App. A.3)."""
        left = self.hp.inner_steps - step
        return self.train.lr * 0.1 ** sum(left <= last for last in self.hp.decay_last)

    def solve_inner(self) -> EdgeStats | None:
        """T inner steps from the current (z, w) with lambda fixed; returns SGP's edge stats."""
        sgp = self.hp.inner == "sgp"
        stats = EdgeStats(self.n) if sgp else None
        mixing = np.zeros((self.n, self.n))
        rows = self._rows.like(self.bank.flat)          # [x | lam], lambda fixed while it runs
        rows[:, self.dx:] = self.lam
        for s in range(self.hp.inner_steps):
            t0 = self.net.now
            done = self.compute_phase(active=self.net.alive(), steps=1).finished
            xb, yb = self.data.sample_batch("train", self.train.batch_size, self.gen)
            batch: dict | None = None if self.bank.running is None else {}
            self._x_into(rows)
            g = self._inner_grad(rows, xb, yb, batch)
            if batch is not None:                        # BatchNorm: as a training step would
                idx = self.index(done, self.device)
                self.bank.update_statistics({k: v[idx] for k, v in batch.items()}, idx)
            mask = torch.as_tensor(done, dtype=g.dtype, device=self.device)[:, None]
            if sgp:  # the pre-step (z, w) goes out while the gradient is computed (Nedić form)
                ex = self.exchange(self.net.in_edges() & done[None, :], self.sgp_bytes,
                                   ready=np.full(self.n, t0), logged=s == self.hp.inner_steps - 1)
                stats.update(push_sum_weights(ex.link_up), ex.delivered, done)
                self.z, self.w = self.push_sum.step_uniform(
                    [self.z, self.w], ex.edges.key, ex.edges.src, ex.per_edge["link_up"],
                    ex.per_edge["delivered"])
                mixing += self.push_sum.last_mixing
            # in place: z is SGP's output buffer, or (local SGD) no other holder's
            self._descend(g, self.inner_lr(s) * mask)
        if sgp:
            self.last_mixing = mixing / self.hp.inner_steps
        return stats
