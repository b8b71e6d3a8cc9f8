"""Robustness tables from plain results folders: :func:`robustness_table` gathers several
folders that differ in one scenario value into the table :func:`netsim.plot.plot_robustness`
draws (a sweep writes its own, ``cells.csv``, in :mod:`netsim.running.sweep`); the names of swept
parameters in axis labels and panel titles (:func:`param_label`, :func:`panel_name`)."""
from __future__ import annotations

import pandas as pd

from netsim.analysis.stats import mean_ci
from netsim.results import Results


#: names of the swept parameters of scenarios/robustness_*.yaml (others: the dotted path)
PARAM_LABELS = {
    "network.links.p": "link probability p",
    "network.links.mean_down": "mean link outage [s]",
    "network.loss.p": "message loss p",
    "network.failures.crash.share": "share of nodes crashed",
    "network.compute.stragglers.share": "share of stragglers",
    "network.latency.base": "base latency [s]",
    "network.budget.peers_per_round": "peers per round",
    "network.failures.scripted.0.t1": "partition heals at [s]",
}


def param_label(path: str) -> str:
    """The name of a swept parameter (dotted path): :data:`PARAM_LABELS`, else the path."""
    return PARAM_LABELS.get(path, path)


def panel_name(point: dict) -> str:
    """A panel's title from the values of its parameters, e.g. ``message loss p = 0.2``."""
    return ", ".join(f"{param_label(k)} = {v}" for k, v in point.items())


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
