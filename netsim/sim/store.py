"""One home for a run's messages: what every receiver holds from every sender.

The engine writes here what each exchange delivers (:meth:`MessageStore.receive`): for every edge
j -> i of the base graph, the newest copy i holds of j's messages — the send it came from, the
receiver's clock when it was sent (its age is the receiver's clock now minus that) and the rows it
carries — and the late messages still on their way (``late: stale``, ``async``) until they
arrive. An exchange's result hands each receiver its copies (``available``, ``staleness``,
``held``: which posted rows); the rows themselves are read here (:meth:`MessageStore.rows`,
:meth:`MessageStore.mix`). Push-sum's mass in flight (:class:`InFlight`) lives here too.
docs/architecture.md, "One message, from send to use".

Clocks are per receiver: the synchronous engine passes its round, the same for all; an engine
with per-client clocks passes each receiver's own step count, and ages come out in the
receiver's steps.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import torch
from torch import Tensor

from netsim.links.edges import Edges
from netsim.runtime.mixing import mix
from netsim.runtime.rows import copy_rows


@dataclass
class _Pending:
    """Late messages kept for later delivery: their edge, arrival time, send, stamp and rows."""

    edge: np.ndarray = field(default_factory=lambda: np.empty(0, np.int64))
    arrival: np.ndarray = field(default_factory=lambda: np.empty(0))
    send: np.ndarray = field(default_factory=lambda: np.empty(0, np.int64))
    stamp: np.ndarray = field(default_factory=lambda: np.empty(0, np.int64))
    rows: np.ndarray = field(default_factory=lambda: np.empty(0, np.int64))

    def add(self, edge: np.ndarray, arrival: np.ndarray, send: int, stamp, rows: int) -> None:
        k = edge.size
        self.edge = np.concatenate((self.edge, edge))
        self.arrival = np.concatenate((self.arrival, arrival))
        self.send = np.concatenate((self.send, np.full(k, send)))
        self.stamp = np.concatenate((self.stamp, np.broadcast_to(stamp, (k,))))
        self.rows = np.concatenate((self.rows, np.full(k, rows)))

    def take(self, due: np.ndarray) -> _Pending:
        """Remove the messages ``due`` and return them (in the order they were sent)."""
        out = _Pending(self.edge[due], self.arrival[due], self.send[due], self.stamp[due],
                       self.rows[due])
        keep = ~due
        self.edge, self.arrival, self.send = self.edge[keep], self.arrival[keep], self.send[keep]
        self.stamp, self.rows = self.stamp[keep], self.rows[keep]
        return out


class MessageStore:
    """The newest copy of every sender's messages at every receiver, over the edges of the base
    graph (``edges``, the engine's order), and the rows those copies carry.

    Per edge: ``send`` (the exchange it came from, in order; -1: no copy), ``stamp`` (the
    receiver's clock when it was sent) and ``held`` (the id of its posted rows; -1: none). An
    algorithm posts the rows its senders send (``[N, d]``: sender j's message carries row j);
    rows are kept while a usable copy (at most ``max_age`` old, the receiver policy's
    ``max_staleness``) or a message on its way refers to them, and dropped at the next post
    after that.
    """

    def __init__(self, edges: Edges):
        m = len(edges)
        self.edges = edges
        self.sends = 0                                   # exchanges recorded so far
        self.send = np.full(m, -1, np.int64)
        self.stamp = np.full(m, -1, np.int64)
        self.held = np.full(m, -1, np.int64)
        self.max_age = 0                                 # of a usable copy, at the last exchange
        self.pending = _Pending()
        self.posted: dict[int, Tensor] = {}              # rows id -> [N, d]
        self.next_rows = 0
        self.mass = InFlight()

    # ------------------------------------------------------------------ rows
    def post(self, rows: Tensor, clock) -> int:
        """Keep a copy of the rows the senders send (``[N, d]``) at the receivers' ``clock``;
        returns their id. Rows no usable copy nor message on its way refers to are dropped."""
        usable = (self.send >= 0) & (self._stamp(clock, slice(None)) - self.stamp <= self.max_age)
        live = np.zeros(self.next_rows + 1, bool)             # held -1 marks the last: no rows
        live[self.held[usable]] = live[self.pending.rows] = True
        self.posted = {k: v for k, v in self.posted.items() if live[k]}
        rid, self.next_rows = self.next_rows, self.next_rows + 1
        self.posted[rid] = rows.clone()
        return rid

    def rows(self, rid: int) -> Tensor:
        """The posted rows ``rid``, ``[N, d]`` (read only)."""
        return self.posted[rid]

    def mix(self, weights: np.ndarray, held: np.ndarray) -> Tensor:
        """``sum_j weights[i, j] c_ij`` for every receiver i, ``c_ij`` the row j of the rows
        ``held[i, j]`` its copy of j's message carries (an exchange's ``held``; weights are zero
        where no copy is used): one product per posted rows, oldest first."""
        out = torch.zeros_like(self.posted[max(self.posted)])
        for rid, rows in sorted(self.posted.items()):
            w = np.where(held == rid, weights, 0.0)
            if w.any():
                out += mix(w, rows)
        return out

    # ------------------------------------------------------------------ copies
    def _stamp(self, clock, edge: np.ndarray | slice) -> np.ndarray | int:
        """The receivers' clock on ``edge`` (a scalar clock is every receiver's)."""
        return np.asarray(clock)[self.edges.dst[edge]] if np.ndim(clock) else clock

    def receive(self, delivered: np.ndarray, late: np.ndarray | None, arrival: np.ndarray,
                end: float, clock, rows: int = -1) -> None:
        """Record one exchange (``bool[E]`` masks over the edges): its ``delivered`` messages
        become the newest copies; its ``late`` ones (when the policy keeps them, else None) wait
        until their ``arrival`` time; every message on its way due by ``end`` arrives, and
        replaces the copy it finds if it was sent after it. ``clock``: each receiver's clock when
        the messages were sent (a scalar: the same for all); ``rows``: the id of the rows they
        carry."""
        send, self.sends = self.sends, self.sends + 1
        np.putmask(self.send, delivered, send)             # = send[delivered] = send, faster
        np.putmask(self.held, delivered, rows)
        if np.ndim(clock):
            self.stamp[delivered] = self._stamp(clock, delivered)
        else:
            np.putmask(self.stamp, delivered, clock)
        p = self.pending
        if late is not None:
            edge = np.flatnonzero(late)
            p.add(edge, arrival[edge], send, self._stamp(clock, edge), rows)
        if p.arrival.size:
            due = p.take(p.arrival <= end)               # in send order: an edge's last is newest
            last = due.edge.size - 1 - np.unique(due.edge[::-1], return_index=True)[1]
            last = last[due.send[last] > self.send[due.edge[last]]]
            edge = due.edge[last]
            self.send[edge], self.stamp[edge] = due.send[last], due.stamp[last]
            self.held[edge] = due.rows[last]

    def copies(self, clock, max_age: int) -> tuple[np.ndarray, np.ndarray]:
        """``(available, age)`` over the edges: a copy is usable when it is at most ``max_age``
        of the receiver's clock old; ``age`` is -1 where none is."""
        age = self._stamp(clock, slice(None)) - self.stamp  # a copy is never newer than the clock
        self.max_age = max_age
        available = (self.send >= 0) & (age <= max_age)
        return available, np.where(available, age, -1)

    def forget(self) -> None:
        """Drop every copy, message on its way and posted rows (a new synchronisation epoch);
        push-sum's mass in flight stays."""
        self.send[:], self.stamp[:], self.held[:] = -1, -1, -1
        self.pending = _Pending()
        self.posted = {}


class InFlight:
    """Push-sum's mass in flight (running sums, Hadjicostis, Domínguez-García & Vaidya, IEEE TAC
    2016; netsim.runtime.pushsum): per edge, the shares pushed and not yet received.

    Only edges that hold mass are stored, each in a row of a pool tensor per state (sorted keys
    ``dst * N + src`` and their rows); a step touches only the rows of its arrivals and its
    missed shares, freed rows are reused and the pool doubles when full.
    """

    def __init__(self):
        self.clear()

    def clear(self) -> None:
        """Forget the mass in flight."""
        self.keys = np.empty(0, np.int64)      # the edges holding mass, sorted
        self.slots = np.empty(0, np.int64)     # their rows in the pools
        self.pool: list[Tensor] = []           # per state [capacity, d_k]; free rows are stale
        self.free = np.empty(0, np.int64)      # rows of the pools not in use

    @property
    def held(self) -> list[Tensor]:
        """The mass in flight per state, ``[H, d_k]`` rows in the order of ``keys``."""
        rows = torch.as_tensor(self.slots, device=self.pool[0].device) if self.pool else None
        return [p.index_select(0, rows) for p in self.pool]

    def total(self) -> list[Tensor]:
        """Total mass in flight per state, ``[d_k]`` each (zeros when nothing is held)."""
        return [h.sum(0) for h in self.held]

    def deliver(self, out: list[Tensor], key: np.ndarray, delivered: np.ndarray, n: int) -> None:
        """Add the mass held on every edge whose message got through (``key[delivered]``, keys
        sorted) to its receiver's row of ``out``, in the order of the keys; they hold none after."""
        if not self.keys.size:
            return
        pos = np.minimum(np.searchsorted(key, self.keys), max(key.size - 1, 0))
        arrive = ((key[pos] == self.keys) & delivered[pos] if key.size else
                  np.zeros(self.keys.size, bool))
        if arrive.any():
            rows = torch.as_tensor(self.slots[arrive], device=out[0].device)
            to = torch.as_tensor(self.keys[arrive] // n, device=out[0].device)
            for o, p in zip(out, self.pool):
                o.index_add_(0, to, p.index_select(0, rows))
        self.free = np.concatenate((self.free, self.slots[arrive]))
        self.keys, self.slots = self.keys[~arrive], self.slots[~arrive]

    def hold(self, states: list[Tensor], share: np.ndarray, keys: np.ndarray,
             src: np.ndarray) -> None:
        """Add the shares ``share * states[src]`` pushed on edges ``keys`` (sorted) this step to
        the mass held: rows of the pools stay where they are; an edge that starts holding takes
        a free row, written with its share (no zeroing pass)."""
        old_keys, old_slots = self.keys, self.slots
        if old_keys.size:                   # sorted keys: membership by binary search
            at = np.minimum(np.searchsorted(old_keys, keys), old_keys.size - 1)
            known, slot_of = old_keys[at] == keys, old_slots[at]   # fresh slots set below
        else:
            known, slot_of = np.zeros(keys.size, bool), np.empty(keys.size, np.int64)
        fresh = self._take(keys.size - np.count_nonzero(known), states)
        slot_of[~known] = fresh
        merged = np.concatenate((old_keys, keys.compress(~known)))   # both sorted, disjoint
        order = np.argsort(merged, kind="stable")
        slots = np.concatenate((old_slots, fresh))[order]
        merged = merged[order]
        if keys.size:
            dev = states[0].device
            src_t = torch.as_tensor(src, device=dev)
            # (write, which of the pushed rows or None for all, their slots): new rows are
            # copied in, rows of edges already holding mass added to
            parts = [(write, None if mine.all() else torch.as_tensor(np.flatnonzero(mine),
                                                                     device=dev),
                      torch.as_tensor(slot_of[mine], device=dev))
                     for mine, write in ((~known, "copy"), (known, "add"))
                     if mine.any()]
            for p, s in zip(self.pool, states):
                coef = torch.as_tensor(share, dtype=s.dtype, device=dev)[:, None]
                pushed = s.index_select(0, src_t).mul_(coef)
                for write, which, to in parts:
                    rows = pushed if which is None else pushed.index_select(0, which)
                    if write == "copy":
                        copy_rows(p, to, rows)
                    else:
                        p.index_add_(0, to, rows)
        self.keys, self.slots = merged, slots

    def _take(self, count: int, states: list[Tensor]) -> np.ndarray:
        """``count`` free rows of the pools (grown by doubling when too few are free)."""
        if count > self.free.size:
            size = self.pool[0].shape[0] if self.pool else 0
            grow = max(count - self.free.size, size, 16)
            self.pool = ([torch.cat([p, p.new_zeros(grow, p.shape[1])]) for p in self.pool]
                         if self.pool else [s.new_zeros(grow, s.shape[1]) for s in states])
            self.free = np.concatenate((self.free, np.arange(size, size + grow)))
        taken, self.free = self.free[:count], self.free[count:]
        return taken
