"""Event trace of a simulated run: one row per event (time, kind, src, dst, bytes, round).

Rows are appended in vectorised blocks by the engine, so recording costs one array append per
phase, not one Python object per message.
"""
from __future__ import annotations

import csv
from pathlib import Path

import numpy as np

KINDS = ("compute_start", "compute_end", "crash", "recover", "send", "deliver", "lost", "late",
         "blocked", "link_down", "timeout", "edge_down", "edge_up", "partition", "heal")
_CODE = {k: i for i, k in enumerate(KINDS)}


class Trace:
    """Append-only event table; ``rows()`` returns it sorted by time."""

    def __init__(self) -> None:
        self._blocks: list[np.ndarray] = []

    def add(self, kind: str, time, src, dst=-1, nbytes=0.0, rnd: int = 0) -> None:
        """Record events of one ``kind``; arguments broadcast to a common length."""
        time, src, dst, nbytes = np.broadcast_arrays(np.asarray(time, float), np.asarray(src, float),
                                                     np.asarray(dst, float), np.asarray(nbytes, float))
        if time.size == 0:
            return
        block = np.empty((time.size, 6))
        block[:, 0] = time.ravel()
        block[:, 1] = _CODE[kind]
        block[:, 2] = src.ravel()
        block[:, 3] = dst.ravel()
        block[:, 4] = nbytes.ravel()
        block[:, 5] = rnd
        self._blocks.append(block)

    def array(self) -> np.ndarray:
        """All events as a float array [E, 6], stably sorted by time."""
        if not self._blocks:
            return np.empty((0, 6))
        data = np.concatenate(self._blocks)
        return data[np.argsort(data[:, 0], kind="stable")]

    def rows(self) -> list[tuple[float, str, int, int, float, int]]:
        """Events as ``(time, kind, src, dst, bytes, round)`` tuples."""
        return [(t, KINDS[int(k)], int(s), int(d), b, int(r)) for t, k, s, d, b, r in self.array()]

    def write_csv(self, path: str | Path) -> Path:
        """Write the trace as CSV with a header."""
        path = Path(path)
        with open(path, "w", newline="") as fh:
            w = csv.writer(fh)
            w.writerow(["time", "kind", "src", "dst", "bytes", "round"])
            w.writerows(self.rows())
        return path

    def __len__(self) -> int:
        return sum(len(b) for b in self._blocks)


def read_trace(path: str | Path) -> np.ndarray:
    """A trace CSV read back as the float array of :meth:`Trace.array`."""
    with open(path, newline="") as fh:
        rows = list(csv.reader(fh))[1:]
    return np.array([[float(t), _CODE[k], float(s), float(d), float(b), float(r)]
                     for t, k, s, d, b, r in rows]).reshape(-1, 6)
