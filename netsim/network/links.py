"""Link models: which directed edges of the base graph are up at a step (time-varying links).

``LINKS`` holds ``always`` (static graph), ``bernoulli`` (independent per edge and step with
probability p_ij, p_ij optionally drawn once from U[lo, hi] as in PDBO), ``gilbert_elliott``
(bursty continuous-time on/off Markov chain per directed edge) and ``trace`` (intervals replayed
from a CSV file, netsim.network.trace_links). A model is a :class:`LinkModel` subclass registered
with ``@LINKS.register(name, fields)``, constructed as ``cls(adjacency, rng, **params)``; an
optional static ``check(params, path, n)`` validates what needs the number of clients.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from netsim.registry import Registry
from netsim.schema import Field

LINKS = Registry("link model")


class LinkModel:
    """Base: ``up(t)`` realises every directed edge at time t; ``availability()`` is P(up)."""

    def __init__(self, adjacency: np.ndarray):
        self.adjacency = np.asarray(adjacency, bool) & ~np.eye(len(adjacency), dtype=bool)
        self.n = len(adjacency)

    def up(self, t: float) -> np.ndarray:
        raise NotImplementedError

    def availability(self) -> np.ndarray:
        raise NotImplementedError


@LINKS.register("always")
class AlwaysLinks(LinkModel):
    """Every edge of the base graph is always up."""

    def __init__(self, adjacency: np.ndarray, rng: np.random.Generator):
        super().__init__(adjacency)

    def up(self, t: float) -> np.ndarray:
        return self.adjacency.copy()

    def availability(self) -> np.ndarray:
        return self.adjacency.astype(float)


def _symmetrise(a: np.ndarray) -> np.ndarray:
    """Copy the strict upper triangle onto the lower one."""
    upper = np.triu(a, 1)
    return upper + upper.T


@LINKS.register("bernoulli", {
    "p": Field("range", 0.5, "P(edge up) per step; [lo, hi] draws each p_ij once from U[lo, hi]",
               lo=0.0, hi=1.0),
    "symmetric": Field("bool", False, "same p_ij and draw for i->j and j->i (undirected links)")})
class BernoulliLinks(LinkModel):
    """Independent Bernoulli(p_ij) per directed edge and per call (fresh draw every step)."""

    def __init__(self, adjacency: np.ndarray, rng: np.random.Generator,
                 p: float | list[float] = 0.5, symmetric: bool = False):
        super().__init__(adjacency)
        self.rng, self.symmetric = rng, symmetric
        if isinstance(p, list):
            probs = rng.uniform(p[0], p[1], (self.n, self.n))
            probs = _symmetrise(probs) if symmetric else probs
        else:
            probs = np.full((self.n, self.n), float(p))
        self.p = np.where(self.adjacency, probs, 0.0)

    def up(self, t: float) -> np.ndarray:
        u = self.rng.random((self.n, self.n))
        if self.symmetric:
            u = _symmetrise(u)
        return (u < self.p) & self.adjacency

    def availability(self) -> np.ndarray:
        return self.p.copy()


@LINKS.register("gilbert_elliott", {
    "mean_up": Field("float", 10.0, "mean up duration (simulated s), exponential",
                     lo=0.0, lo_open=True),
    "mean_down": Field("float", 1.0, "mean down duration (simulated s), exponential",
                       lo=0.0, lo_open=True)})
class GilbertElliottLinks(LinkModel):
    """Continuous-time two-state Markov chain per directed edge (Gilbert–Elliott on/off bursts).

    Up and down durations are exponential with means ``mean_up`` and ``mean_down``; the state at
    t = 0 is drawn from the stationary law P(up) = mean_up / (mean_up + mean_down).
    """

    def __init__(self, adjacency: np.ndarray, rng: np.random.Generator,
                 mean_up: float = 10.0, mean_down: float = 1.0):
        super().__init__(adjacency)
        self.rng, self.mean_up, self.mean_down = rng, mean_up, mean_down
        self.edges = np.flatnonzero(self.adjacency)
        self.state = rng.random(self.edges.size) < mean_up / (mean_up + mean_down)
        self.next_switch = self._durations(self.state)
        self.t = 0.0

    def _durations(self, state: np.ndarray) -> np.ndarray:
        """Exponential sojourn times for edges entering ``state``."""
        return self.rng.exponential(np.where(state, self.mean_up, self.mean_down))

    def advance(self, t: float) -> None:
        """Play every switch up to ``t``, one vectorised round per pending switch per edge."""
        if t < self.t:
            raise ValueError(f"gilbert_elliott: time went backwards ({t} < {self.t})")
        self.t = t
        due = np.flatnonzero(self.next_switch <= t)
        while due.size:
            self.state[due] ^= True
            self.next_switch[due] += self._durations(self.state[due])
            due = due[self.next_switch[due] <= t]

    def up(self, t: float) -> np.ndarray:
        self.advance(t)
        out = np.zeros(self.n * self.n, bool)
        out[self.edges] = self.state
        return out.reshape(self.n, self.n)

    def availability(self) -> np.ndarray:
        return self.adjacency * (self.mean_up / (self.mean_up + self.mean_down))


def validate_links(spec: Any, path: str, n: int) -> dict:
    """Resolve the ``network.links`` section (missing -> ``always``) and run the model's
    ``check`` on ``n`` clients where it has one."""
    resolved = LINKS.resolve("always" if spec is None else spec, path)
    check = getattr(LINKS.get(resolved["name"], f"{path}.name").obj, "check", None)
    if check is not None:
        check({k: v for k, v in resolved.items() if k != "name"}, path, n)
    return resolved


def make_links(spec: dict, adjacency: np.ndarray, rng: np.random.Generator) -> LinkModel:
    """Build the link model of a resolved ``spec`` over the base ``adjacency``."""
    params = {k: v for k, v in spec.items() if k != "name"}
    return LINKS.get(spec["name"], "network.links.name").obj(adjacency, rng, **params)
