"""Asynchronous gradient push (Assran & Rabbat, IEEE TAC 2021, "Asynchronous gradient push"),
event-driven (docs/async.md).

Each node i keeps a push-sum numerator ``x_i`` and weight ``w_i`` and, at its own rate:

- wakes up and processes what has arrived (the paper's Algorithm 1: messages are summed into
  ``x_i, w_i`` on wake-up, whatever their delay), then computes a gradient at the de-biased
  ``z_i = x_i / w_i``;
- when it is done, takes the step ``x_i <- x_i - alpha g_i`` and pushes: it keeps
  ``(x_i, w_i) / (1 + d_i)`` and sends the same share to each of its ``d_i`` out-neighbours
  (column-stochastic push-sum, Kempe et al. 2003).

Lost messages do not lose mass (the robust push-sum of Hadjicostis, Vaidya & Dominguez-Garcia
2016, which the paper's analysis allows): i adds every share it sends to a running sum
``phi_i``, a message carries ``phi_i`` as it was when sent, and receiver k keeps, per in-edge,
the running sum it last used, ``rho_ik``, adding ``phi - rho_ik`` of the newest message arrived.
So ``sum_i (x_i, w_i) + sum_edges (phi_src - rho_edge)`` is the initial mass at every instant,
and with frozen models (alpha = 0) every ``z_i`` tends to the initial average of the models
(tests/test_async_push.py).

The push-sum state is float64 (the running sums grow with every push; float32 lost 1e-5 of the
mass in a few seconds). The running sums sent are kept as immutable snapshots (rows of one
tensor), referenced by the messages in flight and the per-edge newest and used ones, and
recycled when none refers to them. A wake sums in its fresh in-edges' increases in SGP's
running-sums form: one sparse product of the snapshots with coefficient +1 for each newest
running sum and -1 for the one last summed in, with no row per message.
"""
from __future__ import annotations

import numpy as np
import torch

from algorithms import register
from algorithms.async_base import AsyncAlgorithm
from algorithms.snapshots import Snapshots
from netsim.runtime.rows import copy_rows
from netsim.sim.async_net import IN_FLIGHT
from netsim.sim.grouping import Keys, One


#: rows of the state one pass of :meth:`AsyncPush.act_push` (and of the de-biasing for the
#: gradients) takes: its eight passes over a group's rows then run in cache (32 float64 rows of
#: 4,875 values: 1.2 MB); a group of 500 pushes at N = 1,000 took 43 us a row in one pass, 25 us
#: in passes of 32
ROWS_PER_PASS = 32


def inbox_mass(new: torch.Tensor, used: torch.Tensor) -> torch.Tensor:
    """The mass in-edges bring, as coefficients of the snapshots: their newest running sums less
    the ones used before (``new``, ``used``: :func:`selection` matrices, a row per receiver)."""
    return new - used


def selection(rows: torch.Tensor, cols: np.ndarray, shape: tuple[int, int]) -> torch.Tensor:
    """Sparse float64 matrix of ``shape`` with a 1 at each ``(rows[m], cols[m])``."""
    cols = torch.as_tensor(cols, dtype=torch.long, device=rows.device)
    return torch.sparse_coo_tensor(torch.stack([rows, cols]),
                                   torch.ones(len(cols), dtype=torch.float64, device=rows.device),
                                   shape, check_invariants=False)        # valid by construction


@register("async_push")
class AsyncPush(AsyncAlgorithm):
    """Push-sum at each node's own rate, messages processed on wake-up, running sums.
    No parameters of its own: alpha is ``train.lr``."""

    mail_on_wake = True

    def __init__(self, ctx):
        super().__init__(ctx)
        d = self.bank.flat.shape[1]
        # float64: the running sums grow with every push, and their differences must stay exact
        self.mass = torch.cat([self.bank.flat.double(),
                               torch.ones(self.n, 1, dtype=torch.float64, device=self.device)], 1)
        self.phi = torch.zeros_like(self.mass)                   # running sums sent
        # a row per running sum sent and still referred to; a client's last pushes, mostly
        self.snaps = Snapshots(1 + 4 * self.n, d + 1, torch.float64, self.device,
                               zero_row=True)
        edges = len(self.net.edges)
        self.newest = np.zeros(edges, np.int64)                  # per in-edge: newest arrived
        self.newest_id = np.full(edges, -1, np.int64)            # ... its message id
        self.newest_sent = np.zeros(edges)                       # ... when it was sent
        self.used = np.zeros(edges, np.int64)                    # ... the one summed in
        self.model_bytes += 4.0                                  # the weight w travels too

    # ------------------------------------------------------------------ events
    def personal_models(self) -> torch.Tensor:
        return self.debiased(self.mass)

    def debiased(self, mass: torch.Tensor) -> torch.Tensor:
        """``z = x / w`` of push-sum rows ``mass``, in the bank's dtype."""
        return (mass[:, :-1] / mass[:, -1:]).to(self.bank.flat.dtype)

    def debiased_rows(self, idx: torch.Tensor) -> torch.Tensor:
        """:meth:`debiased` of the rows ``idx`` of the state, by :data:`ROWS_PER_PASS` rows at
        a time (the same values; the gather and the division run in cache)."""
        out = torch.empty(len(idx), self.mass.shape[1] - 1, dtype=self.bank.flat.dtype,
                          device=self.device)
        for a in range(0, len(idx), ROWS_PER_PASS):
            out[a:a + ROWS_PER_PASS] = self.debiased(self.mass.index_select(
                0, idx[a:a + ROWS_PER_PASS]))
        return out

    def health(self) -> dict:
        return {"model": self.personal_models(), "push-sum weight": self.mass[:, -1:]}

    def start_step(self, i: int, t: float, k: int) -> None:
        e = self.net.edges
        a, b = e.in_ptr[i], e.in_ptr[i + 1]                  # i's in-edges
        fresh = (self.newest[a:b] != self.used[a:b]).nonzero()[0] + a
        new, old = self.newest[fresh], self.used[fresh]
        if fresh.size:
            self.net.events.add_block(float(t), i, "use", e.src[fresh], self.newest_id[fresh])
            self.merged(i, t, self.newest_sent[fresh])
        # keys: ("i", i) is client i's own state (x_i, w_i, g_i, phi_i: each of its actions
        # reads and writes it), ("s", row) a snapshot row
        self.act("wake", (i, k, new, old), reads=[Keys("s", np.concatenate([new, old]))],
                 writes=[("i", i)])
        self.snaps.hold_many(new)
        self.snaps.release_many(old)
        self.used[fresh] = new

    def act_wake(self, payloads: list[tuple[int, int, np.ndarray, np.ndarray]]) -> None:
        """Sum in what arrived (``x_i, w_i += sum_k phi_new - rho_ik``, the running-sums form:
        one sparse product of the snapshots, +1 new and -1 used), then the gradients at
        ``z_i = x_i / w_i``."""
        rows = torch.as_tensor(np.repeat(np.arange(len(payloads)), [len(p[2]) for p in payloads]),
                               dtype=torch.long, device=self.device)
        shape = (len(payloads), len(self.snaps.rows))
        new, used = (selection(rows, np.concatenate([p[j] for p in payloads]), shape)
                     for j in (2, 3))
        idx = torch.as_tensor([p[0] for p in payloads], dtype=torch.long, device=self.device)
        self.snaps.add_combination(self.mass, inbox_mass(new, used), idx)
        self.compute_grads([p[:2] for p in payloads], self.debiased_rows)

    def finish_step(self, i: int, t: float) -> None:
        self.push(i, t)
        self.wake_at(i, t)

    def push(self, i: int, t: float) -> tuple[np.ndarray, np.ndarray, np.ndarray, int]:
        """Client i takes its step and pushes its shares along its out-edges; returns the
        out-edges, each message's outcome and id (:meth:`AsyncNetwork.send`) and the snapshot
        row the messages in flight carry (-1: none is)."""
        out = self.net.out_edges(i)
        sid = self.snaps.take()
        outcome, ids = self.net.send(t, i, out, self.model_bytes, data=sid)
        flying = int(np.count_nonzero(outcome == IN_FLIGHT))
        if flying:
            self.snaps.hold(sid, flying)
        else:
            self.snaps.untaken(sid)
            sid = -1
        writes = [("i", i)] + ([One("s", sid)] if sid >= 0 else [])
        self.act("push", (i, sid, len(out)), reads=[("i", i)], writes=writes)
        return out, outcome, ids, sid

    def act_push(self, payloads: list[tuple[int, int, int]]) -> None:
        """``y_i -= alpha g_i``, then ``y_i /= 1 + d_i`` (the share i keeps and sends),
        ``phi_i += y_i`` and the running sum into the messages' snapshot row; by
        :data:`ROWS_PER_PASS` pushes at a time (row by row arithmetic: the same values)."""
        for a in range(0, len(payloads), ROWS_PER_PASS):
            self._push_rows(payloads[a:a + ROWS_PER_PASS])

    def _push_rows(self, payloads: list[tuple[int, int, int]]) -> None:
        i, sid, degree = (np.asarray(c) for c in zip(*payloads))
        idx = torch.as_tensor(i, device=self.device)
        share = self.mass.index_select(0, idx)                  # y, then its share
        share[:, :-1] -= self.grads.index_select(0, idx).mul_(self.train.lr)
        share /= torch.as_tensor(1.0 + degree, dtype=share.dtype, device=self.device)[:, None]
        self.phi.index_add_(0, idx, share)
        copy_rows(self.mass, idx, share)
        keep = (sid >= 0).nonzero()[0]
        if keep.size:
            copy_rows(self.snaps.rows, sid[keep],
                      self.phi.index_select(0, idx[torch.as_tensor(keep)]))

    def on_mail(self, mail) -> None:
        """What arrived on each in-edge: the newest running sum (largest message id) replaces
        the one held if newer; every other snapshot referred to is released (one message, or
        one per edge, all delivered: without sorting, the same rows held and freed)."""
        ok, m = mail.delivered, len(mail.delivered)
        every = int(np.count_nonzero(ok)) == m
        if every and m == 1:
            self._arrived(int(mail.edge[0]), int(mail.id[0]), int(mail.data[0]),
                          float(mail.sent_at[0]))
            return
        drop = [] if every else [mail.data[~ok]]
        if every or np.count_nonzero(ok):
            edge, mid, sid, sent = ((mail.edge, mail.id, mail.data, mail.sent_at) if every else
                                    (mail.edge[ok], mail.id[ok], mail.data[ok], mail.sent_at[ok]))
            if every and len(set(edge.tolist())) == m:      # one message per edge
                lose = mid <= self.newest_id[edge]
                win = (~lose).nonzero()[0]
            else:
                order = np.lexsort((mid, edge))                 # by edge, then id
                by_edge = edge[order]
                top = order[np.append(by_edge[1:] != by_edge[:-1], True)]  # last per edge
                win = top[mid[top] > self.newest_id[edge[top]]]
                lose = np.ones(edge.size, bool)
                lose[win] = False
            e = edge[win]
            drop += [sid[lose], self.newest[e]]
            self.newest[e], self.newest_id[e] = sid[win], mid[win]
            self.newest_sent[e] = sent[win]
        self.snaps.release_many(np.concatenate(drop))

    def on_message(self, t: float, msg, delivered: bool) -> None:
        if delivered:
            self._arrived(msg.edge, msg.id, msg.data, msg.sent_at)
        else:
            self.snaps.release(msg.data)

    def _arrived(self, edge: int, mid: int, sid: int, sent_at: float) -> None:
        """Message ``mid`` delivered on ``edge`` with running sum ``sid``: the edge's newest if
        newer than what it holds (which is released), else released."""
        if mid > self.newest_id[edge]:
            self.snaps.release(int(self.newest[edge]))
            self.newest[edge], self.newest_id[edge] = sid, mid
            self.newest_sent[edge] = sent_at
        else:
            self.snaps.release(sid)

    def in_flight_mass(self) -> torch.Tensor:
        """``sum_edges (phi_src - rho_edge)``: mass sent but not yet summed in (after the held
        work has run)."""
        e = self.net.edges
        used = self.snaps.rows[torch.as_tensor(self.used)]
        return (self.phi[torch.as_tensor(e.src)] - used).sum(0)
