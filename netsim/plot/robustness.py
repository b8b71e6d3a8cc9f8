"""Robustness curves: a metric vs a network parameter, one line per algorithm, 95% CI bands."""
from __future__ import annotations

from itertools import cycle
from pathlib import Path

import pandas as pd

from netsim.plot.curves import _save, plt

#: Okabe–Ito colour-blind-safe palette; line styles extend it past eight algorithms
PALETTE = ("#0072B2", "#E69F00", "#009E73", "#D55E00", "#CC79A7", "#56B4E9", "#F0E442", "#000000")
STYLES = ("-", "--", ":", "-.")


def line_styles(names) -> dict[str, dict]:
    """A distinct (colour, line style) per name, stable in the given order."""
    combos = cycle([(c, s) for s in STYLES for c in PALETTE])
    return {n: {"color": c, "linestyle": s} for n, (c, s) in zip(dict.fromkeys(names), combos)}


def plot_robustness(table: pd.DataFrame, param: str, metric: str, path: Path,
                    pdf: bool = False, panel: str | None = None) -> list[Path]:
    """``table`` has columns ``param``, ``algorithm``, ``mean``, ``ci_low``, ``ci_high`` (and
    ``panel`` when given: one sub-plot per value, e.g. a second swept parameter)."""
    table = table.assign(_x=pd.to_numeric(table[param], errors="coerce"))
    panels = list(dict.fromkeys(table[panel])) if panel else [None]
    styles = line_styles(table["algorithm"])
    fig, axes = plt.subplots(1, len(panels), figsize=(4.2 * len(panels) + 1.3, 3.4), sharey=True,
                             squeeze=False)
    for ax, value in zip(axes[0], panels):
        sub = table if panel is None else table[table[panel] == value]
        for alg, g in sub.groupby("algorithm", sort=False):
            g = g.sort_values("_x")
            ax.plot(g["_x"], g["mean"], marker="o", ms=3, label=alg, **styles[alg])
            ax.fill_between(g["_x"], g["ci_low"], g["ci_high"], color=styles[alg]["color"],
                            alpha=0.12, lw=0)
        ax.set_xlabel(param)
        ax.grid(alpha=0.3)
        if panel is not None:
            ax.set_title(str(value), fontsize=9)
    axes[0][0].set_ylabel(metric.replace("_", " ") + " (mean, 95% CI over seeds)")
    axes[0][-1].legend(fontsize=7, loc="center left", bbox_to_anchor=(1.02, 0.5))
    return _save(fig, Path(path), pdf)
