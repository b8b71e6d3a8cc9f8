"""Writing an analysis into its results folder: ``analysis.json`` (non-finite numbers as null),
``analysis.csv`` (one row per algorithm and seed) and GraphML files of every run's graphs, each
listed in the folder's manifest (netsim.results.manifest) as one of netsim's files."""
from __future__ import annotations

import json
import math
from pathlib import Path

import networkx as nx
import pandas as pd

from netsim.analysis.folder import as_results, client_table, has_arrays, runs
from netsim.analysis.graphs import collab_graph, largest_off_diagonal
from netsim.results import Results, write_own
from netsim.results.manifest import record


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
    res = as_results(results)
    return [write_own(res.dir, "analysis.json", json.dumps(_json_safe(analysis), indent=2)),
            write_own(res.dir, "analysis.csv", to_frame(analysis).to_csv(index=False))]


def export_graphml(results: Results | str | Path, threshold: float = 0.0,
                   out: str | Path | None = None, relative_to_max: bool = False) -> list[Path]:
    """GraphML of every run: ``<alg>_seed<k>_collab.graphml`` (final W, edge ``j -> i`` with
    weight ``W[i, j]``; with ``relative_to_max`` the edges are the weights above ``threshold``
    times W's largest off-diagonal weight) and ``<alg>_seed<k>_links.graphml`` (weight = share of
    rounds the link delivered); nodes carry ``cluster`` and ``group``. Written to ``out``
    (default RESULTS/graphs)."""
    res = as_results(results)
    out = Path(out) if out is not None else res.dir / "graphs"
    out.mkdir(parents=True, exist_ok=True)
    paths = []
    for alg, seed in runs(res):
        cluster, group = client_table(res, seed)
        mats = {}
        if has_arrays(res, "collab", alg, seed):
            W = res.arrays("collab", alg, seed)["W"][-1]
            top = largest_off_diagonal(W) if relative_to_max else 0.0
            mats["collab"] = collab_graph(W, threshold * top if top > 0 else threshold)
        if has_arrays(res, "links", alg, seed):
            mats["links"] = collab_graph(res.arrays("links", alg, seed)["delivered"].mean(0), 0.0)
        for kind, g in mats.items():
            for i in g.nodes:
                g.nodes[i].update(cluster=int(cluster[i]), group=str(group[i]))
            path = out / f"{alg}_seed{seed}_{kind}.graphml"
            record(res.dir, [path])                       # when ``out`` is in the folder
            nx.write_graphml(g, path)
            paths.append(path)
    return paths
