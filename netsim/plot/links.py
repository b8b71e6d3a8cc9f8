"""The realised communication graph over rounds: which directed links delivered, round by round
(a link trace, e.g. of a replayed measurement or a correlated outage model)."""
from __future__ import annotations

from pathlib import Path

import numpy as np
from matplotlib.colors import ListedColormap

from netsim.plot.caption import Caption
from netsim.plot.style import COLUMN, OKABE_ITO, new_figure, save, styled

MAX_ROWS = 400           # links shown at most (the busiest, in order)


@styled
def plot_links(delivered: np.ndarray, path: str | Path, cluster: np.ndarray | None = None,
               title: str = "", pdf: bool = False) -> list[Path]:
    """``delivered`` [R, N, N] (receiver-major: ``[r, i, j]`` = the message j -> i arrived in
    round r) as a raster: one row per directed link that delivered at least once (sorted by
    sender's, then receiver's ground-truth cluster; links between clusters last), one column per
    round, dark = delivered. Below it, the share of those links delivered per round."""
    d = np.asarray(delivered, bool)
    r, n, _ = d.shape
    cluster = np.zeros(n, int) if cluster is None else np.asarray(cluster)
    recv, send = np.nonzero(d.any(axis=0))
    between = cluster[recv] != cluster[send]
    order = np.lexsort((recv, send, cluster[send], between))[:MAX_ROWS]
    recv, send, between = recv[order], send[order], between[order]
    fig, (ax, share) = new_figure(COLUMN, 3.2, 2, 1, sharex=True,
                                  gridspec_kw={"height_ratios": [3, 1]})
    ax.imshow(d[:, recv, send].T, aspect="auto", interpolation="nearest",
              cmap=ListedColormap(["white", OKABE_ITO[3]]), vmin=0, vmax=1,
              extent=(0.5, r + 0.5, len(recv) - 0.5, -0.5))
    if between.any() and not between.all():
        ax.axhline(np.argmax(between) - 0.5, color=OKABE_ITO[4], lw=0.8, ls="--")
        ax.text(r + 0.5, np.argmax(between), " between\n clusters", fontsize=6, va="top",
                color=OKABE_ITO[4])
    ax.set_ylabel(f"link ({len(recv)} directed)")
    ax.set_yticks([])
    ax.grid(False)
    ax.set_title(title or "delivered messages per link and round")
    rounds = np.arange(1, r + 1)
    share.plot(rounds, 100 * d[:, recv, send].mean(axis=1), color=OKABE_ITO[3],
               label="all links")
    if between.any():
        share.plot(rounds, 100 * d[:, recv[between], send[between]].mean(axis=1),
                   color=OKABE_ITO[4], ls="--", label="between clusters")
        share.legend(loc="lower right", ncol=2)
    share.set_ylim(0, 100)
    share.set_ylabel("delivered [%]")
    share.set_xlabel("round")
    what = (f"which directed links delivered a message in each round (dark: delivered): one row "
            f"per link that delivered at least once (the first {MAX_ROWS} by sender's, then "
            "receiver's cluster, links between clusters last), one column per round; below, "
            "the share of those links delivered per round [%]")
    return save(fig, path, pdf, Caption(what, "one run (named in the title)", "none (one run)"))
