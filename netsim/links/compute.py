"""Local computation time: step time x steps / device speed x straggler slowdown x jitter.

Per-node speeds (mean-1 multipliers except ``uniform``/``classes``, which are as given) and the
straggler set are drawn once; the optional straggler jitter is a per-call multiplicative factor
with mean 1 for every node: ``pareto``: x_m (1 + Lomax(alpha)) with x_m = (alpha - 1) / alpha;
``lognormal``: exp(sigma Z - sigma^2 / 2).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

from netsim.errors import ConfigError
from netsim.schema import Field, check_section
from netsim.schema.params import Params, param, schema
from netsim.schema.registry import Registry

SPEEDS = Registry("speed distribution")


@SPEEDS.register("constant")
def _constant(n: int, rng: np.random.Generator) -> np.ndarray:
    """Every node has speed 1."""
    return np.ones(n)


@SPEEDS.register("uniform", {
    "low": Field("float", 0.5, "lowest speed", lo=0.0, lo_open=True),
    "high": Field("float", 1.5, "highest speed (>= low)", lo=0.0, lo_open=True)})
def _uniform(n: int, rng: np.random.Generator, low: float, high: float) -> np.ndarray:
    """Speeds U[low, high]."""
    return rng.uniform(low, high, n)


@SPEEDS.register("lognormal", {"sigma": Field("float", 0.5, "log-scale std", lo=0.0)})
def _lognormal(n: int, rng: np.random.Generator, sigma: float) -> np.ndarray:
    """Speeds exp(sigma Z - sigma^2/2), mean 1."""
    return np.exp(sigma * rng.standard_normal(n) - sigma**2 / 2)


@SPEEDS.register("classes", {"classes": Field(
    "list", doc="[[speed, share], ...]: device classes, shares summing to 1")})
def _classes(n: int, rng: np.random.Generator, classes: list[list[float]]) -> np.ndarray:
    """round(share * n) nodes per class (largest remainder), assigned to random nodes."""
    speed, share = np.asarray(classes, float).T
    share = share / share.sum()
    counts = np.floor(share * n).astype(int)
    rest = np.argsort(-(share * n - counts), kind="stable")[: n - counts.sum()]
    counts[rest] += 1
    return rng.permutation(np.repeat(speed, counts))


@dataclass(frozen=True)
class StragglerParams(Params):
    """The ``network.compute.stragglers`` section."""

    share: float = param(0.0, "fraction of nodes slowed down (drawn once)", lo=0.0, hi=1.0)
    clients: list[int] | None = param(None, "the stragglers by index, instead of a drawn share "
                                      "(e.g. the clients holding some labels); null = drawn",
                                      lo=0)
    slowdown: float = param(10.0, "time multiplier of a straggler", lo=1.0)
    jitter: Literal["none", "pareto", "lognormal"] = param(
        "none", "per-call multiplicative jitter for every node, mean 1")
    alpha: float = param(3.0, "pareto tail index (> 1)", lo=1.0, lo_open=True)
    sigma: float = param(0.5, "lognormal log-scale std", lo=0.0)


@dataclass(frozen=True)
class ComputeParams(Params):
    """The ``network.compute`` section."""

    step_time: float | None = param(None, "seconds per local step at speed 1; null = from model "
                                    "FLOPs", lo=0.0, lo_open=True)
    speed: Any = param("constant", "per-node speed: a name or {name: constant|uniform|lognormal|"
                                   "classes, low, high, sigma, classes}")
    stragglers: dict | None = param(None, "{share or clients, slowdown, jitter, alpha, sigma}; "
                                    "null = none")


def _check_speed(speed: dict, path: str) -> None:
    """Impossible combinations of a resolved speed spec."""
    if speed["name"] == "uniform" and speed["high"] < speed["low"]:
        raise ConfigError(f"{path}.high", speed["high"], f"a speed >= low = {speed['low']}")
    if speed["name"] == "classes":
        rows = speed["classes"]
        ok = rows and all(isinstance(r, (list, tuple)) and len(r) == 2 and r[0] > 0
                          and 0 <= r[1] <= 1 for r in rows)
        if not ok or abs(sum(r[1] for r in rows) - 1) > 1e-6:
            raise ConfigError(f"{path}.classes", rows,
                              "a non-empty list of [speed > 0, share in [0, 1]], shares sum to 1")


def validate_compute(spec: Any, path: str, n: int) -> dict:
    """Validate ``network.compute`` (missing -> speed 1, no stragglers), filling all defaults."""
    out = check_section(path, spec, schema(ComputeParams))
    out["speed"] = SPEEDS.resolve(out["speed"], f"{path}.speed")
    _check_speed(out["speed"], f"{path}.speed")
    out["stragglers"] = strag = check_section(f"{path}.stragglers", out["stragglers"],
                                              schema(StragglerParams))
    if strag["clients"] is not None:
        if strag["share"]:
            raise ConfigError(f"{path}.stragglers.share", strag["share"],
                              "0 (or no share) where stragglers.clients lists the stragglers")
        if max(strag["clients"], default=-1) >= n or len(set(strag["clients"])) < len(
                strag["clients"]):
            raise ConfigError(f"{path}.stragglers.clients", strag["clients"],
                              f"distinct client indices 0..{n - 1}")
    return out


class ComputeModel:
    """Per-node durations of local work; ``speed`` and ``stragglers`` are fixed for the run."""

    def __init__(self, spec: dict, n: int, rng: np.random.Generator):
        self.rng, self.n = rng, n
        self.step_time = spec["step_time"]
        speed = {k: v for k, v in spec["speed"].items() if k != "name"}
        self.speed = SPEEDS.get(spec["speed"]["name"], "network.compute.speed").obj(n, rng, **speed)
        strag = spec["stragglers"]
        self.stragglers = np.zeros(n, bool)
        if strag["clients"] is not None:
            self.stragglers[strag["clients"]] = True
        else:
            self.stragglers[rng.choice(n, int(round(strag["share"] * n)), replace=False)] = True
        self.slowdown = np.where(self.stragglers, strag["slowdown"], 1.0)
        self.jitter, self.alpha, self.sigma = strag["jitter"], strag["alpha"], strag["sigma"]

    def _jitter(self, size: int | None = None) -> np.ndarray:
        """Mean-1 multiplicative factors for one call: one per node, or ``size`` of them."""
        size = self.n if size is None else size
        if self.jitter == "pareto":
            return (self.alpha - 1) / self.alpha * (1.0 + self.rng.pareto(self.alpha, size))
        if self.jitter == "lognormal":
            return np.exp(self.sigma * self.rng.standard_normal(size) - self.sigma**2 / 2)
        return np.ones(size)

    def durations(self, steps: int | np.ndarray, step_time: float | None = None,
                  t: float = 0.0) -> np.ndarray:
        """float[n]: simulated seconds for each node's ``steps`` local steps from time ``t``.

        The configured ``step_time`` wins; otherwise the caller's (derived from model FLOPs) is
        used. The model is stationary, so ``t`` does not change the law.
        """
        base = self.step_time if self.step_time is not None else step_time
        if base is None:
            raise ValueError("compute: step_time is null in the config and was not passed")
        steps = np.broadcast_to(np.asarray(steps, float), (self.n,))
        return base * steps / self.speed * self.slowdown * self._jitter()

    def duration(self, i: int, steps: int, step_time: float | None = None) -> float:
        """Node i's :meth:`durations` alone, with one jitter draw for it (an event-driven run
        asks per wake-up: one draw, not one per node)."""
        base = self.step_time if self.step_time is not None else step_time
        if base is None:
            raise ValueError("compute: step_time is null in the config and was not passed")
        scale = base * float(steps) / self.speed[i] * self.slowdown[i]
        return float(scale if self.jitter == "none" else scale * self._jitter(1)[0])


def make_compute(spec: dict, n: int, rng: np.random.Generator) -> ComputeModel:
    """Build the compute model of a validated ``network.compute`` spec."""
    return ComputeModel(spec, n, rng)
