"""Hyper-Gradient Push (Terashita & Hara, Alg. 2), batched over all agents.

Notation (paper Sec. 2-4). SGP in the Nedić–Olshevsky form the authors run (App. A.3):
``z_i <- sum_j p_{j->i}(delta_j) z_j - gamma kappa_i grad_x f_i(z_i / w_i, lambda_i; xi_i)``,
``w <- P w``, x_i = z_i / w_i, with netsim's cap ``kappa_i = min(1, w_i / min_weight)``
(:meth:`netsim.runtime.pushsum.PushSum.step_scale`; kappa = 1 is the paper's map). Its
expected map psi has the fixed point z*(lambda) (eq. 5); the hyper-gradient of F_bar(lambda) =
sum_s F_s(x_s*, lambda_s) (eq. 6) by implicit differentiation and an M-term Neumann series is
eq. (8). SRB (eq. 9) estimates it with sampled Jacobians; agent i would need ``u_j`` from every
j it *sends* to (p_{i->j}), i.e. over the reverse edge j->i, which a directed realisation does
not provide (Sec. 4.2, :func:`srb_naive_weights`). HGP receives ``u_j`` over the realised
*incoming* edges and debiases by eq. (12): weight ``p_bar_{i->j} delta_{j->i} /
delta_bar_{j->i}``, unbiased because E[delta_{j->i}] = delta_bar_{j->i}. Nedić-form specialisation (v2 code;
docs/specifications/pdbo.md#hyper-gradient-hgp)::

    u_i^0 = d_{z_i} F_i = grad_x F_i(x_i, lambda_i) / w_i,   v_i^0 = d_{lambda_i} F_i
    s_i   = sum_j C_ij u_j,  C_ij = p_bar_{i->j} delta_{j->i} / delta_bar_{j->i},
                           C_ii = p_bar_{i->i}
    v_i  <- v_i - gamma kappa_i (d_lambda grad_x f_i)^T u_i
    u_i  <- s_i - gamma (kappa_i / w_i) H_i u_i             (H_i = d_x grad_x f_i)

Both steps differentiate the same (capped) map: kappa_i scales agent i's whole local step, so it
enters d_{lambda_i} psi_i as well as d_{z_i} psi_i.

The push-sum weight needs no adjoint: its fixed point w* = E[P] w* does not depend on lambda.

Lossy links: u is not push-sum mass (a u that missed step m must not arrive at step m + 1), so
HGP uses no running sums; with delta_bar = the on-time arrival rate (link up, not lost, not late)
``E[C_ij] = p_bar_{i->j}`` still holds, and with running sums SGP's stationary equations keep
P_bar, so the estimate stays unbiased (docs/papers/pdbo.md, "Lossy links").

All [N, N] arrays are receiver-major like the engine's: ``delivered[i, j]`` = the message from j
reached i; ``push[j, i] = p_{i->j}`` (column-stochastic, :func:`netsim.runtime.mixing.push_sum_weights`).
"""
from __future__ import annotations

from typing import Callable

import numpy as np
import torch
from torch import Tensor


def expected_push_weights(avail: np.ndarray) -> np.ndarray:
    """``P_bar[j, i] = E[p_{i->j}(delta_i)]`` for independent Bernoulli out-links.

    ``avail[i, k]`` = P(edge i->k up) (sender-major, as ``LinkModel.availability()``). With
    S_i the number of i's realised out-links, ``p_{i->i} = 1 / (1 + S_i)`` and ``p_{i->j} =
    delta_{i->j} / (1 + S_i)``; ``E[1 / (a + S)] = int_0^1 t^(a-1) E[t^S] dt`` with
    ``E[t^S] = prod_k (1 - avail_ik + avail_ik t)``, a polynomial, integrated exactly by
    Gauss–Legendre quadrature.
    """
    a = np.asarray(avail, float).copy()
    n = len(a)
    np.fill_diagonal(a, 0.0)
    nodes, weights = np.polynomial.legendre.leggauss(n // 2 + 2)
    t, wq = (nodes + 1.0) / 2.0, weights / 2.0                     # on [0, 1]
    factor = 1.0 - a[:, :, None] + a[:, :, None] * t               # [i, k, q]
    gen = factor.prod(axis=1)                                      # E[t^S_i]: [i, q]
    self_w = gen @ wq                                              # E[1 / (1 + S_i)]
    others = a * ((t * gen[:, None, :] / factor) @ wq)             # a_ij E[1 / (2 + S_i^-j)]
    sender_major = others + np.diag(self_w)
    return sender_major.T


class EdgeStats:
    """Running estimates gathered while SGP runs (docs/specifications/pdbo.md#network-assumptions).

    ``p_bar[j, i]`` = mean of sender i's push weights p_{i->j} over the steps it sent (a
    sender knows its realised out-links); ``delta_bar[i, j]`` = share of steps in which j's
    message reached i on time (a late message counts as lost).
    """

    def __init__(self, n: int):
        self.push_sum = np.zeros((n, n))
        self.sends = np.zeros(n)
        self.received = np.zeros((n, n))
        self.steps = 0

    def update(self, push: np.ndarray, delivered: np.ndarray, senders: np.ndarray) -> None:
        """Add one SGP step: push weights ``push[j, i]``, on-time arrivals, who sent."""
        self.push_sum[:, senders] += push[:, senders]
        self.sends += senders
        self.received += delivered
        self.steps += 1

    def p_bar(self) -> np.ndarray:
        """Mean push weights; a sender that never sent keeps everything (identity column)."""
        n = len(self.sends)
        out = np.eye(n)
        sent = self.sends > 0
        out[:, sent] = self.push_sum[:, sent] / self.sends[sent]
        return out

    def delta_bar(self) -> np.ndarray:
        """On-time arrival frequency ``delta_bar[i, j]`` of j's messages at i."""
        return self.received / max(self.steps, 1)


def hgp_weights(p_bar: np.ndarray, delta_bar: np.ndarray, delivered: np.ndarray) -> np.ndarray:
    """``C[..., i, j] = p_bar[j, i] delivered[..., i, j] / delta_bar[i, j]`` and ``C_ii =
    p_bar[i, i]`` (eq. 12). A peer never heard from (delta_bar = 0) is dropped, not divided by.

    ``delivered`` may carry leading batch dimensions (independent realisations).
    Pass ``delta_bar = 1`` off the diagonal for the estimate *without* the 1/delta_bar
    correction (biased: E[C_ij] = p_bar_{i->j} delta_bar_{j->i}).
    """
    n = len(p_bar)
    off = ~np.eye(n, dtype=bool)
    heard = (np.asarray(delta_bar) > 0) & off
    scale = np.where(heard, p_bar.T / np.where(heard, delta_bar, 1.0), 0.0)
    return np.where(np.asarray(delivered, bool) & off, scale, 0.0) + np.diag(np.diag(p_bar))


def srb_naive_weights(push: np.ndarray, delivered: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The naive decentralisation of SRB (Sec. 4.2): agent i needs ``u_j`` weighted by its own
    realised push weight p_{i->j}(delta_i) for every j it sends to, so it must *receive* from j.

    ``push[..., j, i] = p_{i->j}`` (:func:`netsim.runtime.mixing.push_sum_weights` of this step's
    links), ``delivered[..., i, j]``: j's u reached i. Returns ``C[..., i, j] = p_{i->j}
    delivered[..., i, j]`` (plus p_{i->i}), the terms that can be formed, and
    ``missing[..., i, j]``: i sent to j but nothing came back from j. SRB is computable only
    when ``missing`` is empty (undirected realisations); dropping the missing terms biases the
    estimate like omitting HGP's 1/delta_bar correction.
    """
    push = np.asarray(push, float)
    off = ~np.eye(push.shape[-1], dtype=bool)
    back = np.swapaxes(push, -1, -2)                       # back[..., i, j] = p_{i->j}
    have = np.asarray(delivered, bool) & off
    c = np.where(have, back, 0.0) + np.where(off, 0.0, back)
    return c, (back > 0) & off & ~have


def hgp_step(u: Tensor, v: Tensor, c: Tensor, hvp: Tensor, mixed: Tensor, gamma: float,
             w: Tensor, kappa: Tensor) -> tuple[Tensor, Tensor]:
    """One HGP step (Alg. 2 lines 3-4, Nedić form; the transposed Jacobians of eq. 8) of the
    map ``psi_i = sum_j p_{j->i} z_j - gamma kappa_i grad_x f_i(z_i / w_i, lambda_i)``:
    ``u <- C u - gamma (kappa / w) H u``, ``v <- v - gamma kappa (d_lambda grad_x f)^T u``.

    ``u: [..., N, d_x]``, ``v: [..., N, d_lambda]``, ``c: [..., N, N]`` from :func:`hgp_weights`,
    ``hvp = H u`` and ``mixed = (d_lambda grad_x f)^T u`` at the current u, ``w: [N, 1]``,
    ``kappa: [N, 1]`` the inner step's cap (:meth:`netsim.runtime.pushsum.PushSum.step_scale`;
    ``w / kappa = max(w, min_weight)``, and an agent that is not capped computes exactly the
    uncapped step).
    """
    return c @ u - (gamma / (w / kappa)) * hvp, v - gamma * (kappa * mixed)


def grad_vjp(f: Callable[[Tensor, Tensor], Tensor], x: Tensor, lam: Tensor,
             u: Tensor) -> tuple[Tensor, Tensor]:
    """``(H u, (d_lambda grad_x f)^T u)`` for all agents from ``f(x[N, d_x], lam[N, d_lambda])``,
    a sum of per-agent losses (so the Jacobian of ``grad_x f`` is block diagonal and H
    symmetric): ``grad_x f`` with its graph kept, then one reverse pass of it against u. One
    sample serves both products: the paper's practical modification (App. A.3)."""
    x, lam = x.detach().requires_grad_(True), lam.detach().requires_grad_(True)
    with torch.enable_grad():
        (grad_x,) = torch.autograd.grad(f(x, lam), x, create_graph=True)
        hvp, mixed = torch.autograd.grad(grad_x, (x, lam), u, materialize_grads=True)
    return hvp, mixed
