"""Robustness tables from plain results folders: :func:`robustness_table` gathers several
folders that differ in one scenario value into the table :func:`netsim.plot.plot_robustness`
draws (a sweep writes its own, ``cells.csv``, in :mod:`netsim.sweep`)."""
from __future__ import annotations

import pandas as pd

from netsim.analysis.stats import mean_ci
from netsim.results import Results


def config_value(config: dict, path: str):
    """The value at a dotted ``path`` of a resolved config (list items by index)."""
    node = config
    for key in path.split("."):
        node = node[int(key)] if isinstance(node, list) else node[key]
    return node


def robustness_table(folders, param: str, metric: str = "mean_accuracy") -> pd.DataFrame:
    """Tidy table for :func:`netsim.plot.plot_robustness` from several results folders that
    differ in one scenario value: columns ``param`` (named by the dotted path, read from each
    config.yaml), ``algorithm``, ``mean``, ``ci_low``, ``ci_high`` (95% Student-t over the seeds
    of summary.json's ``per_seed`` values of ``metric``; a missing one counts as nan),
    ``n_seeds``, ``diverged`` (seeds)."""
    rows = []
    for folder in folders:
        res = folder if isinstance(folder, Results) else Results(folder)
        x = config_value(res.config, param)
        for alg, s in res.summary["algorithms"].items():
            vals = [v.get(metric) for v in s["per_seed"].values()]
            mean, lo, hi = mean_ci(vals)
            rows.append({param: x, "algorithm": alg, "mean": mean, "ci_low": lo, "ci_high": hi,
                         "n_seeds": len(vals), "diverged": len(s.get("diverged", []))})
    return pd.DataFrame(rows)
