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
A message is an event of its own (its arrival at the downlink, its delivery), unless the network
keeps inboxes (``inbox=True``, for an algorithm that uses its messages only when it wakes): it
then waits in its receiver's inbox and costs no event; :meth:`AsyncNetwork.collect` gives the
same delivery times and outcomes when the receiver wakes, and at each window's end.

Accounting is per window (``schedule.eval_every`` simulated seconds): :meth:`end_round` closes
one and returns its network.csv row, as the round engine's does per round; ``max_staleness``
counts the windows between a delivered message's send and its delivery.
"""
from __future__ import annotations

import heapq
import time
from dataclasses import replace
from typing import Any, Callable, NamedTuple

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


class Message(NamedTuple):
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
                 server: bool = False, inbox: bool = False):
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
        #: inbox mode: messages wait in their receiver's inbox, a heap of (arrival, id,
        #: message), and are delivered when the receiver collects them (:meth:`collect`)
        self.inbox = [[] for _ in range(n)] if inbox else None

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
        end = t + self.compute_model.duration(i, steps, step_time)
        f = self.failures
        return end, f.always_up or bool(f.alive_during(t, np.full(self.n, end))[i])

    # ------------------------------------------------------------------ messages
    def send(self, t: float, src: int, edge: np.ndarray, nbytes: float,
             data: Any = None) -> tuple[np.ndarray, np.ndarray]:
        """Client ``src`` sends ``nbytes`` along each of its out-edges ``edge`` at ``t`` (in
        that order through its uplink); returns each message's outcome (:data:`NOT_SENT`,
        :data:`LOST`, :data:`IN_FLIGHT`) and id (-1 where not sent)."""
        e, f, budget, src = self.edges, self.failures, self.budget, int(src)
        dst = e.dst[edge]
        up = self.links.up_edges(t)[edge]
        if f.cuts_edges:
            up &= f.edges_up(t, np.full(len(edge), src), dst)
        over = None
        if budget["bytes_per_round"] is not None or budget["total_bytes"] is not None:
            room = np.inf
            if budget["bytes_per_round"] is not None:
                room = budget["bytes_per_round"] - self.window_bytes[src]
            if budget["total_bytes"] is not None:
                room = min(room, budget["total_bytes"] - self.total_bytes[src])
            over = up & (np.cumsum(np.where(up, nbytes, 0.0)) > room + 1e-9)
            sent = up & ~over
        else:
            sent = up
        k = np.flatnonzero(sent)
        ids = np.full(len(edge), -1, np.int64)
        ids[k] = np.arange(self._next_id, self._next_id + k.size)
        self._next_id += k.size
        outcome = np.where(sent, IN_FLIGHT, NOT_SENT)
        if k.size:
            depart = max(t, self.uplink_free[src]) + nbytes * np.arange(1, k.size + 1) / \
                self.latency.uplink[src]
            self.uplink_free[src] = depart[-1]
            arrive = depart + self.latency.propagation(edge[k])
            lost = self.loss.lost(edge[k])
            outcome[k[lost]] = LOST
            rows, push, instant, inbox = self.events.rows, self.queue.push, self._instant, \
                self.inbox
            t = float(t)
            for mid, ed, d, a, gone in zip(ids[k].tolist(), edge[k].tolist(), dst[k].tolist(),
                                           arrive.tolist(), lost.tolist()):
                rows.append((t, src, "lost" if gone else "send", d, mid))
                if gone:
                    continue
                msg = Message(mid, ed, src, d, t, nbytes, data)
                if inbox is not None:
                    heapq.heappush(inbox[d], (a, mid, msg))
                else:                # an infinite downlink serves at once: no queue to join
                    push(a, "deliver" if instant[d] else "arrive", d, msg)
            dropped = int(lost.sum())
        else:
            dropped = 0
        if k.size < len(edge):
            for m in np.flatnonzero(~sent).tolist():
                blocked = over is not None and over[m]
                self.events.add(t, src, "blocked" if blocked else "link_down", int(dst[m]))
        spent = nbytes * k.size
        self.window_bytes[src] += spent
        self.total_bytes[src] += spent
        book = self._book
        book["bytes_sent"] += spent
        book["messages_sent"] += int(k.size)
        book["messages_dropped"] += dropped
        book["messages_blocked"] += 0 if over is None else int(over.sum())
        return outcome, ids

    def _arrive(self, msg: Message) -> None:
        """A message reached its receiver's downlink: it queues there (FIFO)."""
        done = max(self.now, self.downlink_free[msg.dst]) + msg.nbytes / \
            self.latency.downlink[msg.dst]
        self.downlink_free[msg.dst] = done
        self.queue.push(done, "deliver", msg.dst, msg)

    # ------------------------------------------------------------------ inboxes
    def collect(self, i: int, t: float, strict: bool = False) -> list[tuple[float, Message, bool]]:
        """Inbox mode: client i's messages delivered up to ``t`` (before ``t`` if ``strict``),
        in delivery order, as ``(time, message, delivered)`` (``delivered``: i was up then).
        The same times and outcomes as the event heap gives: its downlink serves arrivals in
        order (FIFO), a message is delivered when served; each is booked in the window of its
        delivery, so collect by a window's end (:meth:`collect_all`)."""
        box = self.inbox[i]
        rate, free = self.latency.downlink[i], self.downlink_free[i]
        out = []
        while box:
            a, _, msg = box[0]
            done = a if rate == np.inf else float(max(a, free) + msg.nbytes / rate)
            if done > t or (strict and done == t):
                break
            heapq.heappop(box)
            free = done if rate != np.inf else free
            out.append((done, msg))
        self.downlink_free[i] = free
        if not out:
            return []
        times = np.array([d for d, _ in out])
        ok = self.failures.alive_at(i, times)
        sent = np.array([m.sent_at for _, m in out])
        book, window = self._book, self.window
        book["messages_delivered"] += int(ok.sum())
        book["messages_dropped"] += int((~ok).sum())
        if ok.any():
            self._latency_sum += float((times[ok] - sent[ok]).sum())
            age = int((times[ok] // window - sent[ok] // window).max())
            book["max_staleness"] = max(book["max_staleness"], age)
        rows = self.events.rows
        ok = ok.tolist()
        for (d, m), up in zip(out, ok):
            rows.append((d, i, "deliver" if up else "dropped", m.src, m.id))
        return [(d, m, up) for (d, m), up in zip(out, ok)]

    def collect_all(self, t: float, strict: bool) -> list[tuple[float, Message, bool]]:
        """:meth:`collect` of every client with mail, by client."""
        return [got for i, box in enumerate(self.inbox) if box
                for got in self.collect(i, t, strict)]

    # ------------------------------------------------------------------ the clock
    def run_until(self, end: float, handle: Callable[[Event, bool], None],
                  stop: Callable[[], bool] = lambda: False) -> None:
        """Play the events before ``end`` in order (or until ``stop()``); a client's event goes
        to ``handle(event, delivered)`` (``delivered``: a message reached a live receiver)."""
        start = time.perf_counter()
        queue, add, book, window = self.queue, self.events.add, self._book, self.window
        while queue.next_time() < end and not stop():
            ev = queue.pop()
            self.now = t = ev.time
            kind = ev.kind
            if kind == "arrive":
                self._arrive(ev.data)
                continue
            delivered = False
            if kind == "deliver":
                msg = ev.data
                delivered = self.alive(msg.dst, t)
                add(t, msg.dst, "deliver" if delivered else "dropped", msg.src, msg.id)
                if delivered:
                    book["messages_delivered"] += 1
                    self._latency_sum += t - msg.sent_at
                    age = int(t // window) - int(msg.sent_at // window)
                    if age > book["max_staleness"]:
                        book["max_staleness"] = age
                else:
                    book["messages_dropped"] += 1
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
