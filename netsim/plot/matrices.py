"""Collaboration matrices at chosen rounds, diagonal masked (CoBo Fig. 3 and 5, DPFL Fig. 8-11)."""
from __future__ import annotations

from pathlib import Path
from typing import Iterable

import numpy as np
from matplotlib import colormaps

from netsim.analysis.graphs import oracle_matrix
from netsim.plot.caption import Caption
from netsim.plot.style import PAGE, new_figure, save, styled

MASK_COLOUR = "0.85"             # the masked diagonal: light grey, outside the colour map


def pick_rounds(rounds: np.ndarray, k: int = 4) -> list[int]:
    """Indices of up to ``k`` evaluations spread evenly from the first to the last."""
    n = len(rounds)
    return sorted(set(np.linspace(0, n - 1, min(k, n)).round().astype(int).tolist()))


def arranged(W: np.ndarray, order: np.ndarray | None = None) -> np.ma.MaskedArray:
    """``W`` with its rows and columns in ``order`` (default: as they are), diagonal masked."""
    W = np.asarray(W, float)
    order = np.arange(W.shape[0]) if order is None else np.asarray(order)
    return np.ma.masked_array(W[np.ix_(order, order)], mask=np.eye(W.shape[0], dtype=bool))


def draw_collaboration(ax, W: np.ndarray, vmax: float | None = None,
                       order: np.ndarray | None = None, cluster: np.ndarray | None = None):
    """Draw W (row i = weights client i gives) on ``ax`` with a sequential colour map from 0 to
    ``vmax`` (default: the largest off-diagonal weight) and the diagonal masked; clients in
    ``order``; thin lines between ground-truth clusters. Returns the image."""
    M = arranged(W, order)
    top = vmax if vmax is not None else (float(M.max()) if M.count() and M.max() > 0 else 1.0)
    cmap = colormaps["viridis"].with_extremes(bad=MASK_COLOUR)
    im = ax.imshow(M, cmap=cmap, vmin=0.0, vmax=top, interpolation="nearest")
    if cluster is not None:
        c = np.asarray(cluster) if order is None else np.asarray(cluster)[order]
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


def row_panels(W: np.ndarray, rounds: np.ndarray, at: list[int],
               oracle_of: np.ndarray | None = None) -> tuple[list[tuple[np.ndarray, str]], float]:
    """One row of a grid: ``(matrix, title)`` at the evaluations of ``W [E, N, N]`` nearest to
    the rounds ``at``, then with ``oracle_of`` (clusters) the oracle block matrix scaled to the
    top; and the row's colour-scale top (the largest off-diagonal weight shown, 1 if none)."""
    W = np.asarray(W, float)
    mats = [(W[k], f"round {int(rounds[k])}") for k in nearest(rounds, at)]
    off = ~np.eye(W.shape[1], dtype=bool)
    vmax = max(float(m[off].max()) for m, _ in mats) or 1.0
    if oracle_of is not None:
        mats.append((oracle_matrix(oracle_of) * vmax, "oracle"))
    return mats, vmax


def grid_figure(rows: dict[str, tuple[list[tuple[np.ndarray, str]], float]], n_cols: int,
                cluster: np.ndarray | None = None, title: str = ""):
    """The figure of :func:`plot_collaboration_grid` from its rows (``name: row_panels(...)``)
    with clients sorted by ``cluster`` (ground truth; None: unknown) and the ``title`` on top.
    Returns the figure, the images of each row and the title text (None without one)."""
    order = None if cluster is None else np.argsort(cluster, kind="stable")
    fig, axes = new_figure(min(PAGE, 0.5 + 1.55 * n_cols), 0.3 + 1.75 * len(rows), len(rows),
                           n_cols, squeeze=False)
    images = []
    for ax_row, (name, (mats, vmax)) in zip(axes, rows.items()):
        images.append([])
        for ax, (m, label) in zip(ax_row, mats):
            images[-1].append(draw_collaboration(ax, m, vmax, order, cluster))
            ax.set_title(label)
            ax.set_ylabel("")
        for ax in ax_row[len(mats):]:
            ax.set_visible(False)
        ax_row[0].set_ylabel(f"{name}\nclient i" if len(rows) > 1 else "client i")
        fig.colorbar(images[-1][-1], ax=list(ax_row), shrink=0.8, label="weight $W_{ij}$")
    return fig, images, fig.suptitle(title) if title else None


def grid_caption(rows: dict[str, tuple[list[tuple[np.ndarray, str]], float]],
                 sorted_by_cluster: bool) -> Caption:
    """The caption of a :func:`grid_figure` of ``rows`` (``name: row_panels(...)``)."""
    name, (mats, _) = next(iter(rows.items()))
    shown = ", ".join(t for _, t in mats)
    what = (f"collaboration matrices W of {', '.join(rows) or 'a run'} (row i: the weights client "
            f"i gives each client j) at {shown}, diagonal masked (grey), one colour scale per row "
            "from 0 to the largest off-diagonal weight shown"
            + ("; clients sorted by ground-truth cluster, white lines between clusters"
               if sorted_by_cluster else "")
            + ("; the oracle: the ground-truth block matrix at the top of the scale"
               if "oracle" in shown else ""))
    return Caption(what, "one run per row (named in its title)", "none (one run)")


def _known(cluster: np.ndarray | None) -> np.ndarray | None:
    """``cluster`` where some client has a ground-truth cluster, else None."""
    return cluster if cluster is not None and (np.asarray(cluster) >= 0).any() else None


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
    known = _known(cluster)
    oracle_of = known if oracle else None
    panels = {name: row_panels(W, rounds, at, oracle_of) for name, (W, rounds) in rows.items()}
    fig, _, _ = grid_figure(panels, len(at) + (oracle_of is not None), known, title)
    return save(fig, path, pdf, grid_caption(panels, known is not None))


class _Grid:
    """A one-row :func:`grid_figure` that runs with the same panels refill."""

    def __init__(self, fig, images: list[list], heading):
        self.fig, (self.images,), self.heading = fig, images, heading

    def bar_width(self) -> float:
        """Width (pixels) of the colour bar with its labels: a layout fits one width."""
        return self.fig.axes[-1].get_tightbbox().width

    def refill(self, mats: list[tuple[np.ndarray, str]], vmax: float, order: np.ndarray | None,
               title: str) -> float:
        """Show ``mats`` (from :func:`row_panels`) on a colour scale to ``vmax`` under ``title``;
        returns the colour bar's new width."""
        for im, (m, label) in zip(self.images, mats):
            im.set_data(arranged(m, order))
            im.set_clim(0.0, vmax)
            im.axes.set_title(label)
        if self.heading is not None:
            self.heading.set_text(title)
        return self.bar_width()


@styled
def plot_collaborations(runs: Iterable[tuple[np.ndarray, np.ndarray, np.ndarray | None, str,
                                             str | Path]],
                        at: list[int] | None = None, oracle: bool = True,
                        pdf: bool = False) -> list[Path]:
    """:func:`plot_collaboration` of each run ``(W, rounds, cluster, title, path)``. Laying a
    figure out took most of the time of the quickstart's 18, so a run whose panels (clients,
    clusters, number of rounds) and colour-bar labels (their width) match a figure drawn before
    refills that figure (matrices, colour scale, titles) instead. Returns the paths written."""
    out, grids = [], {}          # (panels, colour-bar width) -> a figure laid out for them
    for W, rounds, cluster, title, path in runs:
        when = [int(rounds[k]) for k in pick_rounds(rounds)] if at is None else list(at)
        known = _known(cluster)
        oracle_of = known if oracle else None
        mats, vmax = row_panels(W, rounds, when, oracle_of)
        n_cols = len(when) + (oracle_of is not None)
        panels = (np.shape(W)[1:], n_cols, len(mats), bool(title),
                  None if known is None else tuple(np.asarray(known).tolist()))
        row = (mats, vmax, None if known is None else np.argsort(known, kind="stable"), title)
        same = [g for (p, _), g in grids.items() if p == panels]
        grid = grids.get((panels, same[-1].refill(*row))) if same else None
        fresh = grid is None             # new panels, or colour-bar labels of a new width
        if fresh:
            grid = _Grid(*grid_figure({title: (mats, vmax)}, n_cols, known, title))
        elif grid is not same[-1]:
            grid.refill(*row)
        out += save(grid.fig, path, pdf, grid_caption({title: (mats, vmax)}, known is not None))
        if fresh:
            grids[panels, grid.bar_width()] = grid
    return out


def plot_collaboration(W: np.ndarray, rounds: np.ndarray, path: str | Path, title: str = "",
                       cluster: np.ndarray | None = None, at: list[int] | None = None,
                       oracle: bool = True, pdf: bool = False) -> list[Path]:
    """Collaboration matrices of one run at the rounds ``at`` (see
    :func:`plot_collaboration_grid`)."""
    return plot_collaborations([(W, rounds, cluster, title, path)], at, oracle, pdf)
