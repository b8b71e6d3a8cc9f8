"""Curves over seeds: accuracy vs rounds / simulated time / bytes, graph metrics over rounds, and
the accuracy-vs-client-variance scatter. Bands and error bars are 95% Student-t confidence
intervals of the mean over seeds, drawn from MIN_BAND_SEEDS seeds on; beyond MAX_SERIES series a
figure has a panel per group of the run table (netsim.plot.panels); each figure has a caption
sidecar (netsim.plot.caption).
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from netsim.analysis.stats import mean_ci
from netsim.plot.caption import Caption, seed_counts
from netsim.plot.panels import (REFERENCE_LOOKS, Curve, Panel, draw_panel, panel_grid,
                                panel_legend, shared_labels, split, split_text)
from netsim.plot.placement import place_labels
from netsim.plot.style import (COLUMN, MIN_BAND_SEEDS, PAGE, clamp, freeze_layout, log_scale,
                               looks, metric_axis, new_figure, save, styled)

X_LABELS = {"round": "round", "sim_time": "simulated time [s]",
            "bytes": "bytes sent by all nodes [MB]"}


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


def accuracy_series(curves: pd.DataFrame, x: str, algorithms, scale: float) -> dict[str, Curve]:
    """Per algorithm of ``algorithms``: the mean and 95% interval over seeds at each evaluation
    (times ``scale``) at x the round, or the mean over seeds of the simulated time [s] or of the
    bytes sent [MB]; its seeds are the fewest of any evaluation."""
    out = {}
    for alg in algorithms:
        b = seed_bands(curves[curves["algorithm"] == alg], ["round"], "value",
                       ("sim_time", "bytes"))
        if not b.empty:
            xs = b[x] / 1e6 if x == "bytes" else b[x]
            out[alg] = Curve(xs.to_numpy(float),
                             *(b[k].to_numpy(float) * scale for k in ("mean", "lo", "hi")),
                             int(b["n"].min()))
    return out


def draw_accuracy(ax, curves: pd.DataFrame, x: str = "round", order: list[str] | None = None,
                  names: dict[str, str] | None = None, panel: Panel | None = None,
                  series: dict[str, Curve] | None = None) -> list[str]:
    """Draw the curves of :func:`plot_accuracy` on ``ax`` (for multi-panel figures): ``panel``
    (default: every algorithm of ``order``) with :func:`netsim.plot.panels.draw_panel` (its
    ``series``: :func:`accuracy_series` of ``curves``, computed once for several panels), a log
    x axis where simulated times or bytes span more than LOG_SPAN; the y axis kept within the
    metric's limits when ``panel`` is None (else by the caller, once every panel sharing it is
    drawn). Returns the caption notes."""
    order = order or list(dict.fromkeys(curves["algorithm"]))
    shown = panel or Panel("", tuple(order))
    scale, label, limits = metric_axis(curves.attrs.get("value", "accuracy"))
    log = x != "round" and log_scale(curves.groupby(["algorithm", "round"])[x].mean())
    series = series or accuracy_series(curves, x, (*shown.references, *shown.series), scale)
    notes = draw_panel(ax, series, shown, looks(order), names or {}, limits, log)
    if log:
        ax.set_xscale("log")
    ax.set_xlabel(X_LABELS[x])
    ax.set_ylabel(f"{curves.attrs.get('stat', 'mean')} test {label}")
    if panel is None:
        clamp(ax, limits)
    return notes


@styled
def plot_accuracy(curves: pd.DataFrame, path: str | Path, x: str = "round", pdf: bool = False,
                  order: list[str] | None = None, names: dict[str, str] | None = None,
                  registered: dict[str, str] | None = None) -> list[Path]:
    """Mean client test accuracy (loss for regression) vs ``x`` (``round``, ``sim_time`` or
    ``bytes``), one line per algorithm, from :func:`netsim.analysis.series.accuracy_curves`;
    x of a point is the mean over seeds of its simulated time / cumulative bytes; 95% CI bands
    over seeds (from MIN_BAND_SEEDS seeds). ``names`` maps algorithms to legend labels (e.g.
    ``sgp (diverged)``); with ``registered`` (label -> registered algorithm name), beyond
    MAX_SERIES algorithms a panel per group of the run table. Writes a caption sidecar."""
    order = order or list(dict.fromkeys(curves["algorithm"]))
    scale, label, limits = metric_axis(curves.attrs.get("value", "accuracy"))
    panels = split(order, registered)
    if len(panels) == 1:
        fig, ax = new_figure(COLUMN, 2.9)
        notes = draw_accuracy(ax, curves, x, order, names)
        _legend(fig, ax, len(order))
        axes = [ax]
    else:
        fig, axes = panel_grid(len(panels))
        series = accuracy_series(curves, x, order, scale)
        notes = [n for ax, p in zip(axes, panels)
                 for n in draw_accuracy(ax, curves, x, order, names, p, series)]
        for ax, p in zip(axes, panels):
            ax.set_title(p.title)
            panel_legend(ax)
        clamp(axes[0], limits)
        shared_labels(fig, axes)
    log = axes[0].get_xscale() == "log"
    what = (f"{curves.attrs.get('stat', 'mean')} test {label} over clients vs {X_LABELS[x]}"
            + (" on a log axis (the evaluation at 0 left out)" if log else "")
            + ", one line per algorithm: the mean over seeds"
            + (", x the mean over seeds too" if x != "round" else "") + split_text(panels))
    seeds = curves.groupby("algorithm", sort=False)["seed"].nunique()
    return save(fig, path, pdf, Caption(what, seed_counts(seeds.to_dict(), curves["seed"].unique()),
                                        notes=notes))


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


def scatter_points(final: pd.DataFrame, scale: float, limits) -> dict[str, tuple]:
    """Per algorithm: ``(mean x, x interval, mean y, y interval, seeds)`` of the mean accuracy
    and of the variance across clients over seeds (a variance never below 0, a mean accuracy
    within ``limits``)."""
    out = {}
    for alg, g in final.groupby("algorithm", sort=False):
        mx, lx, hx = (v * scale for v in mean_ci(g["mean"]))
        my, ly, hy = (v * scale ** 2 for v in mean_ci(g["variance"]))
        if limits is not None:
            lx, hx = max(lx, limits[0]), min(hx, limits[1])
        out[alg] = (mx, (lx, hx), my, (max(ly, 0.0), hy), len(g))
    return out


def _point(ax, p: tuple, label: str, **look):
    """One algorithm's point, with 95% error bars from MIN_BAND_SEEDS seeds; returns its
    artist."""
    mx, (lx, hx), my, (ly, hy), seeds = p
    if seeds >= MIN_BAND_SEEDS:
        return ax.errorbar([mx], [my], xerr=[[mx - lx], [hx - mx]], yerr=[[my - ly], [hy - my]],
                           capsize=2, label=label, **look)
    return ax.plot([mx], [my], ls="", label=label, **look)[0]


@styled
def plot_scatter(final: pd.DataFrame, path: str | Path, pdf: bool = False,
                 order: list[str] | None = None,
                 registered: dict[str, str] | None = None) -> list[Path]:
    """Mean accuracy vs variance of the accuracy across clients, one point per algorithm with
    95% CI error bars over seeds (from MIN_BAND_SEEDS seeds; DPFL Fig. 1): lower right is
    better; a log y axis where the variances span more than LOG_SPAN. Points are named by labels
    placed clear of each other (netsim.plot.placement); with ``registered`` (label -> registered
    name), beyond MAX_SERIES algorithms a panel per group of the run table with Local and Oracle
    as grey hollow points (named in a legend on top). Writes a caption sidecar."""
    order = order or list(dict.fromkeys(final["algorithm"]))
    scale, label, limits = metric_axis(final.attrs.get("value", "accuracy"))
    look = looks(order)
    points = scatter_points(final, scale, limits)
    panels = split(order, registered)
    if len(panels) == 1:
        fig, ax = new_figure(COLUMN, 2.6)
        axes = [ax]
    else:
        fig, axes = panel_grid(len(panels), height=1.7, ncols=3)
    refs = {}                                           # reference -> its first artist
    for ax, panel in zip(axes, panels):
        for k, ref in enumerate(a for a in panel.references if a in points):
            refs.setdefault(ref, _point(ax, points[ref], ref, marker=look[ref].marker, mfc="none",
                                        color=REFERENCE_LOOKS[k % len(REFERENCE_LOOKS)][0]))
        for alg in (a for a in panel.series if a in points):
            _point(ax, points[alg], alg, color=look[alg].colour, marker=look[alg].marker)
        ax.set_title(panel.title)
    unit = " [%²]" if scale != 1 else ""
    axes[0].set_xlabel(f"mean test {label}")
    axes[0].set_ylabel(f"variance across clients{unit}")
    if log_scale([v for p in points.values() for v in (p[2], *p[3])]):
        axes[0].set_yscale("log")
    if limits is not None:
        lo, hi = axes[0].get_xlim()
        axes[0].set_xlim(max(lo, limits[0]), min(hi, limits[1]))
    if len(axes) > 1:
        shared_labels(fig, axes)
    if refs:
        fig.legend(list(refs.values()), list(refs), loc="outside upper center", ncol=len(refs))
    freeze_layout(fig)                                  # labels are placed in the final axes
    for ax, panel in zip(axes, panels):
        shown = [a for a in panel.series if a in points]
        place_labels(ax, [(points[a][0], points[a][2]) for a in shown], shown,
                     [look[a].colour for a in shown],
                     avoid=[(points[a][0], points[a][2]) for a in panel.references if a in points])
    what = (f"mean test {label} over clients vs the variance of the accuracy across clients, "
            "one point per algorithm: the mean over seeds at the last evaluation, lower right "
            "is better" + split_text(panels).replace("reference curves", "hollow points"))
    seeds = final.groupby("algorithm", sort=False)["seed"].nunique()
    return save(fig, path, pdf, Caption(what, seed_counts(seeds.to_dict(),
                                                          final["seed"].unique())))


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


def _series_curves(frames: list[pd.DataFrame], col: str, scale: float) -> Curve:
    """One algorithm's graph metric ``col`` over rounds: mean and 95% interval over its seeds'
    frames."""
    b = seed_bands(pd.concat([f.assign(seed=k) for k, f in enumerate(frames)]), ["round"], col)
    return Curve(b["round"].to_numpy(float), *(b[k].to_numpy(float) * scale
                                               for k in ("mean", "lo", "hi")), len(frames))


@styled
def plot_series(series: dict[str, list[pd.DataFrame]], columns: list[str], path: str | Path,
                pdf: bool = False, registered: dict[str, str] | None = None) -> list[Path]:
    """Graph metrics over rounds (one panel per column of
    :func:`netsim.analysis.series.graph_series`), one line per algorithm, 95% band over seeds
    (from MIN_BAND_SEEDS seeds); with ``registered`` (label -> registered name), beyond
    MAX_SERIES algorithms a row of panels per group of the run table (a column per metric) with
    Local and Oracle as grey references. Writes a caption sidecar."""
    order = list(series)
    look = looks(order)
    panels = split(order, registered)
    if len(panels) == 1:
        fig, axes = new_figure(COLUMN, 0.3 + 1.5 * len(columns), len(columns), 1, sharex=True,
                               squeeze=False)
        cells = [(ax, col, panels[0]) for ax, col in zip(axes[:, 0], columns)]
    else:
        fig, axes = new_figure(PAGE if len(columns) > 1 else COLUMN + 1.2,
                               0.4 + 1.1 * len(panels), len(panels), len(columns), sharex=True,
                               sharey="col", squeeze=False)
        cells = [(ax, col, p) for row, p in zip(axes, panels) for ax, col in zip(row, columns)]
    curves = {}
    notes = []
    for ax, col, panel in cells:
        ylabel, scale = _series_label(col)
        if col not in curves:
            curves[col] = {alg: _series_curves(frames, col, scale)
                           for alg, frames in series.items()}
        notes += draw_panel(ax, curves[col], panel, look, {}, (0.0, 100.0))
        ax.set_ylabel(ylabel.replace(" links", "\nlinks"))      # a share's label: 2 lines
        ax.set_title(panel.title)
    for ax, _, _ in cells:                  # once every panel sharing its y axis is drawn
        clamp(ax, (0.0, 100.0))
    for ax in axes[-1]:
        ax.set_xlabel("round")
    if len(panels) == 1:
        _legend(fig, axes[0, 0], len(series))
    else:
        for row in axes:
            panel_legend(row[-1])
    what = (", ".join(_series_label(c)[0] for c in columns) + " of the collaboration graph "
            "(the weights above 0) at each evaluation, one line per algorithm: the mean over "
            "seeds" + split_text(panels))
    return save(fig, path, pdf, Caption(what, seed_counts({a: len(f) for a, f in series.items()}),
                                        notes=notes))
