"""Node and edge failures: scripted outages and partitions, a mid-run crash, random churn.

Section ``network.failures``::

    scripted: [{kind: node, nodes: [..], t0, t1},          # nodes down during [t0, t1)
               {kind: edge, edges: [[i, j], ..], t0, t1},  # directed edges cut during [t0, t1)
               {kind: partition, groups: [[..], ..], t0, t1}]  # edges between groups cut
    crash: {share, at}        # a share of nodes (drawn once) crashes for good at time ``at``
    churn: {crash_rate, recover_rate, share}   # exponential up/down periods per churned node

``t1: null`` means forever. In a partition, nodes listed in no group form one more group.
"""
from __future__ import annotations

import typing
import warnings
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

from netsim.errors import ConfigError
from netsim.schema import REQUIRED, check_section
from netsim.schema.params import Params, param, schema

Kind = Literal["node", "edge", "partition"]
KINDS: tuple[str, ...] = typing.get_args(Kind)


@dataclass(frozen=True)
class FailureParams(Params):
    """The ``network.failures`` section."""

    scripted: list = param([], "scripted outages: items with kind node|edge|partition, t0, t1")
    churn: dict | None = param(None, "random churn {crash_rate, recover_rate, share}")
    crash: dict | None = param(None, "permanent crash of a share of nodes {share, at}")


@dataclass(frozen=True)
class ChurnParams(Params):
    """The ``network.failures.churn`` section."""

    crash_rate: float = param(0.0, "crashes per simulated second of up time", lo=0.0)
    recover_rate: float = param(0.0, "recoveries per simulated second; 0 = permanent", lo=0.0)
    share: float = param(1.0, "fraction of nodes subject to churn (drawn once)", lo=0.0, hi=1.0)


@dataclass(frozen=True)
class CrashParams(Params):
    """The ``network.failures.crash`` section."""

    share: float = param(0.5, "fraction of nodes that crash (drawn once)", lo=0.0, hi=1.0)
    at: float = param(0.0, "simulated time of the crash", lo=0.0)


@dataclass(frozen=True, kw_only=True)
class OutageParams(Params):
    """One scripted outage (an item of ``network.failures.scripted``): its kind and times."""

    kind: Kind = param(REQUIRED, "node, edge or partition")
    t0: float = param(0.0, "start of the outage (simulated s)", lo=0.0)
    t1: float | None = param(None, "end of the outage (exclusive); null = forever", lo=0.0)


@dataclass(frozen=True, kw_only=True)
class NodeOutageParams(OutageParams):
    """Nodes down."""

    nodes: list[int] = param(REQUIRED, "nodes down", lo=0)


@dataclass(frozen=True, kw_only=True)
class EdgeOutageParams(OutageParams):
    """Directed edges cut."""

    edges: list = param(REQUIRED, "directed edges [i, j] cut")


@dataclass(frozen=True, kw_only=True)
class PartitionOutageParams(OutageParams):
    """Groups of nodes cut from each other."""

    groups: list = param(REQUIRED, "lists of nodes; cross-group edges cut")


#: the parameters of a scripted outage, by kind
OUTAGES: dict[str, type[OutageParams]] = {"node": NodeOutageParams, "edge": EdgeOutageParams,
                                          "partition": PartitionOutageParams}


def _check_nodes(nodes: Any, path: str, n: int, pairs: bool = False) -> None:
    """Raise ConfigError unless ``nodes`` lists node indices in [0, n) (or pairs of them)."""
    try:
        arr = np.asarray(nodes, dtype=object)
    except ValueError:  # ragged nesting
        arr = np.asarray([None], dtype=object)
    shape_ok = arr.size == 0 or (arr.ndim == 2 and arr.shape[1] == 2 if pairs else arr.ndim == 1)
    if not shape_ok or not all(isinstance(v, int) and not isinstance(v, bool) and 0 <= v < n
                               for v in arr.flat):
        what = "pairs [i, j] of node indices" if pairs else "node indices"
        raise ConfigError(path, nodes, f"a list of {what} in [0, {n - 1}]")


def _check_item(item: Any, path: str, n: int) -> dict:
    """Validate one scripted outage."""
    kind = item.get("kind") if isinstance(item, dict) else None
    if kind not in KINDS:
        raise ConfigError(f"{path}.kind", kind, "one of " + ", ".join(KINDS))
    out = check_section(path, item, schema(OUTAGES[kind]))
    if out["t1"] is not None and out["t1"] < out["t0"]:
        raise ConfigError(f"{path}.t1", out["t1"], f"a time >= t0 = {out['t0']} or null")
    if kind == "node":
        _check_nodes(out["nodes"], f"{path}.nodes", n)
    elif kind == "edge":
        _check_nodes(out["edges"], f"{path}.edges", n, pairs=True)
    else:
        for i, group in enumerate(out["groups"]):
            _check_nodes(group, f"{path}.groups[{i}]", n)
        flat = [v for group in out["groups"] for v in group]
        if len(set(flat)) != len(flat):
            raise ConfigError(f"{path}.groups", out["groups"], "disjoint groups of nodes")
    return out


def validate_failures(spec: Any, path: str, n: int) -> dict:
    """Validate the ``network.failures`` section (missing -> no failures)."""
    out = check_section(path, spec, schema(FailureParams))
    out["scripted"] = [_check_item(item, f"{path}.scripted[{i}]", n)
                       for i, item in enumerate(out["scripted"])]
    if out["churn"] is not None:
        out["churn"] = check_section(f"{path}.churn", out["churn"], schema(ChurnParams))
    if out["crash"] is not None:
        out["crash"] = check_section(f"{path}.crash", out["crash"], schema(CrashParams))
    if all_crash_at_start(out, n):
        warnings.warn(f"{path}.crash: every client crashes at t = 0, so nothing is trained or "
                      "sent: every result is that of the initial models", RuntimeWarning,
                      stacklevel=2)
    return out


def all_crash_at_start(spec: dict, n: int) -> bool:
    """Whether a validated ``network.failures`` crashes all ``n`` clients at t = 0."""
    crash = spec["crash"]
    return crash is not None and crash["at"] == 0 and int(round(crash["share"] * n)) == n


def _interval(item: dict) -> tuple[float, float]:
    """(t0, t1) of a scripted item, t1 = inf when null."""
    return item["t0"], np.inf if item["t1"] is None else item["t1"]


class Churn:
    """Alternating exponential up (rate crash_rate) and down (rate recover_rate) periods per node.

    Nodes start up at t = 0. Outage k of node i is [start[i, k], end[i, k]); outages are generated
    lazily, one vectorised column for all nodes per round, until every node's schedule is known
    past the queried time (``known`` = end of the last outage; inf if it never crashes or recovers).
    """

    def __init__(self, n: int, rng: np.random.Generator, crash_rate: float, recover_rate: float,
                 share: float):
        self.rng = rng
        churned = np.zeros(n, bool)
        churned[rng.choice(n, int(round(share * n)), replace=False)] = True
        self.crash_mean = np.full(n, np.inf)
        if crash_rate > 0:
            self.crash_mean[churned] = 1.0 / crash_rate
        self.recover_mean = np.full(n, np.inf if recover_rate == 0 else 1.0 / recover_rate)
        self.start = np.zeros((n, 0))
        self.end = np.zeros((n, 0))
        self.known = np.zeros(n)

    def extend(self, t: float) -> None:
        """Generate outages until every node's schedule is known beyond the finite time ``t``."""
        starts, ends = [self.start], [self.end]
        while (self.known <= t).any():
            starts.append(self.known + self._exp(self.crash_mean))
            ends.append(starts[-1] + self._exp(self.recover_mean))
            self.known = ends[-1]
        if len(starts) > 1:
            self.start = np.column_stack(starts)
            self.end = np.column_stack(ends)

    def _exp(self, mean: np.ndarray) -> np.ndarray:
        """Exponential draws with ``mean`` (inf means never)."""
        finite = np.isfinite(mean)
        return np.where(finite, self.rng.exponential(np.where(finite, mean, 1.0)), np.inf)

    def down_overlapping(self, t0: float, t1: np.ndarray) -> np.ndarray:
        """bool[n]: an outage meets [t0, t1_i] (t1_i = t0: down at t0; inf: ever after t0)."""
        finite = np.isfinite(t1)
        self.extend(float(np.max(t1[finite], initial=t0)))
        hit = ((self.start <= t1[:, None]) & (self.end > t0)).any(axis=1)
        return np.where(finite, hit, np.isfinite(self.crash_mean))

    def down_overlapping_one(self, i: int, t0: float, t1: float) -> bool:
        """:meth:`down_overlapping` for node i alone (the same draws)."""
        if not np.isfinite(t1):
            return bool(np.isfinite(self.crash_mean[i]))
        self.extend(float(t1))
        return bool(((self.start[i] <= t1) & (self.end[i] > t0)).any())

    def next_change(self, t: float) -> float:
        """The first crash or recovery after ``t`` (inf: none ever)."""
        if not np.isfinite(self.crash_mean).any():
            return np.inf
        self.extend(t)                              # every node's schedule known past t
        after = [times[times > t] for times in (self.start, self.end)]
        return float(min(a.min(initial=np.inf) for a in after))

    def events(self, t0: float, t1: float) -> list[tuple[float, str, int, int]]:
        """Churn crashes and recoveries in [t0, t1) (t1 finite)."""
        if not np.isfinite(t1):
            raise ValueError("churn events need a finite end time")
        self.extend(t1)
        out = []
        for times, kind in ((self.start, "crash"), (self.end, "recover")):
            node, col = np.nonzero((times >= t0) & (times < t1))
            out += [(float(times[i, k]), kind, int(i), -1) for i, k in zip(node, col)]
        return out


class FailureModel:
    """Node liveness and scripted edge cuts over simulated time (see the module docstring)."""

    def __init__(self, spec: dict, n: int, rng: np.random.Generator):
        self.n = n
        items = spec["scripted"]
        self.node_items = [(np.asarray(it["nodes"], int), *_interval(it))
                           for it in items if it["kind"] == "node"]
        self.edge_items = [(np.asarray(it["edges"], int).reshape(-1, 2), *_interval(it))
                           for it in items if it["kind"] == "edge"]
        self.partitions = [(idx, self._labels(it["groups"]), *_interval(it))
                           for idx, it in enumerate(items) if it["kind"] == "partition"]
        self.crash_time = np.full(n, np.inf)
        if spec["crash"] is not None:
            chosen = rng.choice(n, int(round(spec["crash"]["share"] * n)), replace=False)
            self.crash_time[chosen] = spec["crash"]["at"]
        self.churn = Churn(n, rng, **spec["churn"]) if spec["churn"] is not None else None
        #: no crash, scripted node outage or churn: every node is up at all times
        self.always_up = (not np.isfinite(self.crash_time).any() and not self.node_items
                          and self.churn is None)
        #: scripted edge outages or partitions (:meth:`edges_up` can say False)
        self.cuts_edges = bool(self.edge_items or self.partitions)

    def _labels(self, groups: list[list[int]]) -> np.ndarray:
        """Group label per node; unlisted nodes share the label len(groups)."""
        labels = np.full(self.n, len(groups))
        for g, nodes in enumerate(groups):
            labels[np.asarray(nodes, int)] = g
        return labels

    def alive_during(self, t0: float, t1: np.ndarray) -> np.ndarray:
        """bool[n]: node i is up for the whole of [t0, t1_i]."""
        if self.always_up:
            return np.ones(self.n, bool)
        t1 = np.broadcast_to(np.asarray(t1, float), (self.n,))
        alive = ~(np.isfinite(self.crash_time) & (self.crash_time <= t1))
        for nodes, a, b in self.node_items:
            alive[nodes] &= ~((a <= t1[nodes]) & (b > t0))
        if self.churn is not None:
            alive &= ~self.churn.down_overlapping(t0, t1)
        return alive

    def up_throughout(self, i: int, t0: float, t1: float) -> bool:
        """Node i is up for the whole of [t0, t1] (:meth:`alive_during`'s answer for node i,
        without the other nodes' work: an event-driven run asks per computation)."""
        if self.always_up:
            return True
        if np.isfinite(self.crash_time[i]) and self.crash_time[i] <= t1:
            return False
        for nodes, a, b in self.node_items:
            if a <= t1 and b > t0 and i in nodes:
                return False
        return self.churn is None or not self.churn.down_overlapping_one(i, t0, t1)

    def alive(self, t: float) -> np.ndarray:
        """bool[n]: node up at time t."""
        return self.alive_during(t, np.full(self.n, float(t)))

    def alive_at(self, i: int, times: np.ndarray) -> np.ndarray:
        """bool[m]: node i up at each of ``times`` (:meth:`alive`'s answer for node i, at many
        times at once)."""
        times = np.asarray(times, float)
        if self.always_up:
            return np.ones(times.shape, bool)
        alive = ~(self.crash_time[i] <= times)
        for nodes, a, b in self.node_items:
            if i in nodes:
                alive &= ~((a <= times) & (b > times))
        if self.churn is not None:
            c = self.churn
            c.extend(float(times.max(initial=0.0)))
            alive &= ~((c.start[i] <= times[:, None]) & (c.end[i] > times[:, None])).any(axis=1)
        return alive

    def edges_up(self, t: float, src: np.ndarray, dst: np.ndarray) -> np.ndarray:
        """bool[m]: False for the directed edges ``src[k] -> dst[k]`` cut at t by a scripted edge
        outage or partition."""
        up = np.ones(np.shape(src), bool)
        for edges, a, b in self.edge_items:
            if a <= t < b:
                up &= ~np.isin(src * self.n + dst, edges[:, 0] * self.n + edges[:, 1])
        for _, labels, a, b in self.partitions:
            if a <= t < b:
                up &= labels[src] == labels[dst]
        return up

    def next_change(self, t: float) -> float:
        """The first time after ``t`` at which a node crashes or recovers (inf: never): the
        liveness :meth:`alive` gives at ``t`` holds until then."""
        times = [x for _, a, b in self.node_items for x in (a, b)]
        times += self.crash_time[np.isfinite(self.crash_time)].tolist()
        later = [float(x) for x in times if x > t]
        if self.churn is not None:
            later.append(self.churn.next_change(t))
        return min(later, default=np.inf)

    def events_between(self, t0: float, t1: float) -> list[tuple[float, str, int, int]]:
        """Events with time in [t0, t1), sorted: (time, kind, node or src, dst or -1).

        Kinds: crash, recover, edge_down, edge_up, partition, heal (for partitions the third entry
        is the index of the scripted item).
        """
        out: list[tuple[float, str, int, int]] = []

        def add(time: float, kind: str, a: int, b: int) -> None:
            if t0 <= time < t1:
                out.append((float(time), kind, int(a), int(b)))

        for nodes, a, b in self.node_items:
            for i in nodes:
                add(a, "crash", i, -1)
                add(b, "recover", i, -1)
        for edges, a, b in self.edge_items:
            for i, j in edges:
                add(a, "edge_down", i, j)
                add(b, "edge_up", i, j)
        for idx, _, a, b in self.partitions:
            add(a, "partition", idx, -1)
            add(b, "heal", idx, -1)
        for i in np.flatnonzero(np.isfinite(self.crash_time)):
            add(self.crash_time[i], "crash", i, -1)
        if self.churn is not None:
            out += self.churn.events(t0, t1)
        return sorted(out)


def make_failures(spec: dict, n: int, rng: np.random.Generator) -> FailureModel:
    """Build the failure model of a validated ``network.failures`` spec."""
    return FailureModel(spec, n, rng)
