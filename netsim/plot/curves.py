"""Curves over seeds: accuracy vs rounds / simulated time / bytes, graph metrics over rounds, and
the accuracy-vs-client-variance scatter. Bands and error bars are 95% Student-t confidence
intervals of the mean over seeds (no band with one seed).
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from netsim.analysis.stats import mean_ci
from netsim.plot.style import COLUMN, clamp, looks, metric_axis, new_figure, save, styled

X_LABELS = {"round": "round", "sim_time": "simulated time [s]",
            "bytes": "bytes sent by all nodes [MB]"}
MAX_BANDS = 8          # confidence bands drawn up to this many series (beyond: lines only)


def seed_bands(df: pd.DataFrame, keys: list[str], value: str,
               extra: tuple[str, ...] = ()) -> pd.DataFrame:
    """Per ``keys`` group (one row per seed inside): ``mean``, ``lo``, ``hi`` of ``value``,
    ``n`` seeds, and the mean of each ``extra`` column."""
    rows = []
    for key, g in df.groupby(keys, sort=True):
        mean, lo, hi = mean_ci(g[value].to_numpy(float))
        key = key if isinstance(key, tuple) else (key,)
        rows.append({**dict(zip(keys, key)), "mean": mean, "lo": lo, "hi": hi, "n": len(g),
                     **{c: float(g[c].mean()) for c in extra}})
    return pd.DataFrame(rows)


def _legend(fig, ax, n: int) -> None:
    if ax.get_legend_handles_labels()[0]:
        fig.legend(*ax.get_legend_handles_labels(), loc="outside lower center",
                   ncol=min(n, 4))


def band(ax, x, lo, hi, colour: str, limits: tuple[float, float] | None,
         alpha: float = 0.2) -> None:
    """A confidence band from ``lo`` to ``hi``, clipped to the metric's ``limits``."""
    if limits is not None:
        lo, hi = np.clip(lo, *limits), np.clip(hi, *limits)
    ax.fill_between(x, lo, hi, color=colour, alpha=alpha, lw=0)


def draw_accuracy(ax, curves: pd.DataFrame, x: str = "round", order: list[str] | None = None,
                  names: dict[str, str] | None = None) -> None:
    """Draw the curves of :func:`plot_accuracy` on ``ax`` (for multi-panel figures)."""
    order = order or list(dict.fromkeys(curves["algorithm"]))
    scale, label, limits = metric_axis(curves.attrs.get("value", "accuracy"))
    look = looks(order)
    for alg in order:
        b = seed_bands(curves[curves["algorithm"] == alg], ["round"], "value",
                       ("sim_time", "bytes"))
        if b.empty:
            continue
        xs = b[x] / 1e6 if x == "bytes" else b[x]
        ax.plot(xs, b["mean"] * scale, label=(names or {}).get(alg, alg), **look[alg].line(len(b)))
        if b["n"].max() > 1 and len(order) <= MAX_BANDS:
            band(ax, xs, b["lo"] * scale, b["hi"] * scale, look[alg].colour, limits)
    ax.set_xlabel(X_LABELS[x])
    ax.set_ylabel(f"{curves.attrs.get('stat', 'mean')} test {label}")
    clamp(ax, limits)


@styled
def plot_accuracy(curves: pd.DataFrame, path: str | Path, x: str = "round", pdf: bool = False,
                  order: list[str] | None = None,
                  names: dict[str, str] | None = None) -> list[Path]:
    """Mean client test accuracy (loss for regression) vs ``x`` (``round``, ``sim_time`` or
    ``bytes``), one line per algorithm, from :func:`netsim.analysis.series.accuracy_curves`;
    x of a point is the mean over seeds of its simulated time / cumulative bytes; 95% CI bands
    over seeds up to MAX_BANDS algorithms. ``names`` maps algorithms to legend labels (e.g.
    ``sgp (diverged)``)."""
    order = order or list(dict.fromkeys(curves["algorithm"]))
    fig, ax = new_figure(COLUMN, 2.9)
    draw_accuracy(ax, curves, x, order, names)
    _legend(fig, ax, len(order))
    return save(fig, path, pdf)


def final_client_stats(metrics: pd.DataFrame, split: str = "test") -> pd.DataFrame:
    """At each (algorithm, seed)'s last evaluation: ``mean`` and ``variance`` (ddof 0, as in
    summary.json) over clients of the accuracy (loss for regression); ``attrs['value']``."""
    m = metrics[metrics["split"] == split]
    value = "accuracy" if m["accuracy"].notna().any() else "loss"
    last = m.groupby(["algorithm", "seed"], sort=False)["round"].transform("max")
    out = (m[m["round"] == last].groupby(["algorithm", "seed"], sort=False)[value]
           .agg(mean="mean", variance=lambda v: float(np.var(v))).reset_index())
    out.attrs["value"] = value
    return out


@styled
def plot_scatter(final: pd.DataFrame, path: str | Path, pdf: bool = False,
                 order: list[str] | None = None) -> list[Path]:
    """Mean accuracy vs variance of the accuracy across clients, one point per algorithm with
    95% CI error bars over seeds (DPFL Fig. 1): lower right is better."""
    order = order or list(dict.fromkeys(final["algorithm"]))
    scale, label, limits = metric_axis(final.attrs.get("value", "accuracy"))
    look = looks(order)
    fig, ax = new_figure(COLUMN, 2.6)
    for alg in order:
        g = final[final["algorithm"] == alg]
        if g.empty:
            continue
        mx, lx, hx = (v * scale for v in mean_ci(g["mean"]))
        my, ly, hy = (v * scale ** 2 for v in mean_ci(g["variance"]))
        ly = max(ly, 0.0)                                # a variance is never negative
        if limits is not None:                           # a mean accuracy stays within [0, 100] %
            lx, hx = max(lx, limits[0]), min(hx, limits[1])
        ax.errorbar([mx], [my], xerr=[[mx - lx], [hx - mx]], yerr=[[my - ly], [hy - my]],
                    fmt=look[alg].marker, color=look[alg].colour, capsize=2, label=alg)
        ax.annotate(alg, (mx, my), xytext=(3, 3), textcoords="offset points", fontsize=6)
    unit = " [%²]" if scale != 1 else ""
    ax.set_xlabel(f"mean test {label}")
    ax.set_ylabel(f"variance across clients{unit}")
    if limits is not None:
        lo, hi = ax.get_xlim()
        ax.set_xlim(max(lo, limits[0]), min(hi, limits[1]))
    return save(fig, path, pdf)


SERIES_LABELS = {"asymmetry": ("asymmetry [%]", 1.0), "sparsity": ("sparsity [%]", 100.0),
                 "density": ("density [%]", 100.0), "reciprocity": ("reciprocity [%]", 100.0),
                 "precision": ("edge precision [%]", 100.0), "recall": ("edge recall [%]", 100.0)}


def _series_label(col: str) -> tuple[str, float]:
    """Axis label and scale of a graph_series column (every one is a percentage; a share
    ``share_a_uses_b`` is the share of group a's links that come from group b)."""
    if col.startswith("share_"):
        a, b = col[len("share_"):].split("_uses_")
        return f"{a} \u2192 {b} links [%]", 100.0
    return SERIES_LABELS[col]


@styled
def plot_series(series: dict[str, list[pd.DataFrame]], columns: list[str], path: str | Path,
                pdf: bool = False) -> list[Path]:
    """Graph metrics over rounds (one panel per column of
    :func:`netsim.analysis.series.graph_series`), one line per algorithm, band over seeds."""
    look = looks(list(series))
    fig, axes = new_figure(COLUMN, 0.3 + 1.5 * len(columns), len(columns), 1, sharex=True,
                           squeeze=False)
    for ax, col in zip(axes[:, 0], columns):
        ylabel, scale = _series_label(col)
        for alg, frames in series.items():
            df = pd.concat([f.assign(seed=k) for k, f in enumerate(frames)])
            b = seed_bands(df, ["round"], col)
            ax.plot(b["round"], b["mean"] * scale, label=alg, **look[alg].line(len(b)))
            if b["n"].max() > 1 and len(series) <= MAX_BANDS:
                band(ax, b["round"], b["lo"] * scale, b["hi"] * scale, look[alg].colour,
                     (0.0, 100.0))
        ax.set_ylabel(ylabel)
        clamp(ax, (0.0, 100.0))
    axes[-1, 0].set_xlabel("round")
    _legend(fig, axes[0, 0], len(series))
    return save(fig, path, pdf)
