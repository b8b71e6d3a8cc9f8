"""The network of an event-driven run: per-client clocks over the scenario's network models
(docs/async.md).

Nothing here waits for a round. A client's computation lasts what the compute model draws at its
start (speeds, stragglers, jitter) and is lost when the client is down at some point of it
(failures: crashes, churn, scripted outages). A message leaves when its sender is done: it goes
when the link is up at that instant (:mod:`netsim.links.continuous`), no scripted cut separates
the pair and the sender's byte budget of the current window allows it; it waits in the sender's
FIFO uplink, travels the edge's propagation delay (base + jitter), may be lost (the loss model),
waits in the receiver's FIFO downlink in order of arrival, and is delivered unless the receiver
is down then. The models are the round engine's (:class:`netsim.sim.engine.Simulator` builds
them from their streams); their draws happen in event order, so one seed drives every time.

Accounting is per window (``schedule.eval_every`` simulated seconds): :meth:`end_round` closes
one and returns its network.csv row, as the round engine's does per round; ``max_staleness``
counts the windows between a delivered message's send and its delivery.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, replace
from typing import Any, Callable

import numpy as np

from netsim.links.continuous import make_continuous
from netsim.sim.accounting import METRIC_NAMES
from netsim.sim.engine import Simulator
from netsim.sim.events import Event, EventQueue, EventTrace
from netsim.sim.facade import RoundReport
from netsim.util.rng import Streams
from topologies import build_topology

#: what :meth:`AsyncNetwork.send` says of each message: not sent (link down, cut or over
#: budget), lost in transit, or on its way
NOT_SENT, LOST, IN_FLIGHT = 0, 1, 2


@dataclass(frozen=True)
class Message:
    """One message in flight: its id, edge, endpoints, send time, size and what it carries."""

    id: int
    edge: int
    src: int
    dst: int
    sent_at: float
    nbytes: float
    data: Any


class AsyncNetwork:
    """Per-client clocks: the event heap, the network models and the per-window accounting
    (``server``: a star of the clients around a reliable node n, as the round engine's)."""

    def __init__(self, cfg: dict, streams: Streams, links: dict, window: float,
                 server: bool = False):
        clients = cfg["clients"]
        spec = {"name": "star"} if server else cfg["network"]["topology"]
        n = clients + server                                # server: a reliable hub, node N
        topo = build_topology(spec, n, streams.numpy("topology"))
        models = Simulator(cfg["network"], topo, streams, clients=clients)
        self.n, self.edges = n, models.edges
        self.compute_model, self.failures = models.compute_model, models.failures
        self.latency, self.loss = models.latency, models.loss
        self.links = make_continuous(links, models.links, streams.numpy("links"))
        self.budget = cfg["network"]["budget"]
        self.window = window                      # accounting window (s): schedule.eval_every
        self._alive, self._alive_from, self._alive_until = np.ones(n, bool), 0.0, -1.0
        self.queue = EventQueue()
        self.events = EventTrace()
        self.trace = self.events if cfg["outputs"]["trace"] else None
        self.now = 0.0
        self.uplink_free = np.zeros(n)
        self.downlink_free = np.zeros(n)
        self._instant = np.isinf(self.latency.downlink)
        self.total_bytes = np.zeros(n)
        self.window_bytes = np.zeros(n)
        self.history: list[dict] = []
        self.engine_wall_time = 0.0
        self._book = dict.fromkeys(METRIC_NAMES, 0)
        self._latency_sum = 0.0
        self._next_id = 0
        self._window = 0

    # ------------------------------------------------------------------ clients
    def out_edges(self, i: int) -> np.ndarray:
        """Edge ids of client i's out-edges, by receiver."""
        e = self.edges
        return e.out_order[e.out_ptr[i]:e.out_ptr[i + 1]]

    def alive(self, i: int, t: float) -> bool:
        """Whether client i is up at ``t``."""
        if self.failures.always_up:
            return True
        if not self._alive_from <= t < self._alive_until:
            self._cache_liveness(t)
        return bool(self._alive[i])

    def _cache_liveness(self, t: float) -> None:
        """Every client's liveness at ``t``, kept until the next crash or recovery (looked for
        one window ahead): a delivery asks at every instant, the answer changes rarely."""
        f = self.failures
        self._alive = f.alive(t)
        changes = [when for when, kind, _, _ in f.events_between(t, t + self.window)
                   if kind in ("crash", "recover") and when > t]
        self._alive_from, self._alive_until = t, min(changes, default=t + self.window)

    def down_for_good(self, i: int, t: float) -> bool:
        """Client i is down at ``t`` and never comes back (a crash, or churn without recovery)."""
        f = self.failures
        if f.crash_time[i] <= t:
            return True
        churn = f.churn
        return (churn is not None and not np.isfinite(churn.recover_mean[i])
                and not self.alive(i, t))

    def step_end(self, i: int, t: float, steps: int, step_time: float) -> tuple[float, bool]:
        """When client i's ``steps`` local steps started at ``t`` end, and whether it stays up
        throughout (else the work is lost)."""
        end = t + float(self.compute_model.durations(steps, step_time, t)[i])
        return end, bool(self.failures.alive_during(t, np.full(self.n, end))[i])

    # ------------------------------------------------------------------ messages
    def send(self, t: float, src: int, edge: np.ndarray, nbytes: float,
             data: Any = None) -> tuple[np.ndarray, np.ndarray]:
        """Client ``src`` sends ``nbytes`` along each of its out-edges ``edge`` at ``t`` (in
        that order through its uplink); returns each message's outcome (:data:`NOT_SENT`,
        :data:`LOST`, :data:`IN_FLIGHT`) and id (-1 where not sent)."""
        e, f = self.edges, self.failures
        dst = e.dst[edge]
        up = self.links.up_edges(t)[edge]
        if f.cuts_edges:
            up &= f.edges_up(t, np.full(len(edge), src), dst)
        room = np.inf
        if self.budget["bytes_per_round"] is not None:
            room = self.budget["bytes_per_round"] - self.window_bytes[src]
        if self.budget["total_bytes"] is not None:
            room = min(room, self.budget["total_bytes"] - self.total_bytes[src])
        over = up & (np.cumsum(np.where(up, nbytes, 0.0)) > room + 1e-9)
        sent = up & ~over
        ids = np.where(sent, self._next_id + np.cumsum(sent) - 1, -1)
        self._next_id += int(sent.sum())
        k = np.flatnonzero(sent)
        depart = max(t, self.uplink_free[src]) + nbytes * np.arange(1, k.size + 1) / \
            self.latency.uplink[src]
        if k.size:
            self.uplink_free[src] = depart[-1]
        arrive = depart + self.latency.propagation(edge[k])
        lost = self.loss.lost(edge[k])
        outcome = np.where(sent, IN_FLIGHT, NOT_SENT)
        outcome[k[lost]] = LOST
        for m, a, gone in zip(k, arrive, lost):
            msg = Message(int(ids[m]), int(edge[m]), src, int(dst[m]), t, nbytes, data)
            self.events.add(t, src, "lost" if gone else "send", msg.dst, msg.id)
            if not gone:             # an infinite downlink serves at once: no queue to join
                self.queue.push(a, "deliver" if self._instant[msg.dst] else "arrive", msg.dst,
                                msg)
        for m in np.flatnonzero(~sent):
            self.events.add(t, src, "blocked" if over[m] else "link_down", int(dst[m]))
        spent = nbytes * k.size
        self.window_bytes[src] += spent
        self.total_bytes[src] += spent
        book = self._book
        book["bytes_sent"] += spent
        book["messages_sent"] += int(k.size)
        book["messages_dropped"] += int(lost.sum())
        book["messages_blocked"] += int(over.sum())
        return outcome, ids

    def _arrive(self, msg: Message) -> None:
        """A message reached its receiver's downlink: it queues there (FIFO)."""
        done = max(self.now, self.downlink_free[msg.dst]) + msg.nbytes / \
            self.latency.downlink[msg.dst]
        self.downlink_free[msg.dst] = done
        self.queue.push(done, "deliver", msg.dst, msg)

    # ------------------------------------------------------------------ the clock
    def run_until(self, end: float, handle: Callable[[Event, bool], None],
                  stop: Callable[[], bool] = lambda: False) -> None:
        """Play the events before ``end`` in order (or until ``stop()``); a client's event goes
        to ``handle(event, delivered)`` (``delivered``: a message reached a live receiver)."""
        start = time.perf_counter()
        while self.queue.next_time() < end and not stop():
            ev = self.queue.pop()
            self.now = ev.time
            if ev.kind == "arrive":
                self._arrive(ev.data)
                continue
            delivered = False
            if ev.kind == "deliver":
                msg = ev.data
                delivered = self.alive(msg.dst, ev.time)
                self.events.add(ev.time, msg.dst, "deliver" if delivered else "dropped",
                                msg.src, msg.id)
                book = self._book
                book["messages_delivered" if delivered else "messages_dropped"] += 1
                if delivered:
                    self._latency_sum += ev.time - msg.sent_at
                    age = int(ev.time // self.window) - int(msg.sent_at // self.window)
                    book["max_staleness"] = max(book["max_staleness"], age)
            handle(ev, delivered)
        if np.isfinite(end) and not stop():
            self.now = max(self.now, end)
        self.engine_wall_time += time.perf_counter() - start

    # ------------------------------------------------------------------ windows
    def report(self, t: int, said: RoundReport | None = None) -> RoundReport:
        """Window ``t``'s report for the run loop's callbacks: what the algorithm ``said`` (no
        links log: no rounds)."""
        return RoundReport(round=t) if said is None else replace(said, round=t)

    def end_round(self) -> dict:
        """Close the current window's accounting (budgets start afresh); return its row."""
        book = self._book
        delivered = book["messages_delivered"]
        book["mean_latency"] = self._latency_sum / delivered if delivered else float("nan")
        row = {"round": self._window, "sim_time": self.now, **book}
        self.history.append(row)
        self._window += 1
        self._book = dict.fromkeys(METRIC_NAMES, 0)
        self._latency_sum = 0.0
        self.window_bytes[:] = 0.0
        return row

    def per_node(self) -> None:
        """No per-round per-node accounting arrays in an event-driven run."""
        return None
