"""The partition figure: how many training samples of each class every client holds."""
from __future__ import annotations

from pathlib import Path

import numpy as np
from matplotlib import colormaps
from matplotlib.colors import ListedColormap

from netsim.plot.caption import Caption
from netsim.plot.style import OKABE_ITO, PAGE, new_figure, save, styled


@styled
def draw_partition(counts: np.ndarray, cluster: np.ndarray, group, path: str | Path,
                   classes: bool = True, pdf: bool = False, run: str = "") -> list[Path]:
    """Stacked bars of per-class training counts ``counts [N, C]`` per client (with
    ``classes=False``, ``counts [N, 1]`` are total sizes, bars coloured by cluster), clients sorted
    by ground-truth cluster; a strip under the bars colours each client by cluster and names the
    cluster (or group). ``run`` names the partition's seed in the caption sidecar."""
    counts, cluster = np.asarray(counts), np.asarray(cluster)
    group = ["" if g is None else str(g) for g in group]
    n, n_cls = counts.shape
    order = np.argsort(cluster, kind="stable")
    cl = cluster[order]
    pos = np.arange(n)
    fig, (ax, strip) = new_figure(min(PAGE, 2.0 + 0.13 * n), 2.6, 2, 1, sharex=True,
                                  gridspec_kw={"height_ratios": [12, 1]})
    if classes:
        cmap = colormaps["tab20" if n_cls <= 20 else "viridis"]
        bottom = np.zeros(n)
        for c in range(n_cls):
            colour = cmap(c if n_cls <= 20 else c / (n_cls - 1))
            ax.bar(pos, counts[order, c], bottom=bottom, width=0.85, color=colour, label=str(c))
            bottom += counts[order, c]
        if n_cls <= 20:
            ax.legend(title="class", loc="upper left", bbox_to_anchor=(1.0, 1.0),
                      ncol=1 + n_cls // 11)
    else:
        ax.bar(pos, counts[order, 0], width=0.85,
               color=[OKABE_ITO[max(c, 0) % len(OKABE_ITO)] for c in cl])
    ax.set_ylabel("training samples")
    ax.grid(axis="x", visible=False)
    strip.imshow(np.maximum(cl, 0)[None, :] % len(OKABE_ITO), aspect="auto", alpha=0.45,
                 cmap=ListedColormap(OKABE_ITO), vmin=0, vmax=len(OKABE_ITO) - 1,
                 interpolation="nearest", extent=(-0.5, n - 0.5, 0, 1))
    starts = np.flatnonzero(np.r_[True, cl[1:] != cl[:-1]])
    for start, end in zip(starts, np.r_[starts[1:], n]):
        name = group[order[start]] or (f"cluster {cl[start]}" if cl[start] >= 0 else "")
        strip.text((start + end - 1) / 2, 0.5, name, ha="center", va="center", fontsize=6)
        if start > 0:
            ax.axvline(start - 0.5, color="k", lw=0.8, ls="--")
    strip.set_yticks([])
    strip.grid(False)
    strip.set_xlabel("client (sorted by cluster)")
    if n <= 40:
        strip.set_xticks(pos, [str(i) for i in order], fontsize=5)
    else:
        strip.set_xticks([])
    what = ("training samples " + ("per class (stacked) " if classes else "") + "of each client"
            + ("" if classes else " (bars coloured by cluster)") + ", clients sorted by "
            "ground-truth cluster; the strip below names each cluster (or group)")
    return save(fig, path, pdf, Caption(what, run or "one partition", "none (one partition)"))


def plot_partition(client_data, path: str | Path, pdf: bool = False, run: str = "") -> Path:
    """The partition figure of a ``ClientData`` (per-class counts for classification, sizes for
    regression; ``run`` as in :func:`draw_partition`); returns the PNG path."""
    cd = client_data
    classes = cd.task == "classification"
    counts = cd.class_counts("train") if classes else cd.n["train"].cpu().numpy()[:, None]
    return draw_partition(counts, np.asarray(cd.cluster), cd.group, path, classes, pdf, run)[0]
