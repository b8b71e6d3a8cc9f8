"""Per-node timeline of one round from an event trace: compute bars, sends and deliveries."""
from __future__ import annotations

from pathlib import Path

import numpy as np

from netsim.plot.curves import _save, plt
from netsim.sim.trace import KINDS

_K = {k: i for i, k in enumerate(KINDS)}


def plot_timeline(events: np.ndarray, rnd: int, path: Path, pdf: bool = False) -> list[Path]:
    """Events [E, 6] (time, kind, src, dst, bytes, round) of round ``rnd`` on one axis per node.

    Compute phases are bars from start to end; a send is a dot on the sender's row; a delivery a
    triangle on the receiver's row; lost, late and blocked messages crosses.
    """
    ev = events[events[:, 5] == rnd]
    fig, ax = plt.subplots(figsize=(7, 0.22 * max(8, len(np.unique(ev[:, 2]))) + 1))
    starts, ends = ev[ev[:, 1] == _K["compute_start"]], ev[ev[:, 1] == _K["compute_end"]]
    end_of = {int(n): t for t, _, n, *_ in ends}
    for t, _, node, *_ in starts:
        stop = end_of.get(int(node))
        if stop is not None:
            ax.barh(node, stop - t, left=t, height=0.6, color="tab:blue", alpha=0.5)
        else:
            ax.plot([t], [node], "|", color="tab:red")
    for kind, row, marker, colour in (("send", 2, ".", "tab:green"), ("deliver", 3, ">", "black"),
                                      ("lost", 3, "x", "tab:red"), ("late", 3, "x", "tab:orange"),
                                      ("blocked", 3, "x", "tab:purple")):
        sel = ev[ev[:, 1] == _K[kind]]
        if sel.size:
            ax.plot(sel[:, 0], sel[:, row], marker, color=colour, ms=4, ls="", label=kind)
    ax.set_xlabel("simulated time [s]")
    ax.set_ylabel("node")
    ax.set_title(f"round {rnd}", fontsize=9)
    if ax.get_legend_handles_labels()[0]:
        ax.legend(fontsize=7, ncol=5, loc="upper center", bbox_to_anchor=(0.5, -0.25))
    return _save(fig, path, pdf)
