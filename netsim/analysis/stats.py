"""Means and Student-t confidence intervals over seeds."""
from __future__ import annotations

import numpy as np


def mean_ci(values, level: float = 0.95) -> tuple[float, float, float]:
    """``(mean, low, high)`` of the finite ``values``: Student-t interval of the mean.

    One value gives a zero-width interval; no finite value gives nans.
    """
    v = np.asarray(values, float).ravel()
    v = v[np.isfinite(v)]
    if v.size == 0:
        return float("nan"), float("nan"), float("nan")
    mean = float(v.mean())
    if v.size < 2:
        return mean, mean, mean
    from scipy import stats             # imported for an interval only (about 0.5 s)
    half = float(stats.t.ppf(0.5 + level / 2, v.size - 1) * v.std(ddof=1) / np.sqrt(v.size))
    return mean, mean - half, mean + half
