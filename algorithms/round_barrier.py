"""Synchronous rounds inside the event-driven engine: each client waits for its round's messages
(docs/async.md, "Synchronous algorithms in the event-driven engine").

A synchronous decentralised algorithm (SGP, D-PSGD) needs no global clock: client i's round r
ends when i has sent its round-r messages and every in-neighbour's round-r message to i is
*resolved*, that is

- delivered or dropped (i down at the delivery), if it was in flight;
- at once, if it was not sent (link down, cut, budget) or lost in transit: the engine knows
  (the round engine's ``wait_all`` receiver policy waits for exactly the messages that arrive);
- for every later round, once that in-neighbour is down for good (its last message resolved).

Then i starts round r + 1. A straggler therefore delays its out-neighbours, theirs in turn, and
so on: on a complete graph every client waits for the slowest one, as in the round engine; on a
sparse graph a client runs ahead of the clients it does not hear from, within the graph's
distance. :class:`RoundBarrier` keeps the counts; an algorithm calls :meth:`RoundBarrier.sent`
when a client has sent its round, :meth:`RoundBarrier.resolve` per message, and wakes the clients
they return.
"""
from __future__ import annotations

import numpy as np

from netsim.sim.async_net import IN_FLIGHT
from netsim.sim.mailbox import Mail, join, one, select


class RoundBarrier:
    """Per-client round barriers over a directed graph with in-degrees ``in_degree``. A
    resolution carries its time; a client is released at the latest of its own send and the
    resolutions it waited for. Per round, the resolutions heard and the latest of their times
    are arrays over the receivers (a send resolves its messages at once)."""

    def __init__(self, in_degree: np.ndarray):
        self.in_degree = np.asarray(in_degree, np.int64)
        n = len(self.in_degree)
        self.round = np.full(n, -1, np.int64)          # the last round i sent
        self.sent_at = np.zeros(n)                     # ... when
        self.waiting = np.zeros(n, bool)               # sent its round, not yet released
        self.active = np.ones(n, bool)                 # not down for good
        self.heard: dict[int, np.ndarray] = {}         # round -> resolutions per receiver
        self.latest: dict[int, np.ndarray] = {}        # round -> their latest time
        self.gone: list[list[int]] = [[] for _ in range(n)]   # per receiver: rounds the
        # in-neighbours that are down for good sent last
        self.excusing = np.zeros(n, bool)              # gone[i] is not empty
        self.any_excusing = False                      # ... for some i
        self._at = {-1: n}                             # round -> active clients there (> 0)
        self._low = -1                                 # the lowest round of an active client

    def _need(self, due: np.ndarray, r: int) -> np.ndarray:
        """In-neighbours whose round-r message each of ``due`` waits for (those down for good
        before round r are excused)."""
        need = self.in_degree[due]                     # a copy (an index array)
        if self.any_excusing:
            for k in np.flatnonzero(self.excusing[due]).tolist():
                need[k] -= self._excused(int(due[k]), r)
        return need

    def _excused(self, i: int, r: int) -> int:
        """In-neighbours of i down for good before round r (their round-r message never
        comes)."""
        return sum(last < r for last in self.gone[i])

    def _of(self, r: int) -> tuple[np.ndarray, np.ndarray]:
        """Round r's arrays (created on first use)."""
        if r not in self.heard:
            n = len(self.in_degree)
            self.heard[r], self.latest[r] = np.zeros(n, np.int64), np.zeros(n)
        return self.heard[r], self.latest[r]

    def _ready_one(self, i: int, now: float) -> list[tuple[int, float]]:
        """:meth:`_ready` of one client, without arrays (a send asks for its sender)."""
        r = int(self.round[i])
        heard, latest = self._of(r)
        need = int(self.in_degree[i]) - (self._excused(i, r) if self.excusing[i] else 0)
        if heard[i] < need:
            return []
        self.waiting[i] = False
        return [(i, float(max(latest[i], self.sent_at[i], now)))]

    def _lowest_active(self) -> int | None:
        """The lowest round of an active client (None when none is active)."""
        at = self._at
        if not at:
            return None
        while self._low not in at:          # rounds only grow: the lowest only rises
            self._low += 1
        return self._low

    def _leave(self, r: int) -> None:
        """An active client leaves round r (sent the next, or down for good)."""
        at = self._at
        at[r] -= 1
        if not at[r]:
            del at[r]

    def _ready(self, due: np.ndarray, now: float) -> list[tuple[int, float]]:
        """``[(i, when it is released)]`` for each of ``due`` (distinct, waiting in one round)
        that nothing holds any longer."""
        if not due.size:
            return []
        r = int(self.round[due[0]])
        heard, latest = self._of(r)
        free = due[heard[due] >= self._need(due, r)]
        self.waiting[free] = False
        when = np.maximum(np.maximum(latest[free], self.sent_at[free]), now)
        return list(zip(free.tolist(), when.tolist()))

    def sent(self, i: int, r: int, now: float) -> list[tuple[int, float]]:
        """Client i sent its round r at ``now``: i with its release time if nothing holds it.
        Rounds that every client still in the run has sent past are forgotten."""
        if self.active[i]:
            self._leave(int(self.round[i]))
            self._at[r] = self._at.get(r, 0) + 1
        self.round[i], self.sent_at[i], self.waiting[i] = r, now, True
        low = self._lowest_active()
        low = r if low is None else min(low, r)
        for old in [q for q in self.heard if q < low]:
            del self.heard[old], self.latest[old]
        return self._ready_one(i, now)

    def resolve(self, receivers: np.ndarray, r: int, when: np.ndarray,
                now: float) -> list[tuple[int, float]]:
        """One round-r message to each of ``receivers`` (distinct) resolves at ``when``
        (known at ``now``): the receivers released by this, with their release times."""
        heard, latest = self._of(r)
        heard[receivers] += 1
        latest[receivers] = np.maximum(latest[receivers], when)
        return self._ready(receivers[(self.round[receivers] == r) & self.waiting[receivers]], now)

    def down_for_good(self, j: int, receivers: np.ndarray, now: float
                      ) -> list[tuple[int, float]]:
        """Client j stopped for good after sending round ``round[j]``: its out-neighbours
        ``receivers`` no longer wait for it; those released by this, with their times."""
        last = int(self.round[j])
        if self.active[j]:
            self._leave(last)
        self.active[j] = False
        out = []
        self.excusing[receivers] = True
        self.any_excusing = True
        for i in receivers.tolist():
            self.gone[i].append(last)
            if self.waiting[i]:
                out += self._ready_one(i, now)
        return out


class SynchronousRounds:
    """The barrier's part of an event-driven algorithm with synchronous rounds (a mixin of
    :class:`algorithms.async_base.AsyncAlgorithm` whose messages carry a row of its
    ``snaps``): round numbers of the messages, the messages held for their round (``held[i]``:
    ``(rounds, Mail)`` chunks), and the wake-ups.

    Where every downlink serves at once, a message is delivered (or dropped) at its arrival,
    known when it is sent: the barrier then resolves every message at its send, with its
    arrival time, and the messages wait in the receivers' inboxes (no event each; the client
    collects them when it wakes at its release). Otherwise each delivery is an event that
    resolves its message."""

    def build_network(self, ctx):
        net = super().build_network(ctx)
        if np.isinf(net.latency.downlink).all():
            net.use_inboxes()
            self.mail_on_wake = True
        return net

    def init_rounds(self) -> None:
        self.barrier = RoundBarrier(np.diff(self.net.edges.in_ptr))
        self.row_round = np.zeros(len(self.snaps.refs), np.int64)   # snapshot row -> the
        # round whose messages carry it (while any is in flight or held)
        self.held: list[list[tuple[np.ndarray, Mail]]] = [[] for _ in range(self.n)]

    def round_sent(self, i: int, t: float, out: np.ndarray, outcome: np.ndarray,
                   row: int) -> None:
        """Client i sent its round along ``out`` (``outcome``: each message's; those in flight
        carry snapshot row ``row``): it waits, or starts the next round when nothing is left to
        wait for."""
        r = int(self.steps_done[i]) - 1
        flying = outcome == IN_FLIGHT
        if row >= 0:
            if row >= len(self.row_round):                  # the snapshot table grew
                grown = len(self.snaps.refs) - len(self.row_round)
                self.row_round = np.concatenate([self.row_round, np.zeros(grown, np.int64)])
            self.row_round[row] = r
        steps = self.sched["steps"]
        if steps is not None and self.steps_done[i] >= steps:
            self.wake_at(i, t)                  # its last round: nothing left to wait for
        dst = self.net.edges.dst[out]
        when = np.full(len(out), float(t))      # not sent, or lost: resolved now
        if self.mail_on_wake:                   # in flight: at its arrival
            when[flying] = self.net.arrivals[flying]
        else:
            dst, when = dst[~flying], when[~flying]
        self._start_next(self.barrier.resolve(dst, r, when, t) + self.barrier.sent(i, r, t))

    def on_message(self, t: float, msg, delivered: bool) -> None:
        """Without inboxes: a round message delivered (held for its round) or dropped (its
        snapshot row released) resolves now; the receiver may start its next round."""
        q = int(self.row_round[msg.data])
        if delivered:
            self.held[msg.dst].append((np.array([q]), one(t, msg, delivered)))
        else:
            self.snaps.release(msg.data)
        self._start_next(self.barrier.resolve(np.array([msg.dst]), q, np.array([t]), t))

    def on_mail(self, mail: Mail) -> None:
        """With inboxes: the round messages collected at a wake (resolved when sent): the
        delivered ones are held for their rounds, the dropped ones' snapshot rows released."""
        q = self.row_round[mail.data]
        ok = mail.delivered
        self.snaps.release_many(mail.data[~ok])
        if np.count_nonzero(ok):
            self.held[mail.dst].append((q[ok], select(mail, ok)))

    def take_held(self, i: int, use) -> Mail | None:
        """The held messages of client i whose rounds ``use(rounds)`` selects (a mask), in the
        order they came (None when none is); those of rounds it has not reached stay held."""
        held = self.held[i]
        if not held:
            return None
        q, mail = held[0] if len(held) == 1 else (np.concatenate([h[0] for h in held]),
                                                  join([h[1] for h in held]))
        pick, later = use(q), q >= self.steps_done[i]
        self.snaps.release_many(mail.data[~pick & ~later])     # none: a past round's are used
        self.held[i] = [(q[later], select(mail, later))] if np.count_nonzero(later) else []
        return select(mail, pick) if np.count_nonzero(pick) else None

    def gone(self, i: int, t: float) -> None:
        e = self.net.edges
        self._start_next(self.barrier.down_for_good(i, e.dst[self.net.out_edges(i)], t))

    def _start_next(self, released: list[tuple[int, float]]) -> None:
        """Clients whose round ended start the next one at their release (unless they did
        their steps)."""
        steps = self.sched["steps"]
        for i, when in released:
            if steps is None or self.steps_done[i] < steps:
                self.wake_at(i, when)
