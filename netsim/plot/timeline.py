"""Per-node timeline of one round from an event trace: compute bars, sends and deliveries."""
from __future__ import annotations

from pathlib import Path

import numpy as np
from matplotlib.ticker import MaxNLocator

from netsim.plot.caption import Caption
from netsim.plot.style import OKABE_ITO, PAGE, new_figure, save, styled
from netsim.sim.trace import KINDS

_K = {k: i for i, k in enumerate(KINDS)}
# kind, trace column of the node it is drawn on (2 = src, 3 = dst), marker, colour
MARKS = (("send", 2, ".", OKABE_ITO[2]), ("deliver", 3, ">", OKABE_ITO[6]),
         ("lost", 3, "x", OKABE_ITO[4]), ("late", 3, "x", OKABE_ITO[0]),
         ("blocked", 3, "x", OKABE_ITO[5]))


@styled
def plot_timeline(events: np.ndarray, rnd: int, path: str | Path,
                  pdf: bool = False, run: str = "") -> list[Path]:
    """Events [E, 6] (time, kind, src, dst, bytes, round) of round ``rnd`` on one row per node.

    Compute phases are bars from start to end (a tick where a node never finished); a send is a
    dot on the sender's row; a delivery a triangle on the receiver's row; lost, late and blocked
    messages crosses. ``run`` names the run in the caption sidecar (e.g. ``sgp, seed 0``).
    """
    ev = events[events[:, 5] == rnd]
    nodes = len(np.unique(ev[:, 2])) if ev.size else 1
    fig, ax = new_figure(PAGE, 0.12 * max(8, nodes) + 1.0)
    starts, ends = ev[ev[:, 1] == _K["compute_start"]], ev[ev[:, 1] == _K["compute_end"]]
    end_of = {int(n): t for t, _, n, *_ in ends}
    for t, _, node, *_ in starts:
        stop = end_of.get(int(node))
        if stop is not None:
            ax.barh(node, stop - t, left=t, height=0.6, color=OKABE_ITO[3], alpha=0.45, lw=0)
        else:
            ax.plot([t], [node], "|", color=OKABE_ITO[4])
    for kind, row, marker, colour in MARKS:
        sel = ev[ev[:, 1] == _K[kind]]
        if sel.size:
            ax.plot(sel[:, 0], sel[:, row], marker, color=colour, ms=3, ls="", label=kind)
    ax.set_xlabel("simulated time [s]")
    ax.set_ylabel("node")
    ax.yaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_title(f"round {rnd}: compute (bars) and messages")
    if ax.get_legend_handles_labels()[0]:
        fig.legend(*ax.get_legend_handles_labels(), loc="outside lower center", ncol=5)
    what = (f"the events of round {rnd} on one row per node vs simulated time [s]: compute "
            "phases as bars (a tick where a node never finished), sends as dots on the sender's "
            "row, deliveries as triangles on the receiver's row, lost, late and blocked messages "
            "as crosses")
    return save(fig, path, pdf, Caption(what, run or "one run", "none (one run)"))
