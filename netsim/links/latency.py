"""Propagation delay (asymmetric base + per-message jitter) and per-node bandwidths.

Jitter distributions are parametrised so that their MEAN is ``scale``:

- ``none``: 0; ``constant``: scale;
- ``uniform``: U[0, 2 scale];
- ``exponential``: Exp with mean scale;
- ``lognormal``: exp(mu + sigma Z) with mu = ln(scale) - sigma^2 / 2;
- ``pareto``: Pareto(shape alpha > 1, x_m) with x_m = scale (alpha - 1) / alpha (mean alpha x_m /
  (alpha - 1) = scale), sampled as x_m (1 + Lomax(alpha)).
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import partial
from typing import Any, Callable

import numpy as np

from netsim.links.draws import UniformAt
from netsim.links.edges import Edges
from netsim.schema import Field, check_section
from netsim.schema.params import Params, Range, param, schema
from netsim.schema.registry import Registry

Sampler = Callable[[np.random.Generator, int], np.ndarray]
JITTER = Registry("jitter distribution")

_SCALE = {"scale": Field("float", 0.0, "mean jitter (simulated s)", lo=0.0)}


# Samplers are module-level functions bound with functools.partial (picklable: checkpoints).
def _zeros(rng: np.random.Generator, m: int) -> np.ndarray:
    return np.zeros(m)


def _full(value: float, rng: np.random.Generator, m: int) -> np.ndarray:
    return np.full(m, value)


def _uniform_draw(scale: float, rng: np.random.Generator, m: int) -> np.ndarray:
    return rng.uniform(0.0, 2.0 * scale, m)


def _exponential_draw(scale: float, rng: np.random.Generator, m: int) -> np.ndarray:
    return rng.exponential(scale, m)


def _lognormal_draw(mu: float, sigma: float, rng: np.random.Generator, m: int) -> np.ndarray:
    return rng.lognormal(mu, sigma, m)


def _pareto_draw(x_m: float, alpha: float, rng: np.random.Generator, m: int) -> np.ndarray:
    return x_m * (1.0 + rng.pareto(alpha, m))


@JITTER.register("none")
def _none() -> Sampler:
    """No jitter."""
    return _zeros


@JITTER.register("constant", _SCALE)
def _constant(scale: float) -> Sampler:
    """Always ``scale``."""
    return partial(_full, scale)


@JITTER.register("uniform", _SCALE)
def _uniform(scale: float) -> Sampler:
    """U[0, 2 scale]."""
    return partial(_uniform_draw, scale)


@JITTER.register("exponential", _SCALE)
def _exponential(scale: float) -> Sampler:
    """Exponential with mean ``scale``."""
    return partial(_exponential_draw, scale)


@JITTER.register("lognormal", {**_SCALE, "sigma": Field("float", 1.0, "log-scale std", lo=0.0)})
def _lognormal(scale: float, sigma: float) -> Sampler:
    """exp(ln(scale) - sigma^2/2 + sigma Z): mean ``scale``."""
    if scale == 0:
        return _zeros
    mu = np.log(scale) - sigma**2 / 2
    return partial(_lognormal_draw, mu, sigma)


@JITTER.register("pareto", {**_SCALE, "alpha": Field("float", 2.5, "tail index (> 1)", lo=1.0,
                                                     lo_open=True)})
def _pareto(scale: float, alpha: float) -> Sampler:
    """Pareto with shape ``alpha`` and x_m = scale (alpha-1)/alpha: mean ``scale``."""
    x_m = scale * (alpha - 1) / alpha
    return partial(_pareto_draw, x_m, alpha)


@dataclass(frozen=True)
class LatencyParams(Params):
    """The ``network.latency`` section."""

    base: Range = param(0.01, "propagation delay (s); [lo, hi] draws each ordered pair once",
                        lo=0.0)
    jitter: Any = param("none", "per-message jitter with mean scale: a name or {name: "
                                "none|constant|uniform|exponential|lognormal|pareto, scale, sigma, "
                                "alpha}")
    bandwidth: float | None = param(None, "uplink and downlink (bytes/s); null = infinite",
                                    lo=0.0, lo_open=True)
    uplink: float | None = param(None, "uplink (bytes/s), overrides bandwidth; null = bandwidth",
                                 lo=0.0, lo_open=True)
    downlink: float | None = param(None, "downlink (bytes/s), overrides bandwidth; null = "
                                   "bandwidth", lo=0.0, lo_open=True)
    bandwidth_spread: float = param(0.0, "sigma of a per-node lognormal bandwidth factor (mean 1)",
                                    lo=0.0)


def validate_latency(spec: Any, path: str, n: int) -> dict:
    """Validate ``network.latency`` (missing -> 0.01 s base, no jitter, infinite bandwidth)."""
    out = check_section(path, spec, schema(LatencyParams))
    out["jitter"] = JITTER.resolve(out["jitter"], f"{path}.jitter")
    return out


class LatencyModel:
    """Asymmetric base delays drawn once per edge of the base graph (a range: the values a
    uniform ``[src, dst]`` matrix draw has on the edges), jitter per message, per-node up/down
    bandwidths."""

    def __init__(self, spec: dict, edges: Edges, rng: np.random.Generator):
        self.rng, self.n = rng, edges.n
        base = spec["base"]
        self.base = UniformAt(self.n ** 2, edges.positions()).uniform(rng, base[0], base[1]) \
            if isinstance(base, list) else np.full(len(edges), float(base))
        jitter = {k: v for k, v in spec["jitter"].items() if k != "name"}
        self.jitter_mean = jitter.get("scale", 0.0)
        self._jitter = JITTER.get(spec["jitter"]["name"], "network.latency.jitter").obj(**jitter)
        factor = np.exp(rng.normal(0.0, 1.0, self.n) * spec["bandwidth_spread"]
                        - spec["bandwidth_spread"]**2 / 2)
        self.uplink = self._rate(spec["uplink"], spec["bandwidth"], factor)
        self.downlink = self._rate(spec["downlink"], spec["bandwidth"], factor)

    @staticmethod
    def _rate(value: float | None, bandwidth: float | None, factor: np.ndarray) -> np.ndarray:
        """Per-node bytes/s: ``value`` or else ``bandwidth`` (inf if both null) times ``factor``."""
        rate = value if value is not None else bandwidth
        return factor * (np.inf if rate is None else rate)

    def propagation(self, edge: np.ndarray) -> np.ndarray:
        """float[m]: base delay of each message's edge (edge ids) plus one jitter draw each."""
        edge = np.asarray(edge, int)
        return self.base[edge] + self._jitter(self.rng, edge.size).reshape(edge.shape)

    def mean_propagation(self) -> np.ndarray:
        """float[E]: expected propagation delay of each edge, base + mean jitter."""
        return self.base + self.jitter_mean


def make_latency(spec: dict, edges: Edges, rng: np.random.Generator) -> LatencyModel:
    """Build the latency model of a validated ``network.latency`` spec over the base graph."""
    return LatencyModel(spec, edges, rng)
