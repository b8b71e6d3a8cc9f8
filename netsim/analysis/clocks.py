"""Results over simulated time (docs/async.md, "Results"): the first simulated time at which the
mean test accuracy over clients reaches a target (any run, from its evaluations' ``sim_time``),
and what summary.json says of an event-driven run's clocks: the ages of the models and messages
its clients merged (``staleness/`` arrays) and their idle time (``idle/`` arrays)."""
from __future__ import annotations

from typing import Iterable

import numpy as np

#: summary.json's statistics of the ages (simulated s) of what an event-driven run merged
STALENESS_KEYS = ("staleness_mean", "staleness_median", "staleness_p90", "staleness_max")
#: summary.json's idle time of an event-driven run: the mean and the largest over clients of a
#: client's idle simulated seconds over the run
IDLE_KEYS = ("idle_mean", "idle_max")
CLOCK_KEYS = STALENESS_KEYS + IDLE_KEYS


def target_key(target: float) -> str:
    """summary.json's key of an accuracy target (``0.8`` -> ``"0.8"``)."""
    return f"{target:g}"


def mean_accuracy(acc: np.ndarray | None) -> float:
    """Mean over clients of a test accuracy ``[N]`` in float64, clients without a score (NaN)
    left out; NaN when there is none (regression, or no client scored)."""
    if acc is None:
        return float("nan")
    scored = np.asarray(acc, np.float64)
    scored = scored[~np.isnan(scored)]
    return float(scored.mean()) if scored.size else float("nan")


def first_crossing(values: np.ndarray, target: float, higher: bool = True) -> int | None:
    """Index of the first value at or above ``target`` (at or below with ``higher`` False), or
    None when none is."""
    values = np.asarray(values, np.float64)
    hit = np.flatnonzero(values >= target if higher else values <= target)
    return int(hit[0]) if hit.size else None


def time_to_accuracy(times: np.ndarray, accuracy: np.ndarray,
                     targets: Iterable[float]) -> dict[str, float | None]:
    """Per target (key :func:`target_key`): the simulated time of the first evaluation whose mean
    test accuracy ``accuracy`` reaches it, None when none does (``times``, ``accuracy``: one value
    per evaluation, in order)."""
    out: dict[str, float | None] = {}
    for target in targets:
        k = first_crossing(accuracy, target)
        out[target_key(target)] = None if k is None else float(times[k])
    return out


def clock_stats(arrays: dict[str, dict[str, np.ndarray]]) -> dict[str, float | None]:
    """summary.json's :data:`CLOCK_KEYS` of one run from its ``staleness/`` and ``idle/`` arrays
    (none for a round-based run): mean, median, 90th percentile and largest age of what its
    clients merged (null when nothing was merged), and the mean and largest idle time of a
    client."""
    out: dict[str, float | None] = {}
    if "staleness" in arrays:
        age = arrays["staleness"]["age"]
        stats = ((age.mean(), np.median(age), np.quantile(age, 0.9), age.max()) if age.size
                 else (None,) * len(STALENESS_KEYS))
        out.update({k: None if v is None else float(v) for k, v in zip(STALENESS_KEYS, stats)})
    if "idle" in arrays:
        per_client = arrays["idle"]["idle"].sum(0)
        out.update(idle_mean=float(per_client.mean()), idle_max=float(per_client.max()))
    return out
