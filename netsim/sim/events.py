"""The event heap of an event-driven run and its trace (docs/async.md).

Events are popped in simulated-time order; ties are broken by kind (a message reaching a
downlink, then one delivered, then a computation finishing, then a client waking: what arrives
at the instant a client wakes is in its inbox), then by client, then by the order they were
pushed: a total order that depends on nothing but the run's seed.

The trace keeps, for every event that the algorithm acted on, ``(time, client, kind, peer,
message)``: who used whose model or message at which simulated time. Two runs of one scenario
(reference and batched, :mod:`netsim.sim.grouping`) must leave identical traces.
"""
from __future__ import annotations

import heapq
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np

#: event kinds in their tie-breaking order at equal times
KINDS = ("arrive", "deliver", "finish", "wake")
_PRIORITY = {k: i for i, k in enumerate(KINDS)}


class Event(NamedTuple):
    """One popped event: its time, kind, client and what its pusher attached."""

    time: float
    kind: str
    client: int
    data: Any


class EventQueue:
    """A heap of events in simulated time with a deterministic total order."""

    def __init__(self):
        self._heap: list[tuple] = []
        self._seq = 0

    def push(self, time: float, kind: str, client: int, data: Any = None) -> None:
        heapq.heappush(self._heap, (float(time), _PRIORITY[kind], int(client), self._seq, kind,
                                    data))
        self._seq += 1

    def next_time(self) -> float:
        """Time of the next event (inf when none)."""
        return self._heap[0][0] if self._heap else np.inf

    def pop(self) -> Event:
        time, _, client, _, kind, data = heapq.heappop(self._heap)
        return Event(time, kind, client, data)

    def __len__(self) -> int:
        return len(self._heap)


class EventTrace:
    """``(time, client, kind, peer, message)`` rows of the events a run acted on, kept in the
    order they were added: single rows, or blocks of rows (column arrays, :meth:`add_block`)
    that a vectorised step adds at once. ``enabled=False`` keeps none (a run without
    ``outputs.trace``; asynchronous gradient push's 100 local steps on 1,000 clients record
    about a million rows, 160-230 MB)."""

    COLUMNS = ("time", "client", "kind", "peer", "message")

    def __init__(self, enabled: bool = True):
        self.enabled = enabled
        self._parts: list = []      # a row (tuple), or a _Block
        self._size = 0

    def add(self, time: float, client: int, kind: str, peer: int = -1, message: int = -1) -> None:
        if self.enabled:
            self._parts.append((float(time), int(client), kind, int(peer), int(message)))
            self._size += 1

    def add_block(self, time, client, kind, peer, message) -> None:
        """Rows given by columns: numpy arrays of one length, or scalars repeated along them
        (at least one column an array)."""
        if not self.enabled:
            return
        block = _Block(time, client, kind, peer, message)
        if block.n:
            self._parts.append(block)
            self._size += block.n

    def __len__(self) -> int:
        return self._size

    @property
    def rows(self) -> list[tuple[float, int, str, int, int]]:
        """Every row as a tuple of Python values, in the order added."""
        out: list[tuple[float, int, str, int, int]] = []
        for part in self._parts:
            if isinstance(part, _Block):
                out.extend(part.rows())
            else:
                out.append(part)
        return out

    def ordered(self) -> list[tuple[float, int, str, int, int]]:
        """The rows in time order (stable: rows of one time keep the order they were added; a
        delivery collected from an inbox is added when collected, at its own time)."""
        return sorted(self.rows, key=lambda row: row[0])

    def arrays(self) -> dict[str, np.ndarray]:
        """One array per column, in time order."""
        rows = self.ordered()
        cols = list(zip(*rows)) if rows else [()] * len(self.COLUMNS)
        return {name: np.asarray(col) for name, col in zip(self.COLUMNS, cols)}

    def write_csv(self, path: Path) -> None:
        """The trace as CSV, one event a row in time order (``outputs.trace``)."""
        lines = [",".join(self.COLUMNS)]
        lines += [f"{t!r},{c},{k},{p},{m}" for t, c, k, p, m in self.ordered()]
        Path(path).write_text("\n".join(lines) + "\n")


class _Block:
    """Trace rows added at once: five columns, each an array or a scalar for every row."""

    __slots__ = ("n", "cols")

    def __init__(self, *cols):
        self.cols = cols
        self.n = next(len(c) for c in cols if isinstance(c, np.ndarray))

    def rows(self) -> list[tuple[float, int, str, int, int]]:
        t, c, k, p, m = (col.tolist() if isinstance(col, np.ndarray) else [col] * self.n
                         for col in self.cols)
        return list(zip(map(float, t), map(int, c), map(str, k), map(int, p), map(int, m)))
