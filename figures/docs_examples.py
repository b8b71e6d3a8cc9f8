"""The example image of every figure kind in docs/figures/ (docs/figures.md's gallery, also shown
in docs/papers/analysis.md), from quickstart results: most are the files the runs below write
into RESULTS/figures/ (``netsim figures RESULTS`` rewrites them), copied with their caption
sidecars (:data:`COPIED`); the collaboration grid of two algorithms and the robustness curves of
three folders are drawn here. From the repository root:

    netsim run --seeds 0 1 2 --out results --set outputs.trace=true
    netsim run --seeds 0 1 2 --out results/flip \\
        --set 'algorithms=[local, fedavg, oracle, sgp, dpsgd]' \\
        --set 'data.partition={name: label_flip, share: 0.4}'
    for p in 0.2 0.5 0.9; do netsim run --seeds 0 1 2 --out results/links_$p \\
        --set network.links.p=$p --set 'algorithms=[fedavg, sgp, dpsgd]' --set schedule.rounds=20
    done
    python figures/docs_examples.py
"""
from __future__ import annotations

import argparse
import shutil
from pathlib import Path

from netsim import Results
from netsim.analysis.folder import client_table
from netsim.analysis.sweep_table import robustness_table
from netsim.plot import plot_collaboration_grid, plot_robustness

#: docs/figures/NAME.png (and .txt): (folder, the file the run wrote in its figures/)
COPIED = {"accuracy": ("quickstart", "accuracy_vs_rounds"),
          "accuracy_bytes": ("quickstart", "accuracy_vs_bytes"),
          "graph": ("quickstart", "graph_diple_seed0"),
          "scatter": ("quickstart", "accuracy_vs_variance"),
          "asymmetry": ("quickstart", "asymmetry_sparsity"),
          "groups": ("flip", "group_shares"),
          "timeline": ("quickstart", "timeline_sgp_seed0"),
          "partition": ("quickstart", "partition")}

p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
p.add_argument("--quickstart", default="results/quickstart")
p.add_argument("--flip", default="results/flip/quickstart")
p.add_argument("--links", nargs="+", default=[f"results/links_{x}/quickstart"
                                               for x in (0.2, 0.5, 0.9)])
p.add_argument("--out", default="docs/figures")
a = p.parse_args()
out, qs = Path(a.out), Results(a.quickstart)
folders = {"quickstart": qs.dir, "flip": Path(a.flip)}
written = []
for name, (folder, stem) in COPIED.items():
    written += [Path(shutil.copyfile(folders[folder] / "figures" / f"{stem}{ext}",
                                     out / f"{name}{ext}")) for ext in (".png", ".txt")]
cluster, _ = client_table(qs, 0)
rows = {alg: tuple(qs.arrays("collab", alg, 0)[k] for k in ("W", "rounds"))
        for alg in ("oracle", "dpsgd")}
written += plot_collaboration_grid(rows, out / "collab.png", cluster)
written += plot_robustness(robustness_table(a.links, "network.links.p"), "network.links.p",
                           "mean_accuracy", out / "robustness.png")
for path in written:
    print(path)
