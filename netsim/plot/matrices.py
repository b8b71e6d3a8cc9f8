"""Collaboration matrices at chosen rounds, diagonal masked (CoBo Fig. 3 and 5, DPFL Fig. 8-11)."""
from __future__ import annotations

from pathlib import Path

import numpy as np
from matplotlib import colormaps

from netsim.analysis.graphs import oracle_matrix
from netsim.plot.style import PAGE, new_figure, save, styled

MASK_COLOUR = "0.85"             # the masked diagonal: light grey, outside the colour map


def pick_rounds(rounds: np.ndarray, k: int = 4) -> list[int]:
    """Indices of up to ``k`` evaluations spread evenly from the first to the last."""
    n = len(rounds)
    return sorted(set(np.linspace(0, n - 1, min(k, n)).round().astype(int).tolist()))


def draw_collaboration(ax, W: np.ndarray, vmax: float | None = None,
                       order: np.ndarray | None = None, cluster: np.ndarray | None = None):
    """Draw W (row i = weights client i gives) on ``ax`` with a sequential colour map from 0 to
    ``vmax`` (default: the largest off-diagonal weight) and the diagonal masked; clients in
    ``order``; thin lines between ground-truth clusters. Returns the image."""
    W = np.asarray(W, float)
    order = np.arange(W.shape[0]) if order is None else np.asarray(order)
    M = np.ma.masked_array(W[np.ix_(order, order)], mask=np.eye(W.shape[0], dtype=bool))
    top = vmax if vmax is not None else (float(M.max()) if M.count() and M.max() > 0 else 1.0)
    cmap = colormaps["viridis"].with_extremes(bad=MASK_COLOUR)
    im = ax.imshow(M, cmap=cmap, vmin=0.0, vmax=top, interpolation="nearest")
    if cluster is not None:
        c = np.asarray(cluster)[order]
        for b in np.flatnonzero(c[1:] != c[:-1]) + 0.5:
            ax.axhline(b, color="white", lw=0.6)
            ax.axvline(b, color="white", lw=0.6)
    ax.set_xlabel("client j")
    ax.set_ylabel("client i")
    ax.grid(False)
    return im


def nearest(rounds: np.ndarray, wanted: list[int]) -> list[int]:
    """Indices of the evaluations closest to the ``wanted`` rounds (duplicates removed)."""
    rounds = np.asarray(rounds)
    return list(dict.fromkeys(int(np.abs(rounds - r).argmin()) for r in wanted))


@styled
def plot_collaboration_grid(rows: dict[str, tuple[np.ndarray, np.ndarray]], path: str | Path,
                            cluster: np.ndarray | None = None, at: list[int] | None = None,
                            oracle: bool = True, title: str = "",
                            pdf: bool = False) -> list[Path]:
    """One row per algorithm ``name: (W [E, N, N], rounds [E])``: its collaboration matrices at
    the evaluations nearest to the rounds ``at`` (default: up to 4 spread over the first row's
    evaluations), diagonal masked, one colour scale per row (0 to the largest off-diagonal weight
    shown), clients sorted by ground-truth cluster; with ``oracle`` and known clusters, the oracle
    block matrix last (its 1s at the top of the scale)."""
    first_rounds = np.asarray(next(iter(rows.values()))[1])
    at = [int(first_rounds[k]) for k in pick_rounds(first_rounds)] if at is None else list(at)
    known = cluster is not None and (np.asarray(cluster) >= 0).any()
    order = np.argsort(cluster, kind="stable") if known else None
    n_cols = len(at) + bool(oracle and known)
    fig, axes = new_figure(min(PAGE, 0.5 + 1.55 * n_cols), 0.3 + 1.75 * len(rows), len(rows),
                           n_cols, squeeze=False)
    for ax_row, (name, (W, rounds)) in zip(axes, rows.items()):
        W = np.asarray(W, float)
        mats = [(W[k], f"round {int(rounds[k])}") for k in nearest(rounds, at)]
        off = ~np.eye(W.shape[1], dtype=bool)
        vmax = max(float(m[off].max()) for m, _ in mats) or 1.0
        if oracle and known:
            mats.append((oracle_matrix(cluster) * vmax, "oracle"))
        for ax, (m, label) in zip(ax_row, mats):
            im = draw_collaboration(ax, m, vmax, order, cluster if known else None)
            ax.set_title(label)
            ax.set_ylabel("")
        for ax in ax_row[len(mats):]:
            ax.set_visible(False)
        ax_row[0].set_ylabel(f"{name}\nclient i" if len(rows) > 1 else "client i")
        fig.colorbar(im, ax=list(ax_row), shrink=0.8, label="weight $W_{ij}$")
    if title:
        fig.suptitle(title)
    return save(fig, path, pdf)


def plot_collaboration(W: np.ndarray, rounds: np.ndarray, path: str | Path, title: str = "",
                       cluster: np.ndarray | None = None, at: list[int] | None = None,
                       oracle: bool = True, pdf: bool = False) -> list[Path]:
    """Collaboration matrices of one run at the rounds ``at`` (see
    :func:`plot_collaboration_grid`)."""
    return plot_collaboration_grid({title: (W, rounds)}, path, cluster, at, oracle, title, pdf)
