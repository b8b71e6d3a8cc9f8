"""Exact batching of an event-driven run's tensor work (docs/async.md, "What the engine
guarantees").

The event loop decides who does what when from the network models alone (no simulated time
depends on a model's values), one event at a time; the tensor work each event asks for (an
*action*: a gradient, a pairwise average, a push-sum step) names the state it reads and writes
(keys such as ``("x", i)``). In the reference mode every action runs on its own, in event order.
In the batched mode actions are held and then run in *levels*: an action's level is one more
than the highest level of the earlier actions it conflicts with (it reads what they write, or
writes what they read or write), so two actions on one level touch disjoint state and each
level runs as one tensor call per kind. Conflicting actions keep their event order and the
others commute, so the result is the reference's (conservative lookahead, event by event: an
action is batched with any earlier one that cannot affect it, however far apart in time).
"""
from __future__ import annotations

from collections import defaultdict
from typing import Any, Callable, Hashable, Iterable, NamedTuple

import numpy as np

Runner = Callable[[str, list], None]


class Keys(NamedTuple):
    """Many state keys ``(name, id)`` at once (``ids``: an integer array), tracked as arrays of
    levels per id: one numpy pass where a key at a time would be a Python loop (a wake-up that
    reads a hundred snapshot rows)."""

    name: str
    ids: np.ndarray


class One(NamedTuple):
    """One key ``(name, id)`` of a bulk name, tracked in that name's array of levels."""

    name: str
    id: int


def _levels(book: dict, name: str, size: int) -> np.ndarray:
    """The level array of bulk keys ``name`` in ``book`` (-1: none yet), at least ``size``
    long."""
    arr = book.get(("bulk", name))
    if arr is None or arr.size < size:
        grown = np.full(max(size, 2 * (0 if arr is None else arr.size), 64), -1, np.int64)
        if arr is not None:
            grown[:arr.size] = arr
        book[("bulk", name)] = arr = grown
    return arr


def _level(book: dict, key: Hashable) -> int:
    """The level in ``book`` of ``key`` (for :class:`Keys`, the highest among its ids; -1:
    none)."""
    kind = type(key)
    if kind is One:
        arr = book.get(("bulk", key.name))
        return int(arr[key.id]) if arr is not None and key.id < arr.size else -1
    if kind is Keys:
        arr = book.get(("bulk", key.name))
        if arr is None or not key.ids.size:
            return -1
        try:
            return int(arr[key.ids].max())
        except IndexError:                          # ids past the array: none yet
            ids = key.ids[key.ids < arr.size]
            return int(arr[ids].max()) if ids.size else -1
    return book.get(key, -1)


def conflict_level(reads: Iterable[Hashable], writes: Iterable[Hashable],
                   last_read: dict, last_write: dict) -> int:
    """The lowest level after every earlier conflicting action (RAW, WAW and WAR)."""
    level = -1                                     # the highest conflicting level
    for key in reads:                              # a plain tuple key: the dictionaries at once
        got = last_write.get(key, -1) if type(key) is tuple else _level(last_write, key)
        if got > level:
            level = got
    for key in writes:
        if type(key) is tuple:
            got = max(last_write.get(key, -1), last_read.get(key, -1))
        else:
            got = max(_level(last_write, key), _level(last_read, key))
        if got > level:
            level = got
    return level + 1


class ActionQueue:
    """Holds actions and runs them through ``run(kind, payloads)``: at once (reference) or by
    conflict-free levels when :meth:`flush` is called or ``max_pending`` are held (batched)."""

    def __init__(self, run: Runner, mode: str = "batched", max_pending: int = 4096,
                 bulk: tuple[str, ...] = ()):
        self.run, self.batched, self.max_pending = run, mode == "batched", max_pending
        self.bulk = frozenset(bulk)       # key names tracked as arrays: (name, id) is Keys
        self._levels: list[dict[str, list]] = []
        self._last_read: dict = {}
        self._last_write: dict = {}
        self.pending = 0
        self.calls = 0                    # tensor calls made (one per level and kind)

    def add(self, kind: str, payload: Any, reads: Iterable[Hashable] = (),
            writes: Iterable[Hashable] = ()) -> None:
        if not self.batched:
            self.calls += 1
            self.run(kind, [payload])
            return
        reads, writes = self._keys(reads), self._keys(writes)
        last_read, last_write = self._last_read, self._last_write
        level = conflict_level(reads, writes, last_read, last_write)
        for key in reads:
            tk = type(key)
            if tk is One:
                arr = _levels(last_read, key.name, key.id + 1)
                if arr[key.id] < level:
                    arr[key.id] = level
            elif tk is Keys:
                if key.ids.size:
                    arr = _levels(last_read, key.name, int(key.ids.max()) + 1)
                    arr[key.ids] = np.maximum(arr[key.ids], level)  # a repeated id: one value
            elif last_read.get(key, -1) < level:
                last_read[key] = level
        for key in writes:
            tk = type(key)
            if tk is One:
                _levels(last_write, key.name, key.id + 1)[key.id] = level
            elif tk is Keys:
                if key.ids.size:
                    _levels(last_write, key.name, int(key.ids.max()) + 1)[key.ids] = level
            else:
                last_write[key] = level
        while len(self._levels) <= level:
            self._levels.append(defaultdict(list))
        self._levels[level][kind].append(payload)
        self.pending += 1
        if self.pending >= self.max_pending:
            self.flush()

    def _keys(self, keys: Iterable) -> list:
        """``keys`` with each ``(name, id)`` of a bulk name as :class:`One`."""
        bulk = self.bulk
        return [One(k[0], k[1]) if type(k) is tuple and len(k) == 2 and k[0] in bulk else k
                for k in keys]

    def flush(self) -> None:
        """Run every held action, level by level, one call per kind within a level."""
        levels, self._levels = self._levels, []
        self._last_read, self._last_write, self.pending = {}, {}, 0
        for level in levels:
            for kind in sorted(level):
                self.calls += 1
                self.run(kind, level[kind])
