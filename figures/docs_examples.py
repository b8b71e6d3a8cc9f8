"""The example image of every figure kind in docs/figures/ (shown in docs/papers/analysis.md),
from quickstart results. From the repository root:

    netsim run --seeds 0 1 2 --out results --set outputs.trace=true
    netsim run --seeds 0 1 --out results/flip \\
        --set 'algorithms=[local, fedavg, oracle, sgp, dpsgd]' \\
        --set 'data.partition={name: label_flip, share: 0.4}'
    for p in 0.2 0.5 0.9; do netsim run --seeds 0 1 2 --out results/links_$p \\
        --set network.links.p=$p --set 'algorithms=[fedavg, sgp, dpsgd]' --set schedule.rounds=20
    done
    python figures/docs_examples.py
"""
from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np

from netsim import Results
from netsim.analysis.folder import client_table, rebuild_data
from netsim.analysis.series import accuracy_curves, series_by_algorithm
from netsim.plot import (node_labels, plot_accuracy, plot_collaboration_grid, plot_digraph,
                         plot_partition, plot_robustness, plot_scatter, plot_series,
                         plot_timeline)
from netsim.plot.curves import final_client_stats
from netsim.sim.trace import read_trace
from netsim.sweep_table import robustness_table

p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
p.add_argument("--quickstart", default="results/quickstart")
p.add_argument("--flip", default="results/flip/quickstart")
p.add_argument("--links", nargs="+", default=[f"results/links_{x}/quickstart"
                                               for x in (0.2, 0.5, 0.9)])
p.add_argument("--out", default="docs/figures")
a = p.parse_args()
out, qs, flip = Path(a.out), Results(a.quickstart), Results(a.flip)
cluster, group = client_table(qs, 0)
written = plot_accuracy(accuracy_curves(qs), out / "accuracy.png", "sim_time")
rows = {alg: tuple(qs.arrays("collab", alg, 0)[k] for k in ("W", "rounds"))
        for alg in ("oracle", "dpsgd")}
written += plot_collaboration_grid(rows, out / "collab.png", cluster)
final = qs.arrays("collab", "dpsgd", 0)
written += plot_digraph(final["W"][-1], out / "graph.png", np.argsort(cluster, kind="stable"),
                        node_labels(cluster, group),
                        title=f"dpsgd, round {int(final['rounds'][-1])} (seed 0)")
written += plot_scatter(final_client_stats(qs.metrics), out / "scatter.png")
written += plot_series(series_by_algorithm(qs), ["asymmetry", "sparsity"], out / "asymmetry.png")
written += plot_series(series_by_algorithm(flip, labels=["fedavg", "oracle", "dpsgd"]),
                       ["share_benign_uses_malicious"], out / "groups.png")
written += plot_timeline(read_trace(qs.dir / "trace" / "sgp_seed0.csv"), 1, out / "timeline.png")
written.append(plot_partition(rebuild_data(qs), out / "partition.png"))
written += plot_robustness(robustness_table(a.links, "network.links.p"), "network.links.p",
                           "mean_accuracy", out / "robustness.png")
for path in written:
    print(path)
