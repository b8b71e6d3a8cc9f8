"""The partition figure: how many training samples of each class every client holds."""
from __future__ import annotations

from pathlib import Path

import numpy as np
from matplotlib import colormaps
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from netsim.data.client_data import ClientData


def plot_partition(client_data: ClientData, path: str | Path) -> Path:
    """Stacked bars of per-class training counts per client (total counts for regression),
    clients sorted by ground-truth cluster; a strip under the bars colours each client by cluster
    and names the cluster (or group). Saved as PNG with the Agg canvas; returns ``path``."""
    cd, path = client_data, Path(path)
    order = np.argsort(cd.cluster, kind="stable")
    cluster = cd.cluster[order]
    pos = np.arange(cd.n_clients)

    fig = Figure(figsize=(min(24.0, 3.0 + 0.25 * cd.n_clients), 4.5), layout="constrained")
    FigureCanvasAgg(fig)
    ax, strip = fig.subplots(2, 1, sharex=True, gridspec_kw={"height_ratios": [12, 1]})
    if cd.task == "classification":
        counts = cd.class_counts("train")[order]
        cmap = colormaps["tab20" if cd.num_classes <= 20 else "viridis"]
        bottom = np.zeros(cd.n_clients)
        for c in range(cd.num_classes):
            colour = cmap(c if cd.num_classes <= 20 else c / (cd.num_classes - 1))
            ax.bar(pos, counts[:, c], bottom=bottom, width=0.85, color=colour, label=str(c))
            bottom += counts[:, c]
        if cd.num_classes <= 20:
            ax.legend(title="class", loc="upper left", bbox_to_anchor=(1.0, 1.0), fontsize="small")
    else:
        ax.bar(pos, cd.n["train"].cpu().numpy()[order], width=0.85, color="0.5")
    ax.set_ylabel("training samples")
    ax.set_title(f"partition of {cd.n_clients} clients")

    strip.imshow(cluster[None, :], aspect="auto", cmap="Pastel1", interpolation="nearest",
                 extent=(-0.5, cd.n_clients - 0.5, 0, 1))
    starts = np.flatnonzero(np.r_[True, cluster[1:] != cluster[:-1]])
    for start, end in zip(starts, np.r_[starts[1:], cd.n_clients]):
        name = cd.group[order[start]] or (f"cluster {cluster[start]}" if cluster[start] >= 0 else "")
        strip.text((start + end - 1) / 2, 0.5, name, ha="center", va="center", fontsize="small")
        if start > 0:
            ax.axvline(start - 0.5, color="k", lw=0.8, ls="--")
    strip.set_yticks([])
    strip.set_xlabel("client (sorted by cluster)")
    if cd.n_clients <= 40:
        strip.set_xticks(pos, [str(i) for i in order], fontsize="small")
    else:
        strip.set_xticks([])

    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=120)
    return path
