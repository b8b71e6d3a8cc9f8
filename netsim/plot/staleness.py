"""The staleness of an event-driven run: a histogram of the ages of the models and messages its
clients merged (``staleness/`` arrays; docs/async.md, "Results")."""
from __future__ import annotations

from pathlib import Path

import numpy as np

from netsim.plot.caption import Caption, seed_counts
from netsim.plot.style import COLUMN, looks, new_figure, save, styled

BINS = 40                # histogram bins over the range of every algorithm's ages


@styled
def plot_staleness(ages: dict[str, list[np.ndarray]], path: str | Path,
                   pdf: bool = False) -> list[Path]:
    """Per algorithm (``ages``: one array of ages [s] per seed), the share of its merges in each
    age bin, its seeds pooled, as a step line over common bins, with its median marked."""
    pooled = {alg: np.concatenate(a) for alg, a in ages.items()}
    top = max((a.max() for a in pooled.values() if a.size), default=1.0) * 1e3
    edges = np.linspace(0.0, top or 1.0, BINS + 1)
    fig, ax = new_figure(COLUMN, 2.4)
    look = looks(list(ages))
    for alg, a in pooled.items():
        ms = a * 1e3
        share = np.histogram(ms, edges)[0] / max(ms.size, 1) * 100
        ax.stairs(share, edges, color=look[alg].colour, ls=look[alg].dash,
                  label=f"{alg} ({ms.size} merges)")
        if ms.size:
            ax.axvline(np.median(ms), color=look[alg].colour, ls=":", lw=0.8)
    ax.set_xlabel("age of the merged model or message [ms]")
    ax.set_ylabel("merges [%]")
    ax.legend(loc="upper right")
    what = ("age (simulated time since it was sent) of every peer model or message a client "
            "merged (AD-PSGD: the requester's model at the average; asynchronous gradient push: "
            f"the newest message per in-edge summed in on waking), share of the merges in {BINS} "
            "bins, seeds pooled, one line per algorithm; dotted: its median")
    seeds = seed_counts({alg: len(a) for alg, a in ages.items()})
    return save(fig, path, pdf, Caption(what, seeds, "none (a distribution, seeds pooled)"))
