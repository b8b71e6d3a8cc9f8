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
from typing import Any, Callable, Hashable, Iterable

Runner = Callable[[str, list], None]


def conflict_level(reads: Iterable[Hashable], writes: Iterable[Hashable],
                   last_read: dict, last_write: dict) -> int:
    """The lowest level after every earlier conflicting action (RAW, WAW and WAR)."""
    level = 0
    for key in reads:
        level = max(level, last_write.get(key, -1) + 1)
    for key in writes:
        level = max(level, last_write.get(key, -1) + 1, last_read.get(key, -1) + 1)
    return level


class ActionQueue:
    """Holds actions and runs them through ``run(kind, payloads)``: at once (reference) or by
    conflict-free levels when :meth:`flush` is called or ``max_pending`` are held (batched)."""

    def __init__(self, run: Runner, mode: str = "batched", max_pending: int = 4096):
        self.run, self.batched, self.max_pending = run, mode == "batched", max_pending
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
        reads, writes = tuple(reads), tuple(writes)
        level = conflict_level(reads, writes, self._last_read, self._last_write)
        for key in reads:
            self._last_read[key] = max(self._last_read.get(key, -1), level)
        for key in writes:
            self._last_write[key] = level
        while len(self._levels) <= level:
            self._levels.append(defaultdict(list))
        self._levels[level][kind].append(payload)
        self.pending += 1
        if self.pending >= self.max_pending:
            self.flush()

    def flush(self) -> None:
        """Run every held action, level by level, one call per kind within a level."""
        levels, self._levels = self._levels, []
        self._last_read, self._last_write, self.pending = {}, {}, 0
        for level in levels:
            for kind in sorted(level):
                self.calls += 1
                self.run(kind, level[kind])
