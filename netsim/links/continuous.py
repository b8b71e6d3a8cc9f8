"""Link states in continuous time, for event-driven runs (docs/async.md).

An event-driven run asks for a link's state at the simulated time a message leaves, not once per
round. Two forms, vectorised over the E edges of the base graph, each drawing from its own seeded
stream so that the answer at time t never depends on which times were asked before (the
reference and the batched mode of a run ask at the same times, but a model whose draws depended
on the questions would still be fragile):

- ``resample``: the scenario's round model (``network.links``) redrawn every ``coherence``
  seconds: during epoch k = floor(t / coherence) the state is the model's k-th draw (the epochs
  are drawn in order, every one, asked or not).
- ``markov``: a two-state Markov chain per edge with exponential holding times of mean
  ``mean_up`` (up) and ``mean_down`` (down), started from its stationary law
  pi_up = mean_up / (mean_up + mean_down) (the Gilbert-Elliott channel); the long-run fraction of
  time up is pi_up. Its switch times are drawn a column at a time, one holding time per edge,
  until every edge's chain is known past the time asked.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

from netsim.links.models import LinkModel
from netsim.schema import check_section
from netsim.schema.params import Params, param, schema


@dataclass(frozen=True)
class ContinuousParams(Params):
    """The ``schedule.links`` section of an event-driven schedule."""

    name: Literal["resample", "markov"] = param(
        "resample", "resample: network.links redrawn every coherence s; markov: two-state chain "
        "with exponential holding times")
    coherence: float = param(1.0, "resample: seconds one draw of network.links holds", lo=0.0,
                             lo_open=True)
    mean_up: float = param(10.0, "markov: mean up holding time (s)", lo=0.0, lo_open=True)
    mean_down: float = param(1.0, "markov: mean down holding time (s)", lo=0.0, lo_open=True)


def validate_continuous(spec: Any, path: str) -> dict:
    """Validate ``schedule.links`` (a name, or a mapping; missing: resample every second)."""
    return check_section(path, {"name": spec} if isinstance(spec, str) else spec,
                         schema(ContinuousParams))


class ResampledLinks:
    """A round link model redrawn every ``coherence`` seconds; asked times must not decrease."""

    def __init__(self, base: LinkModel, coherence: float):
        self.base, self.coherence = base, coherence
        self.epoch = -1
        self.state = np.zeros(len(base.edges), bool)

    def up_edges(self, t: float) -> np.ndarray:
        """bool[E]: the state of every edge at time ``t``."""
        k = int(t // self.coherence)
        if k < self.epoch:
            raise ValueError(f"resample: time went backwards ({t} is before epoch {self.epoch})")
        while self.epoch < k:
            self.epoch += 1
            self.state = self.base.up_edges(self.epoch * self.coherence)
        return self.state

    def up(self, t: float, edges: np.ndarray) -> np.ndarray:
        """bool[m]: the state of ``edges`` at time ``t`` (``up_edges(t)[edges]``)."""
        return self.up_edges(t)[edges]


class MarkovLinks:
    """Independent two-state chains over ``n_edges`` edges, exponential holding times."""

    def __init__(self, n_edges: int, rng: np.random.Generator, mean_up: float, mean_down: float):
        self.rng = rng
        self.mean = np.array([mean_down, mean_up])            # by state: 0 down, 1 up
        self.stationary_up = mean_up / (mean_up + mean_down)
        self.first = rng.random(n_edges) < self.stationary_up  # state on [0, switch[:, 0])
        self.switch = np.zeros((n_edges, 0))                   # switch times, increasing per row
        self.known = np.zeros(n_edges)                         # the last switch time drawn
        self.passed = np.zeros(n_edges, np.int64)              # switches up to the last asked t
        self._every = np.arange(n_edges)
        self._horizon = 0.0                                    # every chain known before it

    def extend(self, t: float) -> None:
        """Draw holding times, a column for every edge, until every chain is known past ``t``."""
        if t < self._horizon:
            return
        columns = []
        while (self.known <= t).any():
            k = self.switch.shape[1] + len(columns)
            state = self.first ^ bool(k % 2)                   # holding period k's state
            self.known = self.known + self.rng.exponential(self.mean[state.astype(int)])
            columns.append(self.known)
        if columns:
            self.switch = np.column_stack([self.switch, *columns])
        self._horizon = float(self.known.min(initial=np.inf))

    def up_edges(self, t: float) -> np.ndarray:
        """bool[E]: the state of every edge at time ``t`` (any order of asked times; each edge's
        count of switches up to the last asked time moves to ``t``, so that increasing times
        cost the switches passed, not the whole history)."""
        return self.up(t, self._every)

    def up(self, t: float, edges: np.ndarray) -> np.ndarray:
        """bool[m]: the state of ``edges`` (distinct edge ids) at time ``t``, as
        ``up_edges(t)[edges]``, moving only their switch counts (a send asks for its sender's
        out-edges: work in the out-degree, not in E)."""
        self.extend(t)
        s, c = self.switch, self.passed
        while True:                                  # forward over the switches up to t
            rows = edges[c[edges] < s.shape[1]]
            ahead = rows[s[rows, c[rows]] <= t]
            if not ahead.size:
                break
            c[ahead] += 1
        while True:                                  # back over the switches after t
            rows = edges[c[edges] > 0]
            back = rows[s[rows, c[rows] - 1] > t]
            if not back.size:
                break
            c[back] -= 1
        return self.first[edges] ^ (c[edges] % 2 == 1)


def make_continuous(spec: dict, base: LinkModel,
                    rng: np.random.Generator) -> ResampledLinks | MarkovLinks:
    """The continuous-time links of a validated ``schedule.links`` over ``base``'s edges
    (``resample`` redraws ``base``; ``markov`` draws from ``rng``)."""
    if spec["name"] == "markov":
        return MarkovLinks(len(base.edges), rng, spec["mean_up"], spec["mean_down"])
    return ResampledLinks(base, spec["coherence"])
