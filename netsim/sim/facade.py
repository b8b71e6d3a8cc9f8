"""The engine as an algorithm sees it: clients 0..N-1, never the server's slot.

An algorithm talks to the simulated network only through :class:`Network` (docs/architecture.md,
"The layers"), and imports the results it gets from this module: it plays compute phases and
exchanges, reads the copies its peers' messages left (:attr:`Network.store`), asks for the base
graph's edges and the expected link statistics, and may set its peer budget. Every ``[N, N]``
array is receiver-major (``delivered[i, j]``: the message from j reached i) and every array is
over the N clients; the server of a star (``server=True``, node N of the engine) is reached only
through :meth:`broadcast` and :meth:`gather`.

The network also gathers what each round did on it for the round's :class:`RoundReport` (the
client messages its exchanges delivered), which the run loop's callbacks record
(netsim/running/recorder.py): algorithms do no bookkeeping of their own for the results.
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace
from functools import cached_property
from typing import Mapping

import numpy as np
import torch

from netsim.links.edges import Edges
from netsim.sim.engine import (BUDGET_WINDOWS, ComputeResult, ExchangeResult, Simulator,
                               step_time_from_flops)
from netsim.sim.policy import Policy
from netsim.sim.store import MessageStore
from netsim.util.rng import Streams
from topologies import build_topology

__all__ = ["ComputeResult", "Delivery", "ExchangeResult", "Network", "RoundReport",
           "step_time_from_flops"]


def sorted_union(parts: list[np.ndarray]) -> np.ndarray:
    """``np.unique(np.concatenate(parts))`` for integer arrays, fastest when each is sorted: a
    stable sort of their runs (a merge) without the repeats. numpy 2's ``unique`` hashes
    instead: 1 ms for two exchanges' 10,000 keys, against 0.06 ms."""
    keys = np.concatenate(parts)
    keys.sort(kind="stable")
    return keys[np.concatenate(([True], keys[1:] != keys[:-1]))] if keys.size else keys


@dataclass(frozen=True)
class RoundReport:
    """What one round did, for the run loop's callbacks (``on_report``): what the network
    gathered (``round``, ``played``, ``links``; :meth:`Network.report`) and what only the
    algorithm knows, returned by its ``round`` (``effective``, ``extras``; an event-driven
    window's ``staleness`` and ``idle``)."""

    round: int = -1
    #: whether the round played any phase on the network (an idle round has no ``links/`` row)
    played: bool = False
    #: sorted keys ``dst * N + src`` of the client messages its exchanges delivered; None when it
    #: made no exchange between clients
    links: np.ndarray | None = None
    #: ``[N, N]`` the weights its model step used (CoBo's effective W), or None
    effective: np.ndarray | None = None
    #: per-round values stored beside the effective weights (``effective/``), by name
    extras: Mapping[str, np.ndarray] = field(default_factory=dict)
    #: event-driven runs (algorithms/async_base.py): the window's merges of a peer's model or
    #: message, ``client`` [M] (who merged), ``time`` [M] and ``age`` [M] (simulated s since it
    #: was sent) (``staleness/``); None for round-based runs
    staleness: Mapping[str, np.ndarray] | None = None
    #: event-driven runs: each client's idle simulated seconds in the window ``[N]`` (``idle/``)
    idle: np.ndarray | None = None


@dataclass
class Delivery:
    """A server's broadcast: the clients' compute phase that started on arrival, and who
    received it (``[N]``)."""

    compute: ComputeResult
    received: np.ndarray


class Network:
    """Client-sized view of one run's :class:`Simulator` under one receiver policy."""

    def __init__(self, sim: Simulator, clients: int, policy: Policy):
        self.sim, self.n, self.policy = sim, clients, policy
        self._played = False                  # this round: a phase played
        self._links: list[np.ndarray] = []    # this round: the keys each exchange delivered

    @classmethod
    def build(cls, cfg: dict, streams: Streams, policy: Policy, server: bool = False) -> "Network":
        """The network of a resolved scenario: its topology over the clients, or a star of the
        clients around a reliable server."""
        n = cfg["clients"]
        if server:
            topo = build_topology({"name": "star"}, n + 1, streams.numpy("topology"))
        else:
            topo = build_topology(cfg["network"]["topology"], n, streams.numpy("topology"))
        sim = Simulator(cfg["network"], topo, streams, trace=cfg["outputs"]["trace"], clients=n)
        return cls(sim, n, policy)

    # ------------------------------------------------------------------ time and graph
    @property
    def now(self) -> float:
        """Simulated time (s)."""
        return self.sim.now

    def alive(self) -> np.ndarray:
        """Which clients are up now, ``[N]``."""
        return self.sim.alive()[: self.n]

    @cached_property
    def _edges(self) -> tuple[Edges, np.ndarray]:
        """The base graph's edges among clients, and the mask of those among the engine's."""
        if self.sim.n == self.n:
            return self.sim.edges, np.ones(len(self.sim.edges), bool)
        return self.sim.edges.restrict(self.n)

    @property
    def edges(self) -> Edges:
        """The base graph's directed edges among clients (the order of the per-edge arrays of
        :meth:`exchange`'s result and of a ``bool[E]`` request)."""
        return self._edges[0]

    def in_edges(self) -> np.ndarray:
        """The base graph's directed edges among clients, receiver-major ``[dst, src]``."""
        return self._edges[0].matrix(True, False)

    def link_probability(self) -> np.ndarray:
        """P(link j->i up at a step), receiver-major ``[i, j]``, 0 off the base graph."""
        edges, inside = self._edges
        return edges.matrix(self.sim.links.availability_edges()[inside], 0.0)

    def delivery_probability(self) -> np.ndarray:
        """P(a message j->i sent at a step is not lost), link up included, receiver-major."""
        edges, inside = self._edges
        up, loss = self.sim.links.availability_edges(), self.sim.loss.probability()
        return edges.matrix(up[inside] * (1.0 - loss[inside]), 0.0)

    # ------------------------------------------------------------------ budgets
    @property
    def peer_budget(self) -> int | None:
        """Messages a client accepts per step (``network.budget.peers_per_round``)."""
        return self.sim.budget.get("peers_per_round")

    @peer_budget.setter
    def peer_budget(self, cap: int | None) -> None:
        self.sim.budget = {**self.sim.budget, "peers_per_round": cap}

    @property
    def budget_window(self) -> str:
        """What the per-round budgets count over: ``round`` (default) or ``exchange`` (each
        exchange is a window of its own, e.g. DPFL's communication steps); the accounting round
        (network.csv, ``accounting/``) stays the round."""
        return self.sim.budget_window

    @budget_window.setter
    def budget_window(self, window: str) -> None:
        if window not in BUDGET_WINDOWS:
            raise ValueError(f"budget window {window!r}: one of {BUDGET_WINDOWS}")
        self.sim.budget_window = window

    # ------------------------------------------------------------------ messages
    @property
    def store(self) -> MessageStore:
        """What every receiver holds (netsim/sim/store.py): the rows of its copies, push-sum's
        mass in flight."""
        return self.sim.store

    # ------------------------------------------------------------------ phases
    def _pad(self, a: np.ndarray | None, fill) -> np.ndarray | None:
        extra = self.sim.n - self.n
        if a is None or not extra:
            return a
        return np.concatenate((a, np.full(extra, fill, dtype=np.asarray(a).dtype)))

    def _clients(self, comp: ComputeResult) -> ComputeResult:
        n = self.n
        return replace(comp, start=comp.start[:n], finish_time=comp.finish_time[:n],
                       finished=comp.finished[:n], crashed=comp.crashed[:n])

    def compute(self, steps, step_time: float, active: np.ndarray | None = None,
                start: np.ndarray | None = None, deadline: float | None = None) -> ComputeResult:
        """Local work of the ``active`` clients (all when None): ``steps`` steps of
        ``step_time`` s from ``start`` (default now; a start before now is kept); see
        :meth:`Simulator.compute`."""
        self._played = True
        if active is None and self.sim.n > self.n:
            active = np.ones(self.n, bool)
        comp = self.sim.compute(steps, step_time, active=self._pad(active, False),
                                start=self._pad(start, self.now), deadline=deadline)
        return self._clients(comp)

    def exchange(self, request: np.ndarray, nbytes, ready: np.ndarray | None = None,
                 round_start: float | None = None, rows: torch.Tensor | int | None = None,
                 logged: bool = True) -> ExchangeResult:
        """One message along every requested client edge: ``request[dst, src]`` (a matrix) or
        ``bool[E]`` over the client edges; ``ready[src]``: when each sender starts sending
        (default now); ``rows``: what the messages carry, sender j's row j: the senders' rows
        ``[N, d]`` (the store keeps a copy) or the ``payload`` of an earlier exchange (the same
        rows again). The result's ``available``, ``staleness`` and ``held`` are every
        receiver's copies after the phase (:meth:`MessageStore.mix` reads their rows). Its
        deliveries count in the round's ``links`` (:meth:`report`) unless ``logged`` is False."""
        self._played = True
        payload = self.store.post(rows, self.sim.round) if isinstance(rows, torch.Tensor) else \
            (-1 if rows is None else rows)
        if self.sim.n == self.n:
            ex = self.sim.exchange(request, nbytes, ready=ready, policy=self.policy,
                                   round_start=round_start, payload=payload)
        else:
            edges, inside = self._edges
            request = np.asarray(request, bool)
            want = np.zeros(len(self.sim.edges), bool)
            want[inside] = request if request.ndim == 1 else edges.gather(request)
            got = self.sim.exchange(want, nbytes, ready=self._pad(ready, self.now),
                                    policy=self.policy, round_start=round_start, payload=payload)
            ex = ExchangeResult(edges, {k: v[inside] for k, v in got.per_edge.items()},
                                got.bytes_sent[: self.n], got.end,
                                request=request if request.ndim == 2 else None, payload=payload)
        if logged:
            self._links.append(ex.edges.key.compress(ex.per_edge["delivered"]))
        return ex

    def broadcast(self, to: np.ndarray, nbytes, steps: int, step_time: float) -> Delivery:
        """The server sends ``nbytes`` to the clients ``to`` ``[N]``; those that receive it start
        ``steps`` local steps at its arrival (under a deadline policy the deadline counts from
        now)."""
        n, t0, e = self.n, self.now, self.sim.edges
        down = (e.src == n) & np.append(np.asarray(to, bool), False)[e.dst]
        got = self.sim.exchange(down, nbytes, policy=self.policy)
        received = got.sent_by(n, "delivered", False)[:n]
        deadline = t0 + self.policy.deadline if self.policy.name == "deadline" else None
        comp = self.compute(steps, step_time, active=received,
                            start=got.sent_by(n, "arrival_time", np.nan)[:n], deadline=deadline)
        return Delivery(comp, received)

    def gather(self, comp: ComputeResult, nbytes, round_start: float) -> np.ndarray:
        """The clients that finished ``comp`` upload ``nbytes`` to the server when they finish;
        returns the mask ``[N]`` of uploads the server accepted (receiver policy from
        ``round_start``)."""
        self._played = True
        n, e = self.n, self.sim.edges
        up = (e.dst == n) & np.append(np.asarray(comp.finished, bool), False)[e.src]
        sent = self.sim.exchange(up, nbytes, ready=self._pad(comp.finish_time, np.inf),
                                 policy=self.policy, round_start=round_start)
        return sent.to(n, "delivered", False)[:n]

    # ------------------------------------------------------------------ the round's report
    def report(self, t: int, said: RoundReport | None = None) -> RoundReport:
        """Round ``t``'s report: what the algorithm ``said`` (its ``round``'s return, if any)
        with whether a phase played and the links its logged exchanges delivered (their union)
        since the last report, which starts the next round's."""
        links = (None if not self._links else self._links[0] if len(self._links) == 1
                 else sorted_union(self._links))               # one exchange's: sorted, unique
        out = replace(said or RoundReport(), round=t, played=self._played, links=links)
        self._played, self._links = False, []
        return out

    # ------------------------------------------------------------------ accounting
    def end_round(self) -> dict:
        """Close the round: its accounting row (network.csv)."""
        return self.sim.end_round()

    @property
    def history(self) -> list[dict]:
        """The accounting rows of the rounds closed so far (network.csv's rows)."""
        return self.sim.history

    def per_node(self) -> dict[str, np.ndarray] | None:
        """Per round and node, the peers heard from and the bytes sent (``accounting/``), or
        None when the engine kept none."""
        if not self.sim.peer_history:
            return None
        return {"peers": np.stack(self.sim.peer_history),
                "bytes_sent": np.stack(self.sim.bytes_history)}

    @property
    def trace(self):
        """The event trace (``outputs.trace``), or None."""
        return self.sim.trace

    @property
    def engine_wall_time(self) -> float:
        """Wall-clock seconds spent in the engine so far."""
        return self.sim.wall_time

    def forget(self) -> None:
        """Drop all stored copies and pending messages (a new synchronisation epoch)."""
        self.store.forget()
