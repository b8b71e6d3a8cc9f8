"""Series over a run's evaluations: accuracy curves (mean or worst share of clients, with
simulated time and bytes sent), the time to a target accuracy, and the collaboration graph's
metrics at every evaluation (for the figures)."""
from __future__ import annotations

import math

import numpy as np
import pandas as pd

from netsim.analysis.clocks import first_crossing
from netsim.analysis.folder import client_table, has_arrays, runs
from netsim.analysis.graphs import edge_precision_recall, edges, group_shares, relative
from netsim.analysis.metrics import asymmetry, density, reciprocity
from netsim.results import Results


def _worst_mean(values: pd.Series, share: float, higher_is_worse: bool) -> float:
    """Mean of the worst ``share`` of the values (at least one), as ``summary.json``'s bottom10
    (clients without a score, NaN, left out)."""
    v = np.sort(values.dropna().to_numpy(float))
    k = max(1, math.ceil(share * v.size))
    return float((v[-k:] if higher_is_worse else v[:k]).mean())


def accuracy_curves(res: Results, split: str = "test", worst: float | None = None) -> pd.DataFrame:
    """Mean over clients per evaluation: ``algorithm, seed, round, sim_time, bytes, value`` with
    ``value`` the accuracy (the loss for regression: ``attrs['value']`` says which) and
    ``bytes`` the bytes sent by all nodes before the evaluation (from network.csv). With
    ``worst`` (e.g. 0.1) ``value`` is the mean over the worst ``worst`` share of the clients
    (the bottom decile) instead; ``attrs['stat']`` says which."""
    m = res.metrics
    m = m[m["split"] == split]
    value = "accuracy" if m["accuracy"].notna().any() else "loss"
    stat = "mean" if worst is None else \
        (lambda v: _worst_mean(v, worst, higher_is_worse=value == "loss"))
    cur = (m.groupby(["algorithm", "seed", "round"], sort=False)
           .agg(sim_time=("sim_time", "mean"), value=(value, stat)).reset_index())
    net = res.network.sort_values(["algorithm", "seed", "round"])
    net["cum"] = net.groupby(["algorithm", "seed"])["bytes_sent"].cumsum()
    done = net.assign(round=net["round"] + 1)[["algorithm", "seed", "round", "cum"]]
    cur = cur.merge(done, on=["algorithm", "seed", "round"], how="left")
    cur["bytes"] = cur.pop("cum").fillna(0.0)
    cur.attrs["value"] = value
    cur.attrs["stat"] = "mean" if worst is None else f"worst {100 * worst:g}%"
    return cur


def time_to_target(curve: pd.DataFrame, target: float, value: str = "accuracy") -> dict:
    """First evaluation of one (algorithm, seed) curve where the mean accuracy reaches
    ``target`` (the mean loss falls to it, for regression): its simulated time and round."""
    k = first_crossing(curve["value"].to_numpy(), target, higher=value == "accuracy")
    if k is None:
        return {"time_to_target": float("nan"), "round_to_target": float("nan")}
    first = curve.iloc[k]
    return {"time_to_target": float(first["sim_time"]), "round_to_target": float(first["round"])}


def graph_series(res: Results, algorithm: str, seed: int,
                 threshold: float = 0.0, relative_to_max: bool = False) -> pd.DataFrame:
    """The collaboration graph at every evaluation: ``round, density, sparsity, reciprocity,
    asymmetry, precision, recall`` and the group shares (``relative_to_max``: the threshold is
    a fraction of each matrix's largest off-diagonal weight)."""
    c = res.arrays("collab", algorithm, seed)
    cluster, group = client_table(res, seed)
    rows = []
    for rnd, W in zip(c["rounds"], relative(c["W"]) if relative_to_max else c["W"]):
        e = edges(W, threshold)
        precision, recall = edge_precision_recall(W, cluster, threshold)
        rows.append({"round": int(rnd), "density": density(e), "sparsity": 1 - density(e),
                     "reciprocity": reciprocity(e), "asymmetry": asymmetry(e),
                     "precision": precision, "recall": recall,
                     **group_shares(W, group, threshold)})
    return pd.DataFrame(rows)


def series_by_algorithm(res: Results, threshold: float = 0.0,
                        labels: list[str] | None = None) -> dict[str, list[pd.DataFrame]]:
    """:func:`graph_series` of every seed of every algorithm (or of ``labels``) with ``collab/``
    arrays, for :func:`netsim.plot.plot_series`."""
    out: dict[str, list[pd.DataFrame]] = {}
    for alg, seed in runs(res):
        if (labels is None or alg in labels) and has_arrays(res, "collab", alg, seed):
            out.setdefault(alg, []).append(graph_series(res, alg, seed, threshold))
    return out
