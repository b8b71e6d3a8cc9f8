"""Inboxes as columns: the messages of an event-driven run that wait for their receiver to wake
(docs/async.md, "What the engine guarantees").

An algorithm that uses its messages only when it wakes (``mail_on_wake``) needs no event per
message: :class:`Mailbox` keeps every message on its way as a row of a few column arrays (arrival
at the downlink, id, edge, sender, send time, size, an integer payload) and each receiver's rows
in a list; a send stores its messages with a handful of array operations, and
:meth:`netsim.sim.async_net.AsyncNetwork.collect` takes a receiver's delivered ones at once, in
delivery order, as a :class:`Mail` of arrays. Rows of collected messages are reused.
"""
from __future__ import annotations

from typing import NamedTuple

import numpy as np

_COLUMNS = {"arrive": np.float64, "id": np.int64, "edge": np.int64, "src": np.int64,
            "sent_at": np.float64, "nbytes": np.float64, "data": np.int64}


class Mail(NamedTuple):
    """Messages delivered (or dropped) to one receiver, in delivery order: column arrays."""

    time: np.ndarray          # delivery time
    id: np.ndarray
    edge: np.ndarray
    src: np.ndarray
    dst: int
    sent_at: np.ndarray
    nbytes: np.ndarray
    data: np.ndarray          # the integer each message carries
    delivered: np.ndarray     # bool: the receiver was up at the delivery


#: the fields of a :class:`Mail` with a value per message
_ROWS = tuple(f for f in Mail._fields if f != "dst")


def select(mail: Mail, rows: np.ndarray) -> Mail:
    """The messages ``rows`` (a mask or indices) of ``mail`` (``mail`` itself where the mask
    keeps every one)."""
    if rows.dtype == bool and np.count_nonzero(rows) == rows.size:
        return mail
    return mail._replace(**{name: getattr(mail, name)[rows] for name in _ROWS})


def one(t: float, msg, delivered: bool) -> Mail:
    """A single message (:class:`netsim.sim.async_net.Message`) delivered at ``t`` as mail."""
    return Mail(np.array([t]), np.array([msg.id]), np.array([msg.edge]), np.array([msg.src]),
                msg.dst, np.array([msg.sent_at]), np.array([msg.nbytes]), np.array([msg.data]),
                np.array([delivered]))


def join(mails: list[Mail]) -> Mail:
    """The messages of several mails to one receiver, in order."""
    if len(mails) == 1:
        return mails[0]
    return mails[0]._replace(**{name: np.concatenate([getattr(m, name) for m in mails])
                                for name in _ROWS})


class Mailbox:
    """The messages on their way to ``n`` receivers, as rows of column arrays."""

    def __init__(self, n: int, capacity: int = 1024):
        self.cols = {k: np.zeros(capacity, t) for k, t in _COLUMNS.items()}
        self.free = list(range(capacity - 1, -1, -1))
        self.pending: list[list[int]] = [[] for _ in range(n)]

    def _take(self, k: int) -> np.ndarray:
        """``k`` free rows (the columns double until there are)."""
        while len(self.free) < k:
            old = len(self.cols["id"])
            self.cols = {name: np.concatenate([c, np.zeros_like(c)])
                         for name, c in self.cols.items()}
            self.free[:0] = range(2 * old - 1, old - 1, -1)
        rows = self.free[len(self.free) - k:]
        del self.free[len(self.free) - k:]
        return np.asarray(rows, np.int64)

    def put(self, dst: np.ndarray, **values) -> None:
        """Messages to receivers ``dst`` (one each), with a value per column (arrays, or
        scalars for all)."""
        rows = self._take(len(dst))
        for name, col in self.cols.items():
            col[rows] = values[name]
        pending = self.pending
        for d, r in zip(dst.tolist(), rows.tolist()):
            pending[d].append(r)

    def waiting(self, i: int) -> np.ndarray:
        """Receiver i's rows, in order of arrival (then of id: the downlink's FIFO order)."""
        rows = np.asarray(self.pending[i], np.int64)
        if rows.size == 1:
            return rows
        return rows[np.lexsort((self.cols["id"][rows], self.cols["arrive"][rows]))]

    def take(self, i: int, rows: np.ndarray, rest: np.ndarray) -> dict[str, np.ndarray]:
        """Receiver i's ``rows`` leave its inbox (``rest`` stay): their columns; the rows are
        free again."""
        self.pending[i] = rest.tolist()
        out = {name: col[rows] for name, col in self.cols.items()}
        self.free.extend(rows.tolist())
        return out
