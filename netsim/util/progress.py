"""Progress of a run in rounds x algorithms x seeds, with an ETA from each algorithm's own cost.

On a terminal one status line is rewritten in place; anywhere else (a log file, a pipe) a plain
line is written at most every ``max(INTERVAL, elapsed / 10)`` seconds, so a log grows by about
ten lines per tenfold of run time instead of one line per update. The ETA charges every
remaining round of an algorithm at that algorithm's measured seconds per round (the mean over
all measured rounds for an algorithm not started yet), so a slow algorithm late in the list
does not make the first estimates wrong by its whole cost once it has run for one seed.
"""
from __future__ import annotations

import shutil
import sys
import time
from typing import Callable, TextIO

INTERVAL = 10.0          # seconds between plain lines (at least)
REFRESH = 0.2            # seconds between rewrites of a terminal line (at least)


def clock_text(seconds: float) -> str:
    """``h:mm:ss`` (or ``m:ss`` under an hour)."""
    s = int(round(seconds))
    h, m = divmod(s // 60, 60)
    return f"{h}:{m:02d}:{s % 60:02d}" if h else f"{m}:{s % 60:02d}"


class Progress:
    """Counts the rounds of a run (``labels`` x ``seeds`` x ``rounds``) and reports them on
    ``stream``: :meth:`start` an (algorithm, seed), :meth:`advance` once per round, :meth:`note`
    for a line of its own, :meth:`close` at the end."""

    def __init__(self, name: str, labels: list[str], seeds: list[int], rounds: int,
                 stream: TextIO | None = None, clock: Callable[[], float] = time.monotonic):
        self.name, self.rounds, self.clock = name, rounds, clock
        self.stream = stream or sys.stderr
        self.tty = bool(getattr(self.stream, "isatty", lambda: False)())
        self.todo = {lab: rounds * len(seeds) for lab in labels}
        self.spent = dict.fromkeys(labels, 0.0)
        self.done = dict.fromkeys(labels, 0)
        self.total = sum(self.todo.values())
        self.t0 = self.last = self.shown = clock()
        self.label, self.seed, self.round = labels[0], seeds[0], 0
        self._write(f"{name}: {len(labels)} algorithms x {len(seeds)} seeds x {rounds} rounds "
                    f"= {self.total} rounds")

    def start(self, label: str, seed: int) -> None:
        """An (algorithm, seed) run begins."""
        self.label, self.seed, self.round = label, seed, 0
        self.last = self.clock()

    def advance(self) -> None:
        """One round of the current run is done."""
        now = self.clock()
        self.spent[self.label] += now - self.last
        self.done[self.label] += 1
        self.last, self.round = now, self.round + 1
        elapsed = now - self.t0
        due = REFRESH if self.tty else max(INTERVAL, elapsed / 10)
        if now - self.shown >= due:
            self.shown = now
            self._status(self.line())

    def skip(self) -> None:
        """The current run stopped early (diverged): its remaining rounds are not work to do."""
        self.todo[self.label] -= self.rounds - self.round
        self.total -= self.rounds - self.round

    def eta(self) -> float | None:
        """Seconds left: remaining rounds of each algorithm at its measured cost per round."""
        measured = sum(self.done.values())
        if not measured:
            return None
        mean = sum(self.spent.values()) / measured
        return sum((self.todo[lab] - self.done[lab])
                   * (self.spent[lab] / self.done[lab] if self.done[lab] else mean)
                   for lab in self.todo)

    def line(self) -> str:
        """The status: share done, rounds, current run, elapsed time and ETA."""
        done = sum(self.done.values())
        eta = self.eta()
        return (f"{self.name} {100 * done / max(self.total, 1):3.0f}% {done}/{self.total} rounds"
                f" | {self.label} seed {self.seed} round {self.round}/{self.rounds}"
                f" | {clock_text(self.clock() - self.t0)} elapsed"
                f", ETA {'?' if eta is None else clock_text(eta)}")

    def note(self, text: str) -> None:
        """A line of its own (the terminal status line is cleared first, redrawn later)."""
        self._write(text)

    def close(self) -> None:
        """Clear the terminal line; a plain stream gets the final count and the time taken."""
        done = sum(self.done.values())
        self._write(f"{self.name}: {done}/{self.total} rounds in "
                    f"{clock_text(self.clock() - self.t0)}")

    def _status(self, text: str) -> None:
        if self.tty:
            width = shutil.get_terminal_size((100, 20)).columns - 1
            self.stream.write("\r" + text[:width] + "\x1b[K")
            self.stream.flush()
        else:
            self._write(text)

    def _write(self, text: str) -> None:
        if self.tty:
            self.stream.write("\r\x1b[K")
        print(text, file=self.stream, flush=True)


class NoProgress:
    """The progress of a run that shows none (``quiet``, or ``outputs.progress: false``): a
    :meth:`note` still goes to stderr, every other call does nothing."""

    def start(self, label: str, seed: int) -> None: ...

    def advance(self) -> None: ...

    def skip(self) -> None: ...

    def note(self, text: str) -> None:
        """A line on stderr."""
        print(text, file=sys.stderr, flush=True)

    def close(self) -> None: ...
