"""Robustness curves: a metric vs a network parameter, one line per algorithm, 95% CI bands."""
from __future__ import annotations

from pathlib import Path

import pandas as pd

from netsim.plot.style import COLUMN, PAGE, colours, new_figure, save, styled


@styled
def plot_robustness(table: pd.DataFrame, param: str, metric: str, path: str | Path,
                    pdf: bool = False, panel: str | None = None) -> list[Path]:
    """``table`` has columns ``param`` (the x values, e.g. ``network.links.p``), ``algorithm``,
    ``mean``, ``ci_low``, ``ci_high`` (and ``panel`` when given: one sub-plot per value, e.g. a
    second swept parameter)."""
    table = table.assign(_x=pd.to_numeric(table[param], errors="coerce"))
    panels = list(dict.fromkeys(table[panel])) if panel else [None]
    look = colours(dict.fromkeys(table["algorithm"]))
    fig, axes = new_figure(min(PAGE, COLUMN * len(panels)), 2.6, 1, len(panels), sharey=True,
                           squeeze=False)
    for ax, value in zip(axes[0], panels):
        sub = table if panel is None else table[table[panel] == value]
        for alg, g in sub.groupby("algorithm", sort=False):
            g = g.sort_values("_x")
            colour, ls = look[alg]
            ax.plot(g["_x"], g["mean"], marker="o", color=colour, ls=ls, label=alg)
            ax.fill_between(g["_x"], g["ci_low"], g["ci_high"], color=colour, alpha=0.15, lw=0)
        ax.set_xlabel(param)
        if panel is not None:
            ax.set_title(str(value))
    axes[0, 0].set_ylabel(metric.replace("_", " ") + " (mean, 95% CI)")
    handles, labels = axes[0, 0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="outside lower center", ncol=min(len(labels), 4))
    return save(fig, path, pdf)
