"""The ``trace`` link model: link availability replayed from a measured trace (a CSV file).

File format (UTF-8 CSV, lines starting with ``#`` are comments)::

    src,dst,start,end
    0,1,0.0,12.5
    1,0,3.0,inf

Each row is an interval ``[start, end)`` of simulated seconds during which the directed link
``src -> dst`` is up (``symmetric: true`` also opens ``dst -> src``); ``src`` and ``dst`` are
client indices in ``[0, clients)``, ``end`` may be ``inf``; intervals of one link may overlap.
A link of the base graph is down outside its intervals; a link that no row mentions is down
(``absent: down``, the default: a contact trace lists every contact) or always up
(``absent: up``: a failure trace lists only the links that fail, as their up intervals).
With ``period: T`` the trace repeats every T simulated seconds (time is taken modulo T).
The base graph still bounds the links: use ``topology: complete`` to let the trace decide all.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np

from netsim.errors import ConfigError
from netsim.links.edges import Edges
from netsim.links.models import LINKS, LinkModel
from netsim.schema import Field
from netsim.util.text_file import read_text

COLUMNS = ("src", "dst", "start", "end")


def read_link_trace(file: str | Path, n: int, field: str = "network.links.path") -> np.ndarray:
    """The up intervals of a trace file as a float array [K, 4] (src, dst, start, end); a
    ConfigError naming ``field``, the file and the first bad line otherwise."""
    allowed = (f"a CSV file with the header {','.join(COLUMNS)}, one up interval per row, "
               f"nodes in [0, {n - 1}], start < end")
    lines = [(k, text.strip())
             for k, text in enumerate(read_text(file, field, "CSV file").splitlines(), 1)
             if text.strip() and not text.lstrip().startswith("#")]
    if not lines or tuple(c.strip() for c in lines[0][1].split(",")) != COLUMNS:
        where = lines[0][0] if lines else 1
        raise ConfigError(field, str(file), allowed, f"line {where}: not the header")
    rows = []
    for k, text in lines[1:]:
        cells = [c.strip() for c in text.split(",")]
        try:
            src, dst, start, end = int(cells[0]), int(cells[1]), float(cells[2]), float(cells[3])
        except (ValueError, IndexError):
            raise ConfigError(field, str(file), allowed, f"line {k}: {text!r}") from None
        if len(cells) != 4 or not (0 <= src < n and 0 <= dst < n) or src == dst \
                or not 0 <= start < end:
            raise ConfigError(field, str(file), allowed, f"line {k}: {text!r}")
        rows.append((src, dst, start, end))
    return np.asarray(rows, float).reshape(-1, 4)


def _check(params: dict, path: str, n: int) -> None:
    """Validation that needs the number of clients: the file itself."""
    read_link_trace(params["path"], n, f"{path}.path")


@LINKS.register("trace", {
    "path": Field("str", doc="CSV of up intervals src,dst,start,end (simulated s); relative "
                  "paths from the working directory"),
    "absent": Field("str", "down", "links no row mentions: down (contact trace) or up "
                    "(failure trace)", choices=("down", "up")),
    "symmetric": Field("bool", False, "a row also opens the reverse link dst -> src"),
    "period": Field("float", None, "repeat the trace every this many simulated s", lo=0.0,
                    lo_open=True, nullable=True)})
class TraceLinks(LinkModel):
    """Links up during the intervals of a measured trace (CSV src,dst,start,end), replayed."""

    check = staticmethod(_check)

    def __init__(self, adjacency: np.ndarray | Edges, rng: np.random.Generator, path: str,
                 absent: str = "down", symmetric: bool = False, period: float | None = None):
        super().__init__(adjacency)
        rows = read_link_trace(path, self.n)
        if symmetric:
            rows = np.concatenate([rows, rows[:, [1, 0, 2, 3]]])
        self.edge = self.edges.find(rows[:, 1].astype(int), rows[:, 0].astype(int))
        self.start, self.end = rows[:, 2], rows[:, 3]
        self.period = period
        listed = np.zeros(len(self.edges), bool)
        listed[self.edge[self.edge >= 0]] = True
        self.always = ~listed if absent == "up" else np.zeros_like(listed)

    def up_edges(self, t: float) -> np.ndarray:
        t = t % self.period if self.period else t
        now = (self.start <= t) & (t < self.end) & (self.edge >= 0)   # -1: not in the graph
        out = self.always.copy()
        out[self.edge[now]] = True
        return out

    def availability_edges(self) -> np.ndarray:
        """Share of the horizon (``period``, else the last finite end in the file) each link
        is up: the union of its intervals, clipped to the horizon."""
        finite = self.end[np.isfinite(self.end)]
        horizon = self.period or float(max(finite.max(initial=0.0), self.start.max(initial=0.0)))
        share = self.always.astype(float)
        for e in set(self.edge[self.edge >= 0].tolist()):
            mine = self.edge == e
            share[e] = _union_length(self.start[mine], self.end[mine], horizon) / horizon \
                if horizon > 0 else 1.0
        return share


def _union_length(start: np.ndarray, end: np.ndarray, horizon: float) -> float:
    """Length of the union of intervals [start, end) within [0, horizon)."""
    total, reach = 0.0, 0.0
    for s, e in sorted(zip(np.minimum(start, horizon), np.minimum(end, horizon))):
        if e > reach:
            total += e - max(s, reach)
            reach = e
    return total
