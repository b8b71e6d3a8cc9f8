"""DiPLe's pairwise mixing weights (Zheng, Naghizadeh, Yener): the bisection on each pair's
coefficient and the row normalisation of the coefficients into mixing weights
(docs/specifications/diple.md#update-equations)."""
from __future__ import annotations

import math

import numpy as np
import torch
from torch import Tensor


#: Upper bound on the floats of one [P, d] block of mixed models in the bisection: 8 MB of
#: float32, so that a block's models, built anew at each bisection point, are still in cache when
#: they are evaluated (each pair's bisection is its own: the block size changes no value). At
#: N = 100 with the MLP 64-128-10 (800 to 4,900 pairs a round), DiPLe's round took about 20% less
#: than with blocks of 2^24 floats (64 MB), one thread.
BISECTION_FLOATS = 2 ** 21


def bisection_iterations(eps: float, search: str) -> int:
    """Iterations until the interval holding the minimiser is at most eps long.

    ``gradient`` halves the interval: ``2^-k <= eps``. ``loss`` keeps ``w/2 + eps/4`` of a width w:
    ``w_k = eps/2 + (1 - eps/2) 2^-k <= eps``.
    """
    if search == "gradient":
        return max(1, math.ceil(math.log2(1.0 / eps) - 1e-9))
    return max(1, math.ceil(math.log2((2.0 - eps) / eps) - 1e-9))


def bisect(phi, n: int, eps: float, search: str, device=None) -> Tensor:
    """Minimise n convex functions of a in [0, 1] at once (eq. 3), to within eps.

    ``phi(a: Tensor[k * n]) -> Tensor[k * n]``: with ``search="loss"`` the values of the n
    functions at ``k = 2`` stacked points per function; with ``"gradient"`` their derivatives
    (k = 1). Returns ``a[n]``: 0 (1) when the final interval still touches 0 (1), else its midpoint;
    values below eps/2 are set to 0.
    """
    lo = torch.zeros(n, dtype=torch.float64, device=device)
    hi = torch.ones(n, dtype=torch.float64, device=device)
    delta = eps / 4.0
    for _ in range(bisection_iterations(eps, search)):
        mid = (lo + hi) / 2
        if search == "loss":
            f = phi(torch.cat([mid - delta, mid + delta]))
            left = f[:n] <= f[n:]                      # the minimiser lies at or below mid + delta
            lo, hi = torch.where(left, lo, mid - delta), torch.where(left, mid + delta, hi)
        else:
            left = phi(mid) > 0
            lo, hi = torch.where(left, lo, mid), torch.where(left, mid, hi)
    a = torch.where(lo <= 0, torch.zeros_like(lo), torch.where(hi >= 1, torch.ones_like(hi),
                                                                (lo + hi) / 2))
    return torch.where(a < eps / 2, torch.zeros_like(a), a)


def normalise_rows(a: np.ndarray, self_weight: str, init_weight: float, eps: float) -> np.ndarray:
    """Row-stochastic A from the pairwise coefficients ``a_ij`` (ambiguity 1 of
    docs/specifications/diple.md#ambiguities)."""
    if self_weight == "odds":
        c = np.minimum(a, 1.0 - eps)
        A, diag = c / (1.0 - c), 1.0
    else:
        A, diag = a.astype(float).copy(), init_weight
    np.fill_diagonal(A, diag)
    return A / A.sum(axis=1, keepdims=True)
