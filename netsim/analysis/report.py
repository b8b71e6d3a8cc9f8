"""Analyse a results folder (the results contract only): one dict, a table, analysis.json and
analysis.csv, GraphML files.

Per algorithm and seed it combines the final collaboration graph (``collab/``: metrics,
communities, oracle precision/recall, group shares, stability over evaluations), the realised
communication graph (``links/``: joint connectivity), the communication cost (``accounting/``,
``network.csv``) and the accuracy curve (``metrics.csv``: time to a target accuracy).
"""
from __future__ import annotations

import functools
import json
import math
import warnings
from pathlib import Path

import networkx as nx
import numpy as np
import pandas as pd

from netsim.analysis.communities import community_analysis
from netsim.analysis.graphs import collab_graph, edge_precision_recall, edges, group_shares
from netsim.analysis.metrics import (asymmetry, degree_distribution, density, graph_metrics,
                                     reciprocity)
from netsim.analysis.stats import mean_ci
from netsim.analysis.temporal import link_metrics, stabilisation_round, stability
from netsim.results import Results, atomic_write

# rows of the printed table, in order (those without a value for any algorithm are left out)
TABLE_ROWS = ("final_accuracy", "final_loss", "time_to_target", "round_to_target",
              "density", "sparsity", "asymmetry", "reciprocity", "in_degree_mean", "n_strong",
              "n_weak", "slem", "spectral_gap", "mixing_time", "n_communities", "ari", "nmi",
              "precision", "recall", "jaccard_mean", "stable_from", "link_density",
              "link_asymmetry", "rounds_to_connect", "joint_window", "bytes_per_client",
              "messages_per_client", "peers_per_round", "server_bytes")


def _results(results: Results | str | Path) -> Results:
    return results if isinstance(results, Results) else Results(results)


def has_arrays(res: Results, kind: str, algorithm: str, seed: int) -> bool:
    """Whether ``<kind>/<algorithm>_seed<seed>.npz`` exists in the folder."""
    return (res.dir / kind / f"{algorithm}_seed{seed}.npz").is_file()


def runs(res: Results) -> list[tuple[str, int]]:
    """(algorithm, seed) pairs evaluated in metrics.csv, in the order they ran."""
    m = res.metrics
    return [(str(a), int(s)) for a, s in m[["algorithm", "seed"]].drop_duplicates().itertuples(
        index=False)]


def rebuild_data(res: Results, seed: int | None = None):
    """The clients' data of run ``seed`` (default: the first) rebuilt from config.yaml, as the
    runner builds it from the config and the seed's data stream alone; None where that fails,
    e.g. a dataset folder or an extension module missing on this machine."""
    from netsim.data import build_client_data
    from netsim.errors import ConfigError
    from netsim.rng import Streams

    cfg = res.config
    seed = runs(res)[0][1] if seed is None else seed
    try:
        return build_client_data(cfg["data"], cfg["clients"],
                                 Streams(seed, cfg["stream_seeds"]).numpy("data"))
    except (OSError, ConfigError):
        return None


@functools.lru_cache(maxsize=64)
def _rebuilt_truth(folder: str, seed: int, stamp: float) -> tuple[np.ndarray, np.ndarray] | None:
    data = rebuild_data(Results(folder), seed)
    if data is None:
        return None
    group = ["" if g is None else str(g) for g in data.group]
    return np.asarray(data.cluster, int), np.asarray(group, object)


def client_table(res: Results, seed: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Ground-truth ``cluster`` (int, -1 = none) and ``group`` ('' = none) of every client in
    run ``seed``. clients.csv holds the first seed's partition; another seed draws its own from
    its data stream, so it is rebuilt from config.yaml (clients.csv's is used, with a warning,
    where that fails)."""
    if seed is not None and seed != runs(res)[0][1]:
        truth = _rebuilt_truth(str(res.dir), seed, (res.dir / "config.yaml").stat().st_mtime)
        if truth is not None:
            return truth
        warnings.warn(f"{res.dir}: the partition of seed {seed} could not be rebuilt; "
                      "using clients.csv (the first seed's)")
    c = res.clients.sort_values("client")
    group = c["group"].astype(object).where(c["group"].notna(), "")
    return c["cluster"].to_numpy(int), group.astype(str).to_numpy(object)


def _worst_mean(values: pd.Series, share: float, higher_is_worse: bool) -> float:
    """Mean of the worst ``share`` of the values (at least one), as ``summary.json``'s bottom10."""
    v = np.sort(values.to_numpy(float))
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
    hit = curve["value"] >= target if value == "accuracy" else curve["value"] <= target
    if not hit.any():
        return {"time_to_target": float("nan"), "round_to_target": float("nan")}
    first = curve[hit].iloc[0]
    return {"time_to_target": float(first["sim_time"]), "round_to_target": float(first["round"])}


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


def graph_series(res: Results, algorithm: str, seed: int,
                 threshold: float = 0.0) -> pd.DataFrame:
    """The collaboration graph at every evaluation: ``round, density, sparsity, reciprocity,
    asymmetry, precision, recall`` and the group shares."""
    c = res.arrays("collab", algorithm, seed)
    cluster, group = client_table(res, seed)
    rows = []
    for rnd, W in zip(c["rounds"], c["W"]):
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


def analyze_run(res: Results, algorithm: str, seed: int, threshold: float = 0.0,
                target: float | None = None, tol: float = 0.9, method: str = "louvain",
                curves: pd.DataFrame | None = None) -> dict:
    """All analyses of one (algorithm, seed) run; ``degrees`` holds the final in/out-degree
    histograms."""
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
        out.update(collab_analysis(c["W"], c["rounds"], cluster, group, threshold, tol, method))
        out["degrees"] = degree_distribution(edges(c["W"][-1], threshold))
    if has_arrays(res, "links", algorithm, seed):
        out.update(link_metrics(res.arrays("links", algorithm, seed)["delivered"]))
    out.update(cost(res, algorithm, seed, len(cluster)))
    return out


def analyze(results: Results | str | Path, threshold: float = 0.0, target: float | None = None,
            tol: float = 0.9, method: str = "louvain") -> dict:
    """Analyse every (algorithm, seed) of a results folder; per algorithm ``mean`` and ``std``
    over seeds of every scalar, ``per_seed`` values and ``target_reached`` (share of seeds)."""
    res = _results(results)
    curves = accuracy_curves(res)
    out: dict = {"results": str(res.dir), "threshold": threshold, "target": target,
                 "stability_tol": tol, "community_method": method, "algorithms": {}}
    per_alg: dict[str, dict[int, dict]] = {}
    for alg, seed in runs(res):
        per_alg.setdefault(alg, {})[seed] = analyze_run(res, alg, seed, threshold, target, tol,
                                                        method, curves)
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


def to_frame(analysis: dict) -> pd.DataFrame:
    """One row per (algorithm, seed) with every scalar analysis as a column."""
    rows = [{"algorithm": alg, "seed": seed, **{k: v for k, v in vals.items() if k != "degrees"}}
            for alg, a in analysis["algorithms"].items() for seed, vals in a["per_seed"].items()]
    return pd.DataFrame(rows)


def _json_safe(x):
    if isinstance(x, dict):
        return {str(k): _json_safe(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_json_safe(v) for v in x]
    if isinstance(x, float) and not math.isfinite(x):
        return None
    return x


def write_analysis(results: Results | str | Path, analysis: dict) -> list[Path]:
    """``analysis.json`` (non-finite numbers as null) and ``analysis.csv`` in the folder."""
    res = _results(results)
    paths = [res.dir / "analysis.json", res.dir / "analysis.csv"]
    atomic_write(paths[0], json.dumps(_json_safe(analysis), indent=2))
    atomic_write(paths[1], to_frame(analysis).to_csv(index=False))
    return paths


def export_graphml(results: Results | str | Path, threshold: float = 0.0,
                   out: str | Path | None = None) -> list[Path]:
    """GraphML of every run: ``<alg>_seed<k>_collab.graphml`` (final W, edge ``j -> i`` with
    weight ``W[i, j]``) and ``<alg>_seed<k>_links.graphml`` (weight = share of rounds the link
    delivered); nodes carry ``cluster`` and ``group``. Written to ``out`` (default
    RESULTS/graphs)."""
    res = _results(results)
    out = Path(out) if out is not None else res.dir / "graphs"
    out.mkdir(parents=True, exist_ok=True)
    paths = []
    for alg, seed in runs(res):
        cluster, group = client_table(res, seed)
        mats = {}
        if has_arrays(res, "collab", alg, seed):
            mats["collab"] = collab_graph(res.arrays("collab", alg, seed)["W"][-1], threshold)
        if has_arrays(res, "links", alg, seed):
            mats["links"] = collab_graph(res.arrays("links", alg, seed)["delivered"].mean(0), 0.0)
        for kind, g in mats.items():
            for i in g.nodes:
                g.nodes[i].update(cluster=int(cluster[i]), group=str(group[i]))
            path = out / f"{alg}_seed{seed}_{kind}.graphml"
            nx.write_graphml(g, path)
            paths.append(path)
    return paths


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
    of summary.json's ``per_seed`` values of ``metric``), ``n_seeds``, ``diverged`` (seeds)."""
    rows = []
    for folder in folders:
        res = _results(folder)
        x = config_value(res.config, param)
        for alg, s in res.summary["algorithms"].items():
            vals = [_num(v.get(metric)) for v in s["per_seed"].values()]
            mean, lo, hi = mean_ci(vals)
            rows.append({param: x, "algorithm": alg, "mean": mean, "ci_low": lo, "ci_high": hi,
                         "n_seeds": len(vals), "diverged": len(s.get("diverged", []))})
    return pd.DataFrame(rows)


def format_table(analysis: dict, width: int | None = 100) -> str:
    """Metrics as rows, algorithms as columns: the mean over seeds (3 significant digits); the
    algorithm columns are split into blocks of at most ``width`` characters (None: one block)."""
    algs = analysis["algorithms"]
    names = list(algs)
    extra = sorted({k for a in algs.values() for k in a["mean"] if k.startswith("share_")})
    rows = []
    for key in (*TABLE_ROWS, *extra):
        vals = [algs[n]["mean"].get(key, float("nan")) for n in names]
        if not all(isinstance(v, float) and math.isnan(v) for v in vals):
            rows.append((key, vals))
    first = max(len(k) for k, _ in rows) + 2 if rows else 10
    cols = [max(11, len(n) + 2) for n in names]
    blocks, used = [[]], first
    for k, c in enumerate(cols):
        if blocks[-1] and width is not None and used + c > width:
            blocks.append([])
            used = first
        blocks[-1].append(k)
        used += c
    lines = []
    for block in blocks:
        head = f"{'metric':<{first}}" + "".join(f"{names[k]:>{cols[k]}}" for k in block)
        lines += ([""] if lines else []) + [head, "-" * len(head)]
        lines += [f"{key:<{first}}" + "".join(f"{_fmt(vals[k]):>{cols[k]}}" for k in block)
                  for key, vals in rows]
    seeds = sorted({len(a["seeds"]) for a in algs.values()})
    lines.append(f"(mean over {'/'.join(map(str, seeds))} seed(s); threshold "
                 f"{analysis['threshold']}; '-' = not applicable)")
    return "\n".join(lines)


def _fmt(v: float) -> str:
    if isinstance(v, float) and math.isnan(v):
        return "-"
    if math.isinf(v):
        return "inf"
    return f"{v:.3g}" if abs(v) < 1e4 else f"{v:.3e}"
