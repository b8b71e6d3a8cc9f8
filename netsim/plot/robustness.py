"""Robustness curves: a metric vs a network parameter, one line per algorithm, 95% CI bands."""
from __future__ import annotations

from pathlib import Path

import pandas as pd

from netsim.plot.curves import _save, plt


def plot_robustness(table: pd.DataFrame, param: str, metric: str, path: Path,
                    pdf: bool = False) -> list[Path]:
    """``table`` has columns ``param``, ``algorithm``, ``mean``, ``ci_low``, ``ci_high``."""
    fig, ax = plt.subplots(figsize=(5.5, 3.6))
    numeric = pd.to_numeric(table[param], errors="coerce")
    for alg, g in table.assign(_x=numeric).groupby("algorithm", sort=False):
        g = g.sort_values("_x")
        ax.plot(g["_x"], g["mean"], marker="o", ms=3, label=alg)
        ax.fill_between(g["_x"], g["ci_low"], g["ci_high"], alpha=0.2)
    ax.set_xlabel(param)
    ax.set_ylabel(metric.replace("_", " "))
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7, ncol=2)
    return _save(fig, Path(path), pdf)
