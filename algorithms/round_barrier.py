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

from collections import defaultdict

import numpy as np

from netsim.sim.async_net import IN_FLIGHT


class RoundBarrier:
    """Per-client round barriers over a directed graph with in-degrees ``in_degree``."""

    def __init__(self, in_degree: np.ndarray):
        self.in_degree = np.asarray(in_degree, np.int64)
        n = len(self.in_degree)
        self.round = np.full(n, -1, np.int64)          # the last round i sent
        self.waiting = np.zeros(n, bool)               # sent its round, not yet released
        self.heard: defaultdict[tuple[int, int], int] = defaultdict(int)
        self.gone: list[list[int]] = [[] for _ in range(n)]   # per receiver: rounds the
        # in-neighbours that are down for good sent last

    def need(self, i: int, r: int) -> int:
        """In-neighbours whose round-r message i waits for (those down for good before round
        r are excused)."""
        return int(self.in_degree[i]) - sum(last < r for last in self.gone[i])

    def _ready(self, i: int) -> bool:
        r = int(self.round[i])
        if self.waiting[i] and self.heard[(i, r)] >= self.need(i, r):
            self.waiting[i] = False
            del self.heard[(i, r)]
            return True
        return False

    def sent(self, i: int, r: int, unresolved_to: np.ndarray) -> list[int]:
        """Client i sent its round r; its messages to ``unresolved_to`` resolve now (not sent
        or lost): the clients released by this, i among them when nothing else holds it."""
        self.round[i], self.waiting[i] = r, True
        out = [int(d) for d in unresolved_to if self.resolve_one(int(d), r)]
        return out + ([i] if self._ready(i) else [])

    def resolve_one(self, i: int, r: int) -> bool:
        """One in-neighbour's round-r message to i resolved; whether i is released."""
        self.heard[(i, r)] += 1
        return int(self.round[i]) == r and self._ready(i)

    def down_for_good(self, j: int, receivers: np.ndarray) -> list[int]:
        """Client j stopped for good after sending round ``round[j]``: its out-neighbours
        ``receivers`` no longer wait for it; those released by this."""
        last = int(self.round[j])
        out = []
        for i in receivers.tolist():
            self.gone[i].append(last)
            if self._ready(i):
                out.append(i)
        return out


class SynchronousRounds:
    """The barrier's part of an event-driven algorithm with synchronous rounds (a mixin of
    :class:`algorithms.async_base.AsyncAlgorithm`): round numbers of the messages, the messages
    held for a later round (``held[i]``: ``(round, time, message)``), and the wake-ups."""

    def init_rounds(self) -> None:
        self.barrier = RoundBarrier(np.diff(self.net.edges.in_ptr))
        self.msg_round: dict[int, int] = {}     # message id in flight -> its sender's round
        self.held: list[list[tuple[int, float, object]]] = [[] for _ in range(self.n)]

    def round_sent(self, i: int, t: float, out: np.ndarray, outcome: np.ndarray,
                   ids: np.ndarray) -> None:
        """Client i sent its round (messages ``ids`` along ``out``): it waits, or starts the
        next round when nothing is left to wait for."""
        r = int(self.steps_done[i]) - 1
        for m in ids[outcome == IN_FLIGHT].tolist():
            self.msg_round[m] = r
        steps = self.sched["steps"]
        if steps is not None and self.steps_done[i] >= steps:
            self.wake_at(i, t)                  # its last round: nothing left to wait for
        silent = self.net.edges.dst[out[outcome != IN_FLIGHT]]
        self._start_next(self.barrier.sent(i, r, silent), t)

    def round_received(self, t: float, msg, delivered: bool) -> None:
        """A round message was delivered (held for its round) or dropped: the receiver may
        start its next round."""
        q = self.msg_round.pop(msg.id)
        if delivered:
            self.held[msg.dst].append((q, t, msg))
        self._start_next([msg.dst] if self.barrier.resolve_one(msg.dst, q) else [], t)

    def gone(self, i: int, t: float) -> None:
        e = self.net.edges
        self._start_next(self.barrier.down_for_good(i, e.dst[self.net.out_edges(i)]), t)

    def _start_next(self, clients: list[int], t: float) -> None:
        """Clients whose round ended start the next one now (unless they did their steps)."""
        steps = self.sched["steps"]
        for i in clients:
            if steps is None or self.steps_done[i] < steps:
                self.wake_at(i, t)
