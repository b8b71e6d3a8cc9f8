"""The analyses of a results folder as one dict (``netsim analyze``).

Per algorithm and seed it combines the final collaboration graph (``collab/``: metrics,
communities, oracle precision/recall, group shares, stability over evaluations), the realised
communication graph (``links/``: joint connectivity), the communication cost (``accounting/``,
``network.csv``) and the accuracy curve (``metrics.csv``: time to a target accuracy); then the
mean and std over seeds per algorithm.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from netsim.analysis.communities import community_analysis
from netsim.analysis.folder import as_results, client_table, has_arrays, runs
from netsim.analysis.graphs import (edge_precision_recall, edges, group_shares, outer_analysis,
                                    relative)
from netsim.analysis.metrics import degree_distribution, graph_metrics
from netsim.analysis.recovery import outer_affinity, recovery_scores
from netsim.analysis.series import accuracy_curves, time_to_target
from netsim.analysis.temporal import link_metrics, stabilisation_round, stability
from netsim.errors import ConfigError
from netsim.results import Results


def cost(res: Results, algorithm: str, seed: int, n_clients: int) -> dict[str, float]:
    """Communication cost per client: bytes sent (accounting/, clients only; the server's
    separately), peers accepted per round, messages sent per client (network.csv total / N)."""
    net = res.network
    net = net[(net["algorithm"] == algorithm) & (net["seed"] == seed)]
    out = {"messages_per_client": float(net["messages_sent"].sum() / n_clients)}
    if has_arrays(res, "accounting", algorithm, seed):
        acc = res.arrays("accounting", algorithm, seed)
        sent = acc["bytes_sent"].sum(axis=0)
        out.update(bytes_per_client=float(sent[:n_clients].mean()),
                   bytes_per_client_max=float(sent[:n_clients].max()),
                   peers_per_round=float(acc["peers"][:, :n_clients].mean()))
        if sent.size > n_clients:
            out["server_bytes"] = float(sent[n_clients:].sum())
    else:
        out["bytes_per_client"] = float(net["bytes_sent"].sum() / n_clients)
    return out


def collab_analysis(W: np.ndarray, rounds: np.ndarray, cluster: np.ndarray, group: np.ndarray,
                    threshold: float = 0.0, tol: float = 0.9, method: str = "louvain",
                    seed: int = 0) -> dict:
    """Every analysis of a sequence of collaboration matrices ``W [E, N, N]``: the final graph's
    metrics, communities vs ``cluster``, oracle precision/recall and group shares; the mean
    Jaccard index of consecutive edge sets and the stabilisation round."""
    final = W[-1]
    precision, recall = edge_precision_recall(final, cluster, threshold)
    jac = stability(W, threshold)
    stable = stabilisation_round(W, rounds, threshold, tol)
    return {**graph_metrics(final, threshold),
            **community_analysis(final, cluster, threshold, method, seed),
            "precision": precision, "recall": recall, **group_shares(final, group, threshold),
            "jaccard_mean": float(jac.mean()) if jac.size else float("nan"),
            "stable_from": float("nan") if stable is None else float(stable)}


def analyze_run(res: Results, algorithm: str, seed: int, threshold: float = 0.0,
                target: float | None = None, tol: float = 0.9, method: str = "louvain",
                curves: pd.DataFrame | None = None, relative_to_max: bool = False) -> dict:
    """All analyses of one (algorithm, seed) run; ``degrees`` holds the final in/out-degree
    histograms. ``relative_to_max``: the threshold is a fraction of each collaboration matrix's
    largest off-diagonal weight (``netsim analyze --relative``). Louvain is seeded with the run's
    seed; ``mass_precision`` and ``community_ari`` (and their ``outer_`` forms on the mixture's
    ``pi pi^T``) take the final matrix as learned, whatever the threshold."""
    cluster, group = client_table(res, seed)
    curves = accuracy_curves(res) if curves is None else curves
    curve = curves[(curves["algorithm"] == algorithm) & (curves["seed"] == seed)]
    value = curves.attrs["value"]
    out: dict = {f"final_{value}": float(curve["value"].iloc[-1]),
                 "sim_time": float(curve["sim_time"].iloc[-1])}
    if target is not None:
        out.update(time_to_target(curve, target, value))
    if has_arrays(res, "collab", algorithm, seed):
        c = res.arrays("collab", algorithm, seed)
        W = relative(c["W"]) if relative_to_max else c["W"]
        out.update(collab_analysis(W, c["rounds"], cluster, group, threshold, tol, method, seed))
        out.update(recovery_scores(c["W"][-1], cluster, seed))
        out["degrees"] = degree_distribution(edges(W[-1], threshold))
    if has_arrays(res, "outer", algorithm, seed):
        weights = res.arrays("outer", algorithm, seed)["weights"]
        out.update(outer_analysis(weights, cluster))
        out.update({f"outer_{k}": v for k, v in
                    recovery_scores(outer_affinity(weights[-1]), cluster, seed).items()})
    if has_arrays(res, "links", algorithm, seed):
        out.update(link_metrics(res.arrays("links", algorithm, seed)["delivered"]))
    out.update(cost(res, algorithm, seed, len(cluster)))
    return out


def analyze(results: Results | str | Path, threshold: float = 0.0, target: float | None = None,
            tol: float = 0.9, method: str = "louvain", relative_to_max: bool = False) -> dict:
    """Analyse every (algorithm, seed) of a results folder; per algorithm ``mean`` and ``std``
    over seeds of every scalar, ``per_seed`` values and ``target_reached`` (share of seeds; an
    accuracy ``target`` above 1 is refused). ``relative_to_max``: an edge of a collaboration
    matrix is a weight above ``threshold`` times its largest off-diagonal weight (threshold
    0.5: the cluster recovery of the run table)."""
    res = as_results(results)
    curves = accuracy_curves(res)
    if target is not None and curves.attrs["value"] == "accuracy" and not 0 <= target <= 1:
        raise ConfigError("target", target, "a mean test accuracy in [0, 1]")
    out: dict = {"results": str(res.dir), "threshold": threshold,
                 "relative": relative_to_max, "target": target,
                 "stability_tol": tol, "community_method": method, "algorithms": {}}
    per_alg: dict[str, dict[int, dict]] = {}
    for alg, seed in runs(res):
        per_alg.setdefault(alg, {})[seed] = analyze_run(res, alg, seed, threshold, target, tol,
                                                        method, curves, relative_to_max)
    for alg, seeds in per_alg.items():
        keys = [k for k in dict.fromkeys(k for s in seeds.values() for k in s) if k != "degrees"]
        vals = {k: np.array([_num(s.get(k)) for s in seeds.values()]) for k in keys}
        with np.errstate(invalid="ignore"):             # std of inf values is nan
            entry = {"seeds": list(seeds), "mean": {k: float(v.mean()) for k, v in vals.items()},
                     "std": {k: float(v.std()) for k, v in vals.items()}, "per_seed": seeds}
        if target is not None:
            entry["target_reached"] = float(np.isfinite(vals["time_to_target"]).mean())
        out["algorithms"][alg] = entry
    return out


def _num(v) -> float:
    return float("nan") if v is None else float(v)
