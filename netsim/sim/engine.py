"""The discrete-event network engine: one ``simpy.Environment`` per run, played phase by phase.

Algorithms are vectorised rounds; each computation or communication phase of a round is played
here as SimPy events and returns plain arrays (DESIGN.md, "The three layers"):

- :meth:`Simulator.compute` — every node's local work is a SimPy timeout whose length comes from the
  compute model; a node that crashes before finishing does not finish; an optional deadline ends
  the phase early.
- :meth:`Simulator.exchange` — all messages of a phase are drawn in one vectorised pass (link
  realisation, budget, FIFO uplink queue, propagation, loss, FIFO downlink queue); the events that
  change the course of the round (each receiver's inbox completing, a timeout or deadline) are
  SimPy events.

All ``[N, N]`` arrays handed to and returned by the engine are **receiver-major** like a mixing
matrix: ``delivered[i, j]`` means the message from ``j`` reached ``i``.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import time
from functools import wraps

import networkx as nx
import numpy as np
import simpy

from netsim.network import (make_compute, make_failures, make_latency, make_links, make_loss)
from netsim.rng import Streams
from netsim.sim.policy import Policy
from netsim.sim.queueing import fifo_finish, grouped_cumsum
from netsim.sim.trace import Trace

#: Reference device speed (FLOP/s) turning a model's FLOPs into simulated seconds per local step
#: when ``network.compute.step_time`` is null. Forward + backward ~ 3x the forward FLOPs.
REFERENCE_FLOPS = 1.0e10


def step_time_from_flops(flops_per_sample: float, batch_size: int) -> float:
    """Simulated seconds of one local SGD step on the reference device."""
    return 3.0 * flops_per_sample * batch_size / REFERENCE_FLOPS


def _timed(method):
    """Accumulate the wall-clock seconds spent inside the engine in ``self.wall_time``."""
    @wraps(method)
    def inner(self, *args, **kwargs):
        start = time.perf_counter()
        try:
            return method(self, *args, **kwargs)
        finally:
            self.wall_time += time.perf_counter() - start
    return inner


@dataclass
class ComputeResult:
    """Outcome of a compute phase (arrays over nodes)."""

    start: np.ndarray
    finish_time: np.ndarray      # simulated finish time, inf where the node did not finish
    finished: np.ndarray         # bool: finished before the phase ended
    crashed: np.ndarray          # bool: was active but crashed before finishing
    end: float                   # simulated time at which the phase ended


@dataclass
class ExchangeResult:
    """Outcome of an exchange phase; ``[N, N]`` arrays are receiver-major."""

    requested: np.ndarray
    link_up: np.ndarray          # realised directed links at send time (what a sender knows)
    sent: np.ndarray             # left the sender (link up, not blocked)
    delivered: np.ndarray        # fresh message arrived before the receiver stopped waiting
    available: np.ndarray        # a fresh or stale copy within the staleness cap is usable
    staleness: np.ndarray        # int: rounds since the usable copy was sent, -1 where none
    arrival_time: np.ndarray     # arrival of this phase's message, nan where none
    blocked: np.ndarray          # refused by a budget
    lost: np.ndarray             # dropped in transit by the loss model
    late: np.ndarray             # arrived after the receiver stopped waiting
    bytes_sent: np.ndarray       # per sender, this phase
    end: float


@dataclass
class _RoundBook:
    bytes_sent: float = 0.0
    messages_sent: int = 0
    messages_delivered: int = 0
    messages_dropped: int = 0
    messages_blocked: int = 0
    latency_sum: float = 0.0
    max_staleness: int = 0
    start_time: float = 0.0


@dataclass
class _Pending:
    """Messages kept for later delivery as stale copies (async / late: stale)."""

    dst: np.ndarray = field(default_factory=lambda: np.empty(0, int))
    src: np.ndarray = field(default_factory=lambda: np.empty(0, int))
    arrival: np.ndarray = field(default_factory=lambda: np.empty(0))
    sent_round: np.ndarray = field(default_factory=lambda: np.empty(0, int))


class _ReliableExtra:
    """Failure model of the first ``k`` nodes; nodes from ``k`` on (a server) never fail."""

    def __init__(self, inner, n: int):
        self.inner, self.n, self.k = inner, n, inner.n

    def _pad(self, alive: np.ndarray) -> np.ndarray:
        return np.r_[alive, np.ones(self.n - self.k, bool)]

    def alive(self, t: float) -> np.ndarray:
        return self._pad(self.inner.alive(t))

    def alive_during(self, t0: float, t1: np.ndarray) -> np.ndarray:
        return self._pad(self.inner.alive_during(t0, np.asarray(t1, float)[: self.k]))

    def edges_up(self, t: float) -> np.ndarray:
        up = np.ones((self.n, self.n), bool)
        up[: self.k, : self.k] = self.inner.edges_up(t)
        return up

    def events_between(self, t0: float, t1: float):
        return self.inner.events_between(t0, t1)


class Simulator:
    """Simulated network of ``n`` nodes over the base graph ``topology``.

    ``network`` is the validated ``network`` section of a scenario (links, latency, loss, compute,
    failures, budget, policy); each model draws from its own stream of ``streams``. Failures
    (crashes, churn, scripted outages) apply to the first ``clients`` nodes (default all); further
    nodes, such as the server of a star, are reliable.
    """

    def __init__(self, network: dict, topology: nx.DiGraph, streams: Streams,
                 trace: bool = False, clients: int | None = None):
        self.n = n = topology.number_of_nodes()
        adj = nx.to_numpy_array(topology, nodelist=range(n), dtype=bool)
        np.fill_diagonal(adj, False)
        self.adjacency = adj                                      # [src, dst]
        self.env = simpy.Environment()
        self.links = make_links(network["links"], adj, streams.numpy("links"))
        self.latency = make_latency(network["latency"], n, streams.numpy("latency"))
        self.loss = make_loss(network["loss"], adj, streams.numpy("loss"))
        self.compute_model = make_compute(network["compute"], n, streams.numpy("compute"))
        k = n if clients is None else clients
        self.failures = make_failures(network["failures"], k, streams.numpy("failures"))
        if k < n:
            self.failures = _ReliableExtra(self.failures, n)
        self.budget = network["budget"]
        self.policy = Policy(**network["policy"])
        self.trace = Trace() if trace else None
        self.round = 0
        self.total_bytes = np.zeros(n)
        self._round_bytes = np.zeros(n)
        self._round_peers = np.zeros((n, n), bool)
        self._book = _RoundBook()
        self.history: list[dict] = []
        self.peer_history: list[np.ndarray] = []                 # per round: peers accepted per node
        self.bytes_history: list[np.ndarray] = []                # per round: bytes sent per node
        self._last_round = np.full((n, n), -1, int)               # newest copy received [dst, src]
        self._pending = _Pending()
        self._traced_until = 0.0
        self.wall_time = 0.0                                      # engine's own wall-clock cost

    # ------------------------------------------------------------------ time and state
    def __getstate__(self) -> dict:
        """Checkpoints: between rounds only the clock of the SimPy environment matters (what is
        left in its queue are timeouts nobody waits for), so it is stored as a number."""
        state = dict(self.__dict__)
        state["env"] = float(self.env.now)
        return state

    def __setstate__(self, state: dict) -> None:
        state["env"] = simpy.Environment(initial_time=state["env"])
        self.__dict__.update(state)

    @property
    def now(self) -> float:
        return float(self.env.now)

    def alive(self) -> np.ndarray:
        """Which nodes are up now."""
        return self.failures.alive(self.now)

    def links_now(self) -> np.ndarray:
        """Realised directed links for one step at the current time, receiver-major ``[dst, src]``."""
        up = self.links.up(self.now) & self.failures.edges_up(self.now)
        alive = self.failures.alive(self.now)
        return (up & alive[:, None] & alive[None, :]).T

    def _run_until(self, when: float) -> None:
        if when > self.env.now:
            self.env.run(until=self.env.timeout(when - self.env.now))
        self._trace_failures()

    def _trace_failures(self) -> None:
        if self.trace is None or self.env.now <= self._traced_until:
            return
        for t, kind, a, b in self.failures.events_between(self._traced_until, self.now):
            self.trace.add(kind, t, a, b, 0.0, self.round)
        self._traced_until = self.now

    # ------------------------------------------------------------------ compute phase
    @_timed
    def compute(self, steps, step_time: float, active: np.ndarray | None = None,
                start: np.ndarray | None = None, deadline: float | None = None) -> ComputeResult:
        """Play the local work of every active node (``steps`` local steps of ``step_time`` s).

        Node i starts at ``max(now, start[i])``; it finishes unless it crashes before its
        finish time. The phase ends when every node that can finish has finished, or at the
        absolute simulated time ``deadline``.
        """
        n, now = self.n, self.now
        active = np.ones(n, bool) if active is None else np.asarray(active, bool)
        begin = np.full(n, now) if start is None else np.maximum(now, np.asarray(start, float))
        duration = self.compute_model.durations(steps, step_time, now)
        finish = begin + duration
        survives = self.failures.alive_during(now, finish) & self.failures.alive(now)
        will_finish = active & survives & np.isfinite(finish)
        finish = np.where(will_finish, finish, np.inf)

        done = [self.env.timeout(finish[i] - now) for i in np.flatnonzero(will_finish)]
        end_event = self.env.all_of(done)
        if deadline is not None:
            end_event = end_event | self.env.timeout(max(deadline - now, 0.0))
        self.env.run(until=end_event)
        end = self.now
        finished = finish <= end
        if self.trace is not None:
            idx = np.flatnonzero(active)
            self.trace.add("compute_start", begin[idx], idx, -1, 0.0, self.round)
            fin = np.flatnonzero(finished)
            self.trace.add("compute_end", finish[fin], fin, -1, 0.0, self.round)
            self._trace_failures()
        return ComputeResult(begin, np.where(finished, finish, np.inf), finished,
                             active & ~survives, end)

    # ------------------------------------------------------------------ exchange phase
    @_timed
    def exchange(self, request: np.ndarray, nbytes, ready: np.ndarray | None = None,
                 policy: Policy | None = None, round_start: float | None = None) -> ExchangeResult:
        """Send one message along every requested edge ``request[dst, src]``.

        ``nbytes``: message size (scalar or ``[dst, src]`` array); ``ready[src]``: when each
        sender starts sending (default now; it may lie before now when the messages were sent
        while an earlier phase of the round was still being played, e.g. an upload right after
        a node's own compute finished); ``policy``: receiver policy (default the
        scenario's); ``round_start``: origin of a deadline (default now).
        """
        n, now = self.n, self.now
        policy = policy or self.policy
        ready = np.full(n, now) if ready is None else np.asarray(ready, float)
        ready = np.where(np.isfinite(ready), ready, now)
        request = np.asarray(request, bool) & ~np.eye(n, dtype=bool)
        size = np.broadcast_to(np.asarray(nbytes, float), (n, n))
        link_up = self.links_now() & request
        blocked = self._apply_budget(link_up, size)
        sent = link_up & ~blocked

        # messages sorted by sender, each sender's queue in rotated destination order
        dst, src = np.nonzero(sent)
        order = np.lexsort(((dst - src) % n, src))
        dst, src = dst[order], src[order]
        b = size[dst, src]
        depart = ready[src] + grouped_cumsum(b, src) / self.latency.uplink[src]
        arrive_link = depart + self.latency.propagation(src, dst)
        lost_msg = self.loss.lost(src, dst)
        # downlink FIFO at each receiver, in order of arrival at its downlink
        keep = ~lost_msg
        rd, rs, ra, rb = dst[keep], src[keep], arrive_link[keep], b[keep]
        o = np.lexsort((ra, rd))
        rd, rs, ra, rb = rd[o], rs[o], ra[o], rb[o]
        arrival = fifo_finish(ra, rb / self.latency.downlink[rd], rd)

        arrival_time = np.full((n, n), np.nan)
        arrival_time[rd, rs] = arrival
        lost = np.zeros((n, n), bool)
        lost[dst[lost_msg], src[lost_msg]] = True

        stop = self._receiver_stop(arrival_time, lost, policy, now, round_start)
        self._run_until(float(np.max(stop, initial=now)) if policy.name != "async" else now)
        end = self.now
        on_time = arrival_time <= stop[:, None]
        delivered = on_time & ~lost & sent
        late = sent & ~lost & ~delivered

        self._collect(delivered, late, arrival_time, policy, end)
        staleness = np.where(self._last_round >= 0, self.round - self._last_round, -1)
        available = (staleness >= 0) & (staleness <= max(policy.max_staleness, 0))
        staleness = np.where(available, staleness, -1)

        bytes_sent = np.zeros(n)
        np.add.at(bytes_sent, src, b)
        self._account(sent, delivered, lost, late, blocked, bytes_sent, arrival_time - ready[None, :],
                      staleness)
        if self.trace is not None:
            self._trace_exchange(request, link_up, blocked, src, dst, b, depart, arrival_time,
                                 lost, delivered, late, stop)
        return ExchangeResult(request, link_up, sent, delivered, available, staleness,
                              np.where(sent & ~lost, arrival_time, np.nan), blocked, lost,
                              late, bytes_sent, end)

    def _receiver_stop(self, arrival_time: np.ndarray, lost: np.ndarray, policy: Policy,
                       now: float, round_start: float | None) -> np.ndarray:
        """When each receiver stops waiting (absolute simulated time)."""
        n = self.n
        if policy.name == "async":
            return np.full(n, now)
        if policy.name == "deadline":
            limit = (now if round_start is None else round_start) + policy.deadline
        else:
            limit = np.inf if policy.timeout is None else now + policy.timeout
        last = np.nanmax(np.where(np.isnan(arrival_time), -np.inf, arrival_time), axis=1)
        last = np.maximum(last, now)
        waits_forever = lost.any(axis=1)
        stop = np.where(waits_forever, limit, np.minimum(limit, last))
        return np.where(np.isfinite(stop), stop, np.maximum(last, now))

    def _collect(self, delivered: np.ndarray, late: np.ndarray, arrival_time: np.ndarray,
                 policy: Policy, end: float) -> None:
        """Update the mailbox of newest copies; keep late messages where the policy says so."""
        self._last_round[delivered] = self.round
        p = self._pending
        if policy.keeps_late:
            d, s = np.nonzero(late)
            p.dst = np.r_[p.dst, d]
            p.src = np.r_[p.src, s]
            p.arrival = np.r_[p.arrival, arrival_time[d, s]]
            p.sent_round = np.r_[p.sent_round, np.full(d.size, self.round)]
        if p.arrival.size:
            due = p.arrival <= end
            newer = p.sent_round[due] > self._last_round[p.dst[due], p.src[due]]
            dd, ss, rr = p.dst[due][newer], p.src[due][newer], p.sent_round[due][newer]
            np.maximum.at(self._last_round, (dd, ss), rr)
            keep = ~due
            p.dst, p.src, p.arrival, p.sent_round = p.dst[keep], p.src[keep], p.arrival[keep], \
                p.sent_round[keep]

    def forget(self) -> None:
        """Drop all stored copies and pending messages (a new synchronisation epoch)."""
        self._last_round[:] = -1
        self._pending = _Pending()

    # ------------------------------------------------------------------ budgets and accounting
    def _apply_budget(self, request: np.ndarray, size: np.ndarray) -> np.ndarray:
        """Messages refused by the budgets among those about to be sent, ``[dst, src]``.

        Accepted messages are charged to the sender's byte budgets and the receiver's peer budget.
        """
        n = self.n
        blocked = np.zeros((n, n), bool)
        cap = self.budget.get("peers_per_round")
        if cap is not None:
            new = request & ~self._round_peers
            room = cap - self._round_peers.sum(axis=1)
            blocked |= new & (np.cumsum(new, axis=1) > room[:, None])
        out = request & ~blocked
        send_bytes = np.where(out, size, 0.0)
        per_round = self.budget.get("bytes_per_round")
        total = self.budget.get("total_bytes")
        if per_round is not None or total is not None:
            room = np.full(n, np.inf)
            if per_round is not None:
                room = np.minimum(room, per_round - self._round_bytes)
            if total is not None:
                room = np.minimum(room, total - self.total_bytes)
            # a sender's messages in destination order; those that overflow its room are refused
            over = np.cumsum(send_bytes.T, axis=1) > room[:, None] + 1e-9
            blocked |= over.T & out
        accepted = request & ~blocked
        self._round_peers |= accepted
        charged = np.where(accepted, size, 0.0).sum(axis=0)
        self._round_bytes += charged
        self.total_bytes += charged
        return blocked & request

    def _account(self, sent, delivered, lost, late, blocked, bytes_sent, latency,
                 staleness) -> None:
        book = self._book
        book.bytes_sent += float(bytes_sent.sum())
        book.messages_sent += int(sent.sum())
        book.messages_delivered += int(delivered.sum())
        book.messages_dropped += int(lost.sum() + late.sum())
        book.messages_blocked += int(blocked.sum())
        book.latency_sum += float(latency[delivered].sum())
        book.max_staleness = max(book.max_staleness, int(staleness.max(initial=0)))

    def end_round(self) -> dict:
        """Close the current round's accounting and start the next round; return its row."""
        book = self._book
        row = {"round": self.round, "sim_time": self.now, "bytes_sent": book.bytes_sent,
               "messages_sent": book.messages_sent,
               "messages_delivered": book.messages_delivered,
               "messages_dropped": book.messages_dropped,
               "messages_blocked": book.messages_blocked,
               "mean_latency": (book.latency_sum / book.messages_delivered
                                if book.messages_delivered else float("nan")),
               "max_staleness": book.max_staleness}
        self.history.append(row)
        self.peer_history.append(self._round_peers.sum(axis=1))
        self.bytes_history.append(self._round_bytes.copy())
        self.round += 1
        self._book = _RoundBook(start_time=self.now)
        self._round_bytes[:] = 0.0
        self._round_peers[:] = False
        return row

    def _trace_exchange(self, request, link_up, blocked, src, dst, b, depart, arrival_time,
                        lost, delivered, late, stop) -> None:
        tr, r, now = self.trace, self.round, self.now
        d, s = np.nonzero(request & ~link_up & ~blocked)
        tr.add("link_down", now, s, d, 0.0, r)
        d, s = np.nonzero(blocked)
        tr.add("blocked", now, s, d, 0.0, r)
        tr.add("send", depart, src, dst, b, r)
        for kind, mask in (("deliver", delivered), ("late", late)):
            d, s = np.nonzero(mask)
            tr.add(kind, arrival_time[d, s], s, d, 0.0, r)
        d, s = np.nonzero(lost)
        tr.add("lost", now, s, d, 0.0, r)
        waited = np.flatnonzero(lost.any(axis=1) | late.any(axis=1))
        tr.add("timeout", stop[waited], -1, waited, 0.0, r)
