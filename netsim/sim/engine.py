"""The discrete-event network engine: one ``simpy.Environment`` per run, played phase by phase.

Algorithms are vectorised rounds; each computation or communication phase of a round is played
here as SimPy events and returns plain arrays (docs/architecture.md, "The layers"):

- :meth:`Simulator.compute` — every node's local work lasts what the compute model draws; a node
  that crashes before finishing does not finish; an optional deadline ends the phase early.
- :meth:`Simulator.exchange` — all messages of a phase are drawn in one vectorised pass (link
  realisation, budget, FIFO uplink queue, propagation, loss, FIFO downlink queue); the phase ends
  when the last receiver stops waiting (its inbox complete, a timeout or a deadline).

State and work grow with the E edges of the base graph, not with N^2 (issue 18): the engine keeps
its per-pair state (links, latencies, losses, the peers accepted this round; the newest copy
received, in its :class:`~netsim.sim.store.MessageStore`) as arrays over the edges
(:class:`~netsim.links.edges.Edges`, receiver-major), and a phase's messages as arrays over the
messages. Nothing in a run waits on a single node, so each phase is one SimPy event (its end: the
last node finishing or the deadline in a compute phase, the last receiver stopping in an
exchange); the per-node outcomes (who finished before the deadline, which message was late, what
a receiver keeps as a stale copy) are computed from the drawn times, vectorised.

All ``[N, N]`` arrays handed to and returned by the engine are **receiver-major** like a mixing
matrix: ``delivered[i, j]`` means the message from ``j`` reached ``i``; an exchange also takes and
returns them as arrays over the edges.
"""
from __future__ import annotations

from dataclasses import dataclass

import time
from functools import wraps
from typing import TYPE_CHECKING

import numpy as np
import simpy

from netsim.links import (make_compute, make_failures, make_latency, make_links, make_loss)
from netsim.links.edges import Edges
from netsim.sim.accounting import METRIC_NAMES
from netsim.sim.policy import Policy
from netsim.sim.queueing import (fifo_finish, grouped_cumsum, queue_last, queue_order,
                                  segment_cumsum)
from netsim.sim.store import MessageStore
from netsim.sim.trace import Trace
from netsim.util.rng import Streams

if TYPE_CHECKING:
    import networkx as nx

#: Reference device speed (FLOP/s) turning a model's FLOPs into simulated seconds per local step
#: when ``network.compute.step_time`` is null. Forward + backward ~ 3x the forward FLOPs.
REFERENCE_FLOPS = 1.0e10

#: What the per-round budgets (``peers_per_round``, ``bytes_per_round``) count over: the
#: accounting round, or each exchange on its own (an algorithm whose communication steps each
#: get the budget, e.g. DPFL's B_c).
BUDGET_WINDOWS = ("round", "exchange")


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


class _Dense:
    """A field of :class:`ExchangeResult` holding a receiver-major ``[N, N]`` matrix, built from
    the per-edge array of the same name on first access (``dataclasses.replace`` may set it)."""

    def __init__(self, fill):
        self.fill = fill

    def __set_name__(self, owner: type, name: str) -> None:
        self.name = name

    def __get__(self, ex, owner=None):
        if ex is None:
            return None                                        # the field's default
        if ex.__dict__.get(self.name) is None:
            ex.__dict__[self.name] = ex.matrix(self.name, self.fill)
        return ex.__dict__[self.name]

    def __set__(self, ex, value) -> None:
        ex.__dict__[self.name] = value


@dataclass(eq=False)
class ExchangeResult:
    """Outcome of an exchange phase: arrays over the base graph's edges (``per_edge``), and the
    same as receiver-major ``[N, N]`` matrices, built when first read."""

    edges: Edges
    per_edge: dict[str, np.ndarray]   # the arrays below, over ``edges``
    bytes_sent: np.ndarray            # per sender, this phase
    end: float
    request: np.ndarray | None = None  # the request as given, when given as a matrix
    payload: int = -1                  # the store's id of the rows the messages carried, or -1
    requested: np.ndarray = _Dense(False)
    link_up: np.ndarray = _Dense(False)        # realised links at send time (what a sender knows)
    sent: np.ndarray = _Dense(False)           # left the sender (link up, not blocked)
    delivered: np.ndarray = _Dense(False)      # arrived before the receiver stopped waiting
    available: np.ndarray = _Dense(False)      # a copy within the staleness cap is usable
    staleness: np.ndarray = _Dense(-1)         # int: rounds since the usable copy was sent, or -1
    held: np.ndarray = _Dense(-1)              # int: the store's rows of the copy held, or -1
    arrival_time: np.ndarray = _Dense(np.nan)  # arrival of this phase's message, nan where none
    blocked: np.ndarray = _Dense(False)        # refused by a budget
    lost: np.ndarray = _Dense(False)           # dropped in transit by the loss model
    late: np.ndarray = _Dense(False)           # arrived after the receiver stopped waiting

    def matrix(self, name: str, fill) -> np.ndarray:
        """``[N, N]`` receiver-major matrix of the per-edge array ``name`` (``requested``: the
        request as given, without the diagonal, when it was given as a matrix)."""
        if name == "requested" and self.request is not None:
            return np.asarray(self.request, bool) & ~np.eye(self.edges.n, dtype=bool)
        return self.edges.matrix(self.per_edge[name], fill)

    def to(self, receiver: int, name: str, fill) -> np.ndarray:
        """``[N]``: the per-edge array ``name`` on the edges into ``receiver``, by sender."""
        e, lo, hi = self.edges, self.edges.in_ptr[receiver], self.edges.in_ptr[receiver + 1]
        return _scatter(e.n, e.src[lo:hi], self.per_edge[name][lo:hi], fill)

    def sent_by(self, sender: int, name: str, fill) -> np.ndarray:
        """``[N]``: the per-edge array ``name`` on the edges out of ``sender``, by receiver."""
        e = self.edges
        ids = e.out_order[e.out_ptr[sender]:e.out_ptr[sender + 1]]
        return _scatter(e.n, e.dst[ids], self.per_edge[name][ids], fill)


def _scatter(n: int, index: np.ndarray, values: np.ndarray, fill) -> np.ndarray:
    """``[n]`` array with ``values`` at ``index`` and ``fill`` elsewhere."""
    out = np.full(n, fill, dtype=np.result_type(values, np.asarray(fill)))
    out[index] = values
    return out


@dataclass
class _RoundBook:
    """One round's counts, a value per network metric (netsim.sim.accounting)."""

    bytes_sent: float = 0.0
    messages_sent: int = 0
    messages_delivered: int = 0
    messages_dropped: int = 0
    messages_blocked: int = 0
    latency_sum: float = 0.0
    max_staleness: int = 0

    @property
    def mean_latency(self) -> float:
        return (self.latency_sum / self.messages_delivered if self.messages_delivered
                else float("nan"))

    def row(self) -> dict[str, int | float]:
        """The step's value of every declared network metric."""
        return {name: getattr(self, name) for name in METRIC_NAMES}


class _ReliableExtra:
    """Failure model of the first ``k`` nodes; nodes from ``k`` on (a server) never fail."""

    def __init__(self, inner, n: int):
        self.inner, self.n, self.k = inner, n, inner.n
        self.always_up, self.cuts_edges = inner.always_up, inner.cuts_edges
        self.crash_time = np.concatenate((inner.crash_time, np.full(n - self.k, np.inf)))
        self.churn = inner.churn                 # over the first k nodes

    def _pad(self, alive: np.ndarray) -> np.ndarray:
        return np.concatenate((alive, np.ones(self.n - self.k, bool)))

    def alive(self, t: float) -> np.ndarray:
        return self._pad(self.inner.alive(t))

    def alive_during(self, t0: float, t1: np.ndarray) -> np.ndarray:
        return self._pad(self.inner.alive_during(t0, np.asarray(t1, float)[: self.k]))

    def up_throughout(self, i: int, t0: float, t1: float) -> bool:
        return i >= self.k or self.inner.up_throughout(i, t0, t1)

    def alive_at(self, i: int, times: np.ndarray) -> np.ndarray:
        if i >= self.k:
            return np.ones(np.shape(times), bool)
        return self.inner.alive_at(i, times)

    def edges_up(self, t: float, src: np.ndarray, dst: np.ndarray) -> np.ndarray:
        up = np.ones(np.shape(src), bool)
        inner = (src < self.k) & (dst < self.k)
        up[inner] = self.inner.edges_up(t, src[inner], dst[inner])
        return up

    def events_between(self, t0: float, t1: float):
        return self.inner.events_between(t0, t1)

    def next_change(self, t: float) -> float:
        return self.inner.next_change(t)


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
        self.edges = Edges.from_graph(topology)                   # the base graph, E edges
        self.env = simpy.Environment()
        self.links = make_links(network["links"], self.edges, streams.numpy("links"))
        self.latency = make_latency(network["latency"], self.edges, streams.numpy("latency"))
        self.loss = make_loss(network["loss"], self.edges, streams.numpy("loss"))
        self.compute_model = make_compute(network["compute"], n, streams.numpy("compute"))
        k = n if clients is None else clients
        self.failures = make_failures(network["failures"], k, streams.numpy("failures"))
        if k < n:
            self.failures = _ReliableExtra(self.failures, n)
        self.budget = network["budget"]
        self.policy = Policy(**network["policy"])
        self.trace = Trace() if trace else None
        self.round = 0
        self.budget_window = "round"                 # what *_per_round budgets count over
        self.total_bytes = np.zeros(n)
        self._round_bytes = np.zeros(n)
        self._round_peers = np.zeros(len(self.edges), bool)     # accepted this round, per edge
        self._window_bytes = np.zeros(n)                         # the same in the budget window
        self._window_peers = np.zeros(len(self.edges), bool)
        self._book = _RoundBook()
        self.history: list[dict] = []
        self.peer_history: list[np.ndarray] = []                 # per round: peers accepted per node
        self.bytes_history: list[np.ndarray] = []                # per round: bytes sent per node
        self.store = MessageStore(self.edges)                     # the copies every receiver holds
        self._traced_until = 0.0
        self.wall_time = 0.0                                      # engine's own wall-clock cost

    # ------------------------------------------------------------------ time and state
    def __getstate__(self) -> dict:
        """Checkpoints: between rounds only the clock of the SimPy environment matters (its queue
        is empty: :meth:`_advance`), so it is stored as a number."""
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
        """Realised directed links for one step at the current time, ``bool[E]`` over the edges."""
        e, f = self.edges, self.failures
        up = self.links.up_edges(self.now)
        if f.cuts_edges:
            up = up & f.edges_up(self.now, e.src, e.dst)
        if f.always_up:
            return up
        alive = f.alive(self.now)
        return up & alive[e.src] & alive[e.dst]

    def _advance(self, delay: float) -> None:
        """Move the SimPy clock ``delay`` seconds on: one timeout, stepped until it is processed
        (``env.run`` with a stop event costs 3-4x more: a phase is one event)."""
        end = self.env.timeout(delay)
        while not end.processed:
            self.env.step()

    def _run_until(self, when: float) -> None:
        if when > self.env.now:
            self._advance(when - self.env.now)
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

        Node i starts at ``start[i]`` (default now). A start before now is kept: the node
        began while the engine waited for others (a client whose model arrived before the last
        receiver of a broadcast stopped waiting starts at its own arrival, not at the clock).
        It finishes unless it crashes before its finish time. The phase ends when every node
        that can finish has finished, or at the absolute simulated time ``deadline``.
        """
        n, now = self.n, self.now
        active = np.ones(n, bool) if active is None else np.asarray(active, bool)
        begin = np.full(n, now) if start is None else np.asarray(start, float)
        duration = self.compute_model.durations(steps, step_time, now)
        finish = begin + duration
        survives = self.failures.alive_during(now, finish) & self.failures.alive(now)
        will_finish = active & survives & np.isfinite(finish)
        finish = np.where(will_finish, finish, np.inf)

        # the phase ends with its last node (one event: nothing waits on the others) or the deadline
        delay = max(float((finish[will_finish] - now).max()), 0.0) if will_finish.any() else 0.0
        if deadline is not None:
            delay = min(delay, max(deadline - now, 0.0))
        self._advance(delay)
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
                 policy: Policy | None = None, round_start: float | None = None,
                 payload: int = -1) -> ExchangeResult:
        """Send one message along every requested edge: ``request[dst, src]`` (a matrix) or
        ``bool[E]`` over the edges; requests off the base graph are never sent.

        ``nbytes``: message size (scalar or ``[dst, src]`` array); ``ready[src]``: when each
        sender starts sending (default now; it may lie before now when the messages were sent
        while an earlier phase of the round was still being played, e.g. an upload right after
        a node's own compute finished); ``policy``: receiver policy (default the
        scenario's); ``round_start``: origin of a deadline (default now); ``payload``: the id of
        the rows the messages carry in :attr:`store` (-1: none). What arrives is written to the
        store; the result holds every receiver's copies after the phase.
        """
        n, now, e = self.n, self.now, self.edges
        policy = policy or self.policy
        if self.budget_window == "exchange":
            self._window_peers[:] = False
            self._window_bytes[:] = 0.0
        if ready is None:
            ready = np.full(n, now)
        else:
            ready = np.asarray(ready, float)
            ready = np.where(np.isfinite(ready), ready, now)
        request = np.asarray(request, bool)
        want = request if request.ndim == 1 else e.gather(request)
        size = (np.full(len(e), float(nbytes)) if np.ndim(nbytes) == 0 else
                e.gather(np.broadcast_to(np.asarray(nbytes, float), (n, n))))
        link_up = self.links_now() & want
        blocked = self._apply_budget(link_up, size)
        sent = link_up & ~blocked

        # messages sorted by sender, each sender's queue in rotated destination order
        msg = e.send_order.compress(sent[e.send_order])   # compress: a mask's fast gather
        dst, src = e.dst[msg], e.src[msg]
        b = size[msg]
        rate = self.latency
        depart = (ready[src] if np.isinf(rate.uplink).all() else     # all serve at once
                  ready[src] + grouped_cumsum(b, src) / rate.uplink[src])
        arrive_link = depart + rate.propagation(msg)
        lost_msg = self.loss.lost(msg)
        # downlink FIFO at each receiver, in order of arrival at its downlink
        keep = ~lost_msg
        rm, rd, ra = msg.compress(keep), dst.compress(keep), arrive_link.compress(keep)
        if np.isinf(rate.downlink).all():            # all serve at once: done at the arrival
            finish, last = ra, np.full(n, -np.inf)
            np.maximum.at(last, rd, ra)
        else:
            o = queue_order(rd, ra)
            rm, rd, ra = rm[o], rd[o], ra[o]
            finish = fifo_finish(ra, b[keep][o] / rate.downlink[rd], rd)
            last = queue_last(finish, rd, n, -np.inf)
        arrival_time = np.full(len(e), np.nan)
        arrival_time[rm] = finish
        lost = np.zeros(len(e), bool)
        lost[msg[lost_msg]] = True

        stop = self._receiver_stop(last, lost, policy, now, round_start)
        self._run_until(float(np.max(stop, initial=now)) if policy.name != "async" else now)
        end = self.now
        delivered = arrival_time <= stop[e.dst]        # NaN (not sent, or lost) compares False
        late = sent & ~lost & ~delivered

        self.store.receive(delivered, late if policy.keeps_late else None, arrival_time, end,
                           self.round, payload)
        available, staleness = self.store.copies(self.round, max(policy.max_staleness, 0))

        bytes_sent = np.bincount(src, weights=b, minlength=n)
        self._account(sent, delivered, lost, late, blocked, bytes_sent, arrival_time - ready[e.src],
                      staleness)
        if self.trace is not None:
            self._trace_exchange(request, want, link_up, blocked, src, dst, b, depart,
                                 arrival_time, lost, delivered, late, stop)
        per_edge = {"requested": want, "link_up": link_up, "sent": sent, "delivered": delivered,
                    "available": available, "staleness": staleness, "arrival_time": arrival_time,
                    "blocked": blocked, "lost": lost, "late": late, "held": self.store.held.copy()}
        return ExchangeResult(e, per_edge, bytes_sent, end,
                              request=request if request.ndim == 2 else None, payload=payload)

    def _receiver_stop(self, last_arrival: np.ndarray, lost: np.ndarray, policy: Policy,
                       now: float, round_start: float | None) -> np.ndarray:
        """When each receiver stops waiting (absolute simulated time), ``[N]``, given the last
        arrival at each (-inf where none) and the lost messages (``bool[E]``)."""
        n, dst = self.n, self.edges.dst
        if policy.name == "async":
            return np.full(n, now)
        if policy.name == "deadline":
            limit = (now if round_start is None else round_start) + policy.deadline
        else:
            limit = np.inf if policy.timeout is None else now + policy.timeout
        last = np.maximum(last_arrival, now)
        waits_forever = np.zeros(n, bool)
        waits_forever[dst[lost]] = True
        stop = np.where(waits_forever, limit, np.minimum(limit, last))
        return np.where(np.isfinite(stop), stop, last)

    # ------------------------------------------------------------------ budgets and accounting
    def _apply_budget(self, request: np.ndarray, size: np.ndarray) -> np.ndarray:
        """Messages refused by the budgets among those about to be sent, ``bool[E]``.

        Accepted messages are charged to the sender's byte budgets and the receiver's peer budget:
        a receiver accepts new peers in sender order, a sender's messages are charged in
        receiver order.
        """
        n, e = self.n, self.edges
        cap = self.budget.get("peers_per_round")
        per_round = self.budget.get("bytes_per_round")
        total = self.budget.get("total_bytes")
        if cap is None and per_round is None and total is None:      # nothing is refused
            self._charge(request, size)
            return np.zeros(len(e), bool)
        blocked = np.zeros(len(e), bool)
        if cap is not None:
            new = request & ~self._window_peers
            room = cap - self.peers_accepted()
            blocked |= new & (segment_cumsum(new, e.in_ptr) > room[e.dst])
        out = request & ~blocked
        if per_round is not None or total is not None:
            room = np.full(n, np.inf)
            if per_round is not None:
                room = np.minimum(room, per_round - self._window_bytes)
            if total is not None:
                room = np.minimum(room, total - self.total_bytes)
            # a sender's messages in receiver order; those that overflow its room are refused
            order = e.out_order
            spent = segment_cumsum(np.where(out, size, 0.0)[order], e.out_ptr)
            blocked[order] |= (spent > room[e.src[order]] + 1e-9) & out[order]
        self._charge(request & ~blocked, size)
        return blocked & request

    def _charge(self, accepted: np.ndarray, size: np.ndarray) -> None:
        """Charge the ``accepted`` messages (``bool[E]``) to the senders' bytes and the
        receivers' peers of this round and of the budget window."""
        self._window_peers |= accepted
        self._round_peers |= accepted
        charged = np.bincount(self.edges.src.compress(accepted), weights=size.compress(accepted),
                              minlength=self.n)
        self._window_bytes += charged
        self._round_bytes += charged
        self.total_bytes += charged

    def peers_accepted(self) -> np.ndarray:
        """``[N]``: peers each receiver accepted so far in the budget window (the round, or the
        exchange with ``budget_window = "exchange"``), which its peer budget caps."""
        return np.bincount(self.edges.dst.compress(self._window_peers), minlength=self.n)

    def _account(self, sent, delivered, lost, late, blocked, bytes_sent, latency,
                 staleness) -> None:
        book = self._book
        count = np.count_nonzero
        book.bytes_sent += float(bytes_sent.sum())
        book.messages_sent += count(sent)
        book.messages_delivered += count(delivered)
        book.messages_dropped += count(lost) + count(late)
        book.messages_blocked += count(blocked)
        book.latency_sum += float(latency.compress(delivered).sum())
        book.max_staleness = max(book.max_staleness, int(staleness.max(initial=0)))

    def end_round(self) -> dict:
        """Close the current round's accounting and start the next round; return its row."""
        row = {"round": self.round, "sim_time": self.now, **self._book.row()}
        self.history.append(row)
        self.peer_history.append(np.bincount(self.edges.dst.compress(self._round_peers),
                                             minlength=self.n))
        self.bytes_history.append(self._round_bytes.copy())
        self.round += 1
        self._book = _RoundBook()
        for spent in (self._round_bytes, self._window_bytes):
            spent[:] = 0.0
        for peers in (self._round_peers, self._window_peers):
            peers[:] = False
        return row

    def _trace_exchange(self, request, want, link_up, blocked, src, dst, b, depart,
                        arrival_time, lost, delivered, late, stop) -> None:
        """Record a phase's events; ``request`` as given (a matrix may ask for pairs off the base
        graph: their links are down), the rest over the edges or the messages."""
        tr, r, now, e = self.trace, self.round, self.now, self.edges
        down = want & ~link_up & ~blocked
        if request.ndim == 2:
            matrix = request & ~np.eye(self.n, dtype=bool)
            matrix[e.dst, e.src] = down
            d, s = np.nonzero(matrix)
        else:
            d, s = e.dst[down], e.src[down]
        tr.add("link_down", now, s, d, 0.0, r)
        tr.add("blocked", now, e.src[blocked], e.dst[blocked], 0.0, r)
        tr.add("send", depart, src, dst, b, r)
        for kind, mask in (("deliver", delivered), ("late", late)):
            tr.add(kind, arrival_time[mask], e.src[mask], e.dst[mask], 0.0, r)
        tr.add("lost", now, e.src[lost], e.dst[lost], 0.0, r)
        waited = np.unique(e.dst[lost | late])
        tr.add("timeout", stop[waited], -1, waited, 0.0, r)
