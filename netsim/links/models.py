"""Link models: which directed edges of the base graph are up at a step (time-varying links).

``LINKS`` holds ``always`` (static graph), ``bernoulli`` (independent per edge and step with
probability p_ij, p_ij optionally drawn once from U[lo, hi] as in PDBO), ``gilbert_elliott``
(bursty continuous-time on/off Markov chain per directed edge) and ``trace`` (intervals replayed
from a CSV file, netsim.links.trace). A model is a :class:`LinkModel` subclass registered
with ``@LINKS.register(name, fields)``, constructed as ``cls(adjacency, rng, **params)``; an
optional static ``check(params, path, n)`` validates what needs the number of clients.

The engine passes the base graph as an edge list (:class:`~netsim.links.edges.Edges`) and reads
``up_edges(t)`` and ``availability_edges()``, arrays over its E edges (issue 18: O(E), not N^2).
The built-in models work on the edges; a model may instead implement the dense pair ``up(t)`` and
``availability()`` over a sender-major ``adjacency[src, dst]`` (as models written in scripts do):
each pair is defined from the other. Random draws reproduce those of the former dense models
(one number per ordered pair and step) exactly, without drawing them all (netsim.links.draws).
"""
from __future__ import annotations

from functools import cached_property
from typing import Any

import numpy as np

from netsim.links.draws import UniformAt
from netsim.links.edges import Edges
from netsim.schema import Field
from netsim.schema.registry import Registry

LINKS = Registry("link model")


class LinkModel:
    """Base: which edges are up at time t and P(up), over the edges or as dense ``[src, dst]``
    matrices; a subclass implements ``up_edges`` or ``up``, and ``availability_edges`` or
    ``availability``."""

    #: the pairs of methods each defined through the other: a subclass overrides one of each
    PAIRS = (("up", "up_edges"), ("availability", "availability_edges"))

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        for pair in cls.PAIRS:
            if all(getattr(cls, name) is getattr(LinkModel, name) for name in pair):
                raise TypeError(f"link model {cls.__name__} defines neither {pair[0]} nor "
                                f"{pair[1]}: it needs one of them")

    def __init__(self, adjacency: np.ndarray | Edges):
        self.edges = Edges.coerce(adjacency)
        self.n = self.edges.n

    @cached_property
    def adjacency(self) -> np.ndarray:
        """The base graph as a dense ``bool[src, dst]`` (built on first use)."""
        return self.edges.matrix(True, False, sender_major=True)

    def up_edges(self, t: float) -> np.ndarray:
        """bool[E]: which edges are up for one step at time t."""
        return self.edges.gather(self.up(t), sender_major=True)

    def availability_edges(self) -> np.ndarray:
        """float[E]: P(edge up) at a step."""
        return self.edges.gather(self.availability(), sender_major=True)

    def up(self, t: float) -> np.ndarray:
        """bool[src, dst]: :meth:`up_edges` as a dense matrix."""
        return self.edges.matrix(self.up_edges(t), False, sender_major=True)

    def availability(self) -> np.ndarray:
        """float[src, dst]: :meth:`availability_edges` as a dense matrix (0 off the graph)."""
        return self.edges.matrix(self.availability_edges(), 0.0, sender_major=True)


@LINKS.register("always")
class AlwaysLinks(LinkModel):
    """Every edge of the base graph is always up."""

    def __init__(self, adjacency: np.ndarray | Edges, rng: np.random.Generator):
        super().__init__(adjacency)

    def up_edges(self, t: float) -> np.ndarray:
        return np.ones(len(self.edges), bool)

    def availability_edges(self) -> np.ndarray:
        return np.ones(len(self.edges))


@LINKS.register("bernoulli", {
    "p": Field("range", 0.5, "P(edge up) per step; [lo, hi] draws each p_ij once from U[lo, hi]",
               lo=0.0, hi=1.0),
    "symmetric": Field("bool", False, "same p_ij and draw for i->j and j->i (undirected links)")})
class BernoulliLinks(LinkModel):
    """Independent Bernoulli(p_ij) per directed edge and per call (fresh draw every step).

    Each step's draw (and the p_ij of a range) is the one a uniform ``[src, dst]`` matrix
    (``symmetric``: its upper triangle, mirrored) has on the edges.
    """

    def __init__(self, adjacency: np.ndarray | Edges, rng: np.random.Generator,
                 p: float | list[float] = 0.5, symmetric: bool = False):
        super().__init__(adjacency)
        self.rng, self.symmetric = rng, symmetric
        self._draw = UniformAt(self.n * self.n, self.edges.positions(symmetric))
        self.p = self._draw.uniform(rng, p[0], p[1]) if isinstance(p, list) \
            else np.full(len(self.edges), float(p))

    def up_edges(self, t: float) -> np.ndarray:
        return self._draw(self.rng) < self.p

    def availability_edges(self) -> np.ndarray:
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

    def __init__(self, adjacency: np.ndarray | Edges, rng: np.random.Generator,
                 mean_up: float = 10.0, mean_down: float = 1.0):
        super().__init__(adjacency)
        self.rng, self.mean_up, self.mean_down = rng, mean_up, mean_down
        self.order = self.edges.out_order                # chains in sender-major edge order
        self.state = rng.random(len(self.edges)) < mean_up / (mean_up + mean_down)
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

    def up_edges(self, t: float) -> np.ndarray:
        self.advance(t)
        out = np.empty(len(self.edges), bool)
        out[self.order] = self.state
        return out

    def availability_edges(self) -> np.ndarray:
        return np.full(len(self.edges), self.mean_up / (self.mean_up + self.mean_down))


def validate_links(spec: Any, path: str, n: int) -> dict:
    """Resolve the ``network.links`` section (missing -> ``always``) and run the model's
    ``check`` on ``n`` clients where it has one."""
    resolved = LINKS.resolve("always" if spec is None else spec, path)
    check = getattr(LINKS.get(resolved["name"], f"{path}.name").obj, "check", None)
    if check is not None:
        check({k: v for k, v in resolved.items() if k != "name"}, path, n)
    return resolved


def make_links(spec: dict, adjacency: np.ndarray | Edges, rng: np.random.Generator) -> LinkModel:
    """Build the link model of a resolved ``spec`` over the base graph (edges or ``[src, dst]``)."""
    params = {k: v for k, v in spec.items() if k != "name"}
    return LINKS.get(spec["name"], "network.links.name").obj(adjacency, rng, **params)
