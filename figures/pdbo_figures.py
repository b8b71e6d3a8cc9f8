"""PDBO paper-style figures of a ``pdbo`` / ``pdbo_100`` results folder.

    python figures/pdbo_figures.py results/pdbo [--out DIR]

Writes into RESULTS/figures/ (or ``--out``), PNG and PDF:

- ``pdbo_outer_weights_<label>.png``: softmax(lambda_i) of every agent (rows, sorted by input
  cluster) over the K learners, at the outer step with the best mean validation accuracy (the
  step the paper reports), first seed, for each run that learns them (PDBO-MTL and its local
  variant; SGP and Local keep uniform weights);
- ``pdbo_accuracy_mean.png`` and ``pdbo_accuracy_bottom10.png``: test accuracy vs outer steps,
  mean over agents and mean of the worst 10 % of agents, 95 % CI over seeds, every algorithm.
"""
from __future__ import annotations

import numpy as np
from common import client_table, first_seed, parse, present, report

from netsim.analysis.series import accuracy_curves
from netsim.plot import plot_accuracy
from netsim.plot.outer import plot_outer_weights


def main() -> None:
    res, out = parse("pdbo", __doc__)
    paths = []
    learned = [a["label"] for a in res.config["algorithms"] if a.get("hypergradient") != "none"]
    for label in present(res, learned, kind="outer"):           # uniform weights: nothing to see
        seed = first_seed(res, label)
        outer = res.arrays("outer", label, seed)
        best = int(np.argmax(outer["val_accuracy"]))
        cluster, _ = client_table(res, seed)
        paths += plot_outer_weights(outer["weights"][best], cluster,
                                    out / f"pdbo_outer_weights_{label}.png",
                                    f"{label}, outer step {best + 1} (seed {seed})", pdf=True)
    for name, worst in (("mean", None), ("bottom10", 0.1)):
        paths += plot_accuracy(accuracy_curves(res, worst=worst),
                               out / f"pdbo_accuracy_{name}.png", "round", pdf=True)
    report(paths)


if __name__ == "__main__":
    main()
