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

import time
from dataclasses import replace
from typing import Any, Callable, NamedTuple

import numpy as np

from netsim.links.continuous import make_continuous
from netsim.sim.accounting import METRIC_NAMES
from netsim.sim.engine import Simulator
from netsim.sim.events import Event, EventQueue, EventTrace
from netsim.sim.facade import RoundReport
from netsim.sim.mailbox import Mail, Mailbox
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
        #: the event trace, kept with ``outputs.trace`` only (:attr:`trace`: it, or None)
        self.events = EventTrace(enabled=cfg["outputs"]["trace"])
        self.trace = self.events if self.events.enabled else None
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
        #: inbox mode: messages wait in their receivers' inboxes (:class:`Mailbox`), delivered
        #: when the receiver collects them (:meth:`collect`)
        self.inbox = Mailbox(n) if inbox else None
        #: the last :meth:`send`'s arrival time of each message at its receiver's downlink
        #: (nan where not in flight)
        self.arrivals = np.empty(0)

    def use_inboxes(self) -> None:
        """Keep the messages sent from now on in inboxes (:meth:`collect`), not as events."""
        if self.inbox is None:
            self.inbox = Mailbox(self.n)

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
        """Every client's liveness at ``t``, kept until the next crash or recovery: a delivery
        asks at every instant, the answer changes rarely. (Looking for changes a window ahead
        drew churn a whole window ahead at each change: with ``eval_every`` 1e9, without end.)"""
        f = self.failures
        self._alive = f.alive(t)
        self._alive_from, self._alive_until = t, f.next_change(t)

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
        return end, self.failures.up_throughout(i, t, end)

    # ------------------------------------------------------------------ messages
    def send(self, t: float, src: int, edge: np.ndarray, nbytes: float,
             data: Any = None) -> tuple[np.ndarray, np.ndarray]:
        """Client ``src`` sends ``nbytes`` along each of its out-edges ``edge`` at ``t`` (in
        that order through its uplink); returns each message's outcome (:data:`NOT_SENT`,
        :data:`LOST`, :data:`IN_FLIGHT`) and id (-1 where not sent)."""
        e, f, budget, src = self.edges, self.failures, self.budget, int(src)
        dst = e.dst[edge]
        up = self.links.up(t, edge)
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
        m = len(edge)
        k = sent.nonzero()[0]                     # np.flatnonzero costs 1 us more
        first = self._next_id
        self._next_id += k.size
        every = k.size == m                       # every message leaves: no masks
        if every:
            ids, outcome = np.arange(first, first + m), np.full(m, IN_FLIGHT)
        else:
            ids = np.full(m, -1, np.int64)
            ids[k] = np.arange(first, first + k.size)
            outcome = np.where(sent, IN_FLIGHT, NOT_SENT)
        self.arrivals = np.full(m, np.nan)
        dropped = 0
        if k.size:
            start, rate = max(t, self.uplink_free[src]), self.latency.uplink[src]
            # an uplink that serves at once: every message leaves at the start
            depart = start if rate == np.inf else start + nbytes * np.arange(1, k.size + 1) / rate
            self.uplink_free[src] = depart if rate == np.inf else depart[-1]
            edge_k = edge if every else edge[k]
            arrive = depart + self.latency.propagation(edge_k)
            lost = self.loss.lost(edge_k)
            dropped = int(np.count_nonzero(lost))
            if dropped:
                outcome[k[lost]] = LOST
                go, arrive_go = k[~lost], arrive[~lost]
                go_dst, go_ids, go_edge = dst[go], ids[go], edge[go]
            elif every:                               # the messages on their way
                go, arrive_go, go_dst, go_ids, go_edge = k, arrive, dst, ids, edge
            else:
                go, arrive_go = k, arrive
                go_dst, go_ids, go_edge = dst[go], ids[go], edge_k
            self.arrivals[go] = arrive_go
            t = float(t)
            if self.trace is not None:
                if k.size == 1:
                    self.events.add(t, src, "lost" if lost[0] else "send", dst[k[0]], ids[k[0]])
                else:
                    self.events.add_block(t, src, np.where(lost, "lost", "send"), dst[k],
                                          ids[k])
            if self.inbox is not None:
                self.inbox.put(go_dst, arrive=arrive_go, id=go_ids, edge=go_edge, src=src,
                               sent_at=t, nbytes=nbytes, data=data)
            else:
                push, instant = self.queue.push, self._instant
                for mid, ed, d, a in zip(go_ids.tolist(), go_edge.tolist(), go_dst.tolist(),
                                         arrive_go.tolist()):
                    # an infinite downlink serves at once: no queue to join
                    push(a, "deliver" if instant[d] else "arrive", d,
                         Message(mid, ed, src, d, t, nbytes, data))
        if k.size < len(edge) and self.trace is not None:
            quiet = np.flatnonzero(~sent)
            kind = np.where(over[quiet], "blocked", "link_down") if over is not None else \
                np.full(quiet.size, "link_down")
            if quiet.size == 1:
                self.events.add(t, src, str(kind[0]), dst[quiet[0]])
            else:
                self.events.add_block(float(t), src, kind, dst[quiet], -1)
        spent = nbytes * k.size
        self.window_bytes[src] += spent
        self.total_bytes[src] += spent
        book = self._book
        book["bytes_sent"] += spent
        book["messages_sent"] += int(k.size)
        book["messages_dropped"] += dropped
        book["messages_blocked"] += 0 if over is None else int(np.count_nonzero(over))
        return outcome, ids

    def _arrive(self, msg: Message) -> None:
        """A message reached its receiver's downlink: it queues there (FIFO)."""
        done = max(self.now, self.downlink_free[msg.dst]) + msg.nbytes / \
            self.latency.downlink[msg.dst]
        self.downlink_free[msg.dst] = done
        self.queue.push(done, "deliver", msg.dst, msg)

    # ------------------------------------------------------------------ inboxes
    def collect(self, i: int, t: float, strict: bool = False) -> Mail | None:
        """Inbox mode: client i's messages delivered up to ``t`` (before ``t`` if ``strict``),
        in delivery order (None when none is). The same times and outcomes as the event heap
        gives: its downlink serves arrivals in order (FIFO), a message is delivered when served,
        and ``delivered`` says whether i was up then; each is booked in the window of its
        delivery, so collect by a window's end (:meth:`collect_all`)."""
        box = self.inbox
        if not box.pending[i]:
            return None
        rows = box.waiting(i)
        arrive, rate = box.cols["arrive"][rows], self.latency.downlink[i]
        if rate == np.inf:
            times = arrive
            due = int(arrive.searchsorted(t, side="left" if strict else "right"))
        else:                                # FIFO: each waits for the one before it
            free, done = self.downlink_free[i], []
            for a, nbytes in zip(arrive.tolist(), box.cols["nbytes"][rows].tolist()):
                end = float(max(a, free) + nbytes / rate)
                if end > t or (strict and end == t):
                    break
                free = end
                done.append(end)
            self.downlink_free[i] = free
            times, due = np.asarray(done, np.float64), len(done)
        if not due:
            return None
        got = box.take(i, rows[:due], rows[due:])
        times = times[:due]
        ok = self.failures.alive_at(i, times)
        book, window, sent = self._book, self.window, got["sent_at"]
        delivered = int(np.count_nonzero(ok))
        book["messages_delivered"] += delivered
        book["messages_dropped"] += due - delivered
        if delivered:
            t_ok, sent_ok = (times, sent) if delivered == due else (times[ok], sent[ok])
            self._latency_sum += float((t_ok - sent_ok).sum())
            age = int((t_ok // window - sent_ok // window).max())
            book["max_staleness"] = max(book["max_staleness"], age)
        if self.trace is not None:
            self.events.add_block(times, i, np.where(ok, "deliver", "dropped"), got["src"],
                                  got["id"])
        return Mail(times, got["id"], got["edge"], got["src"], i, sent, got["nbytes"],
                    got["data"], ok)

    def collect_all(self, t: float, strict: bool) -> list[Mail]:
        """:meth:`collect` of every client with mail, by client."""
        mail = (self.collect(i, t, strict) for i, rows in enumerate(self.inbox.pending) if rows)
        return [m for m in mail if m is not None]

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
