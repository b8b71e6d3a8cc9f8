"""Personal outer weights softmax(lambda_i) of PDBO-MTL, one row per agent (PDBO's learned
mixture of the K shared learners)."""
from __future__ import annotations

from pathlib import Path

import numpy as np

from netsim.plot.style import COLUMN, new_figure, save, styled


def draw_outer_weights(ax, weights: np.ndarray, cluster: np.ndarray):
    """Draw ``weights`` [N, K] (row i = softmax(lambda_i), eq. 6 of PDBO) on ``ax``: agents
    sorted by ground-truth cluster (stable), a white line between clusters, colour 0..1.
    Returns the image."""
    weights = np.asarray(weights, float)
    cluster = np.asarray(cluster)
    order = np.argsort(cluster, kind="stable")
    n, k = weights.shape
    im = ax.imshow(weights[order], vmin=0.0, vmax=1.0, aspect="auto", interpolation="nearest")
    c = cluster[order]
    for b in np.flatnonzero(c[1:] != c[:-1]) + 0.5:
        ax.axhline(b, color="white", lw=0.8)
    ax.set_xticks(range(k), [f"learner {j}" for j in range(k)])
    step = max(1, n // 10)
    ax.set_yticks(range(0, n, step), [f"{order[r]} (c{c[r]})" for r in range(0, n, step)])
    ax.set_ylabel("agent (cluster)")
    ax.grid(False)
    return im


@styled
def plot_outer_weights(weights: np.ndarray, cluster: np.ndarray, path: str | Path,
                       title: str = "", pdf: bool = False) -> list[Path]:
    """The heat map of :func:`draw_outer_weights` with a colour bar."""
    fig, ax = new_figure(COLUMN, min(6.0, 1.0 + 0.12 * len(weights)))
    im = draw_outer_weights(ax, weights, cluster)
    ax.set_title(title or "outer weights softmax(lambda_i)")
    fig.colorbar(im, ax=ax, label="weight")
    return save(fig, path, pdf)
