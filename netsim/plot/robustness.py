"""Robustness curves: a metric vs a network parameter, one line per algorithm, 95% CI bands
(from MIN_BAND_SEEDS seeds), a panel per value of a second parameter and, beyond MAX_SERIES
algorithms, a row of panels per group of the run table (netsim.plot.panels)."""
from __future__ import annotations

from pathlib import Path

import matplotlib
import pandas as pd

from netsim.analysis.sweep_table import param_label
from netsim.plot.caption import Caption, seed_counts
from netsim.plot.panels import Curve, draw_panel, panel_legend, split, split_text
from netsim.plot.style import (COLUMN, MIN_BAND_SEEDS, PAGE, clamp, log_scale, looks,
                               metric_axis, new_figure, save, styled)


def _curves(table: pd.DataFrame, scale: float) -> dict[str, Curve]:
    """Each algorithm's curve over the x values ``_x`` of ``table``; its seeds the fewest of any
    cell (MIN_BAND_SEEDS where the table has no ``n_seeds``: every band drawn)."""
    out = {}
    for alg, g in table.groupby("algorithm", sort=False):
        g = g.sort_values("_x")
        seeds = int(g["n_seeds"].min()) if "n_seeds" in g else MIN_BAND_SEEDS
        out[alg] = Curve(g["_x"].to_numpy(float), *(g[k].to_numpy(float) * scale
                                                    for k in ("mean", "ci_low", "ci_high")), seeds)
    return out


@styled
def plot_robustness(table: pd.DataFrame, param: str, metric: str, path: str | Path,
                    pdf: bool = False, panel: str | None = None,
                    registered: dict[str, str] | None = None) -> list[Path]:
    """``table`` has columns ``param`` (the x values, e.g. ``network.links.p``), ``algorithm``,
    ``mean``, ``ci_low``, ``ci_high`` of ``metric`` as stored (accuracies as fractions, drawn in
    percent), optionally ``n_seeds`` (bands from MIN_BAND_SEEDS seeds; without it every band is
    drawn), ``diverged`` (seeds that diverged: the algorithm's legend label says so) and
    ``panel`` when given (one sub-plot per value, titled with it, e.g. ``message loss p =
    0.2``). With ``registered`` (label -> registered name), beyond MAX_SERIES algorithms a row
    of panels per group of the run table with Local and Oracle as grey references. Log axes for
    x, and y of a metric that is no percentage, where the values span more than LOG_SPAN.
    Writes a caption sidecar."""
    table = table.assign(_x=pd.to_numeric(table[param], errors="coerce"))
    scale, label, limits = metric_axis(metric)
    columns = list(dict.fromkeys(table[panel])) if panel else [None]
    order = list(dict.fromkeys(table["algorithm"]))
    rows = split(order, registered)
    diverged = (set(table.loc[table["diverged"] > 0, "algorithm"]) if "diverged" in table
                else set())
    names = {a: f"{a} (diverged)" if a in diverged else a for a in order}
    fig, axes = new_figure(min(PAGE, COLUMN * len(columns) + 1.2 * (len(rows) > 1)),
                           2.6 if len(rows) == 1 else 0.5 + 1.6 * len(rows), len(rows),
                           len(columns), sharex=True, sharey=True, squeeze=False)
    log_x = log_scale(table["_x"])
    notes = []
    for row, group in zip(axes, rows):
        for ax, value in zip(row, columns):
            sub = table if panel is None else table[table[panel] == value]
            notes += draw_panel(ax, _curves(sub, scale), group, looks(order), names, limits,
                                log_x, band_alpha=0.15)
            ax.set_title(", ".join(t for t in (group.title, "" if panel is None else str(value))
                                   if t))
    if log_x:
        axes[0, 0].set_xscale("log")
    if limits is None and log_scale(table["mean"] * scale):
        axes[0, 0].set_yscale("log")
    for ax in axes[-1]:
        ax.set_xlabel(param_label(param))
    sep = ", " if len(label) < 24 else "\n"          # a long label: the interval below it
    clamp(axes[0, 0], limits)
    if len(rows) == 1:
        axes[0, 0].set_ylabel(f"{label}{sep}mean and 95% CI")
        handles, labels = axes[0, 0].get_legend_handles_labels()
        fig.legend(handles, labels, loc="outside lower center", ncol=min(len(labels), 4))
    else:
        fig.supylabel(f"{label}, mean and 95% CI", fontsize=matplotlib.rcParams["axes.labelsize"])
        for row in axes:
            panel_legend(row[-1])
    what = (f"{label} at the end of each run vs {param_label(param)}"
            + (" (log axis)" if log_x else "") + ", one line per algorithm: the mean over seeds"
            + ("; a panel per value of the other swept parameters" if panel else "")
            + split_text(rows))
    seeds = (table.groupby("algorithm", sort=False)["n_seeds"].min().to_dict()
             if "n_seeds" in table else {})
    return save(fig, path, pdf, Caption(what, seed_counts(seeds) if seeds else "as in the table",
                                        notes=notes))
