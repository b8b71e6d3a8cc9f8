"""Robustness curves: a metric vs a network parameter, one line per algorithm, 95% CI bands."""
from __future__ import annotations

from pathlib import Path

import pandas as pd

from netsim.plot.curves import band
from netsim.plot.style import COLUMN, PAGE, clamp, looks, metric_axis, new_figure, save, styled

#: axis labels of the swept parameters of scenarios/robustness_*.yaml (others: the dotted path)
PARAM_LABELS = {
    "network.links.p": "link probability p",
    "network.links.mean_down": "mean link outage [s]",
    "network.loss.p": "message loss probability",
    "network.failures.crash.share": "share of nodes crashed",
    "network.compute.stragglers.share": "share of stragglers",
    "network.latency.base": "base latency [s]",
    "network.budget.peers_per_round": "peers per round",
    "network.failures.scripted.0.t1": "partition heals at [s]",
}


@styled
def plot_robustness(table: pd.DataFrame, param: str, metric: str, path: str | Path,
                    pdf: bool = False, panel: str | None = None) -> list[Path]:
    """``table`` has columns ``param`` (the x values, e.g. ``network.links.p``), ``algorithm``,
    ``mean``, ``ci_low``, ``ci_high`` of ``metric`` as stored (accuracies as fractions, drawn in
    percent), optionally ``diverged`` (seeds that diverged: the algorithm's legend label says so)
    and ``panel`` when given (one sub-plot per value, e.g. a second swept parameter)."""
    table = table.assign(_x=pd.to_numeric(table[param], errors="coerce"))
    scale, label, limits = metric_axis(metric)
    panels = list(dict.fromkeys(table[panel])) if panel else [None]
    look = looks(dict.fromkeys(table["algorithm"]))
    diverged = (set(table.loc[table["diverged"] > 0, "algorithm"]) if "diverged" in table
                else set())
    fig, axes = new_figure(min(PAGE, COLUMN * len(panels)), 2.6, 1, len(panels), sharey=True,
                           squeeze=False)
    for ax, value in zip(axes[0], panels):
        sub = table if panel is None else table[table[panel] == value]
        for alg, g in sub.groupby("algorithm", sort=False):
            g = g.sort_values("_x")
            name = f"{alg} (diverged)" if alg in diverged else alg
            ax.plot(g["_x"], g["mean"] * scale, label=name, **look[alg].line())
            band(ax, g["_x"], g["ci_low"] * scale, g["ci_high"] * scale, look[alg].colour,
                 limits, alpha=0.15)
        ax.set_xlabel(PARAM_LABELS.get(param, param))
        if panel is not None:
            ax.set_title(str(value))
    axes[0, 0].set_ylabel(f"{label}, mean and 95% CI")
    clamp(axes[0, 0], limits)
    handles, labels = axes[0, 0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="outside lower center", ncol=min(len(labels), 4))
    return save(fig, path, pdf)
