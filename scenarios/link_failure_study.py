"""A robustness study as a script: SGP, D-PSGD, PDBO-MTL and DiPLe over Bernoulli links of
decreasing probability, with and without 20% message loss, 3 seeds; the cells come back as a
pandas DataFrame and netsim's plot_robustness draws them.

    python scenarios/link_failure_study.py [--out results] [--short]

Writes OUT/link_failure_study/ (resumable; `netsim sweep OUT/link_failure_study/sweep.yaml`
re-runs it from the command line) with table.csv, cells.csv and figures/.
"""
from __future__ import annotations

import argparse
from pathlib import Path

import netsim
from netsim.plot import plot_robustness

HERE = Path(__file__).resolve().parent
ALGORITHMS = ["sgp", "dpsgd", "diple",
              {"name": "pdbo_mtl", "inner_steps": 10, "decay_last": [3], "neumann_steps": 5,
               "reinit": False, "fixed_batches": False, "train": {"momentum": 0}}]


def main(argv: list[str] | None = None) -> netsim.SweepResults:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default="results", help="results root (default: results)")
    ap.add_argument("--short", action="store_true", help="2 rounds, 2 link values, 1 seed, "
                    "serial (a smoke test)")
    args = ap.parse_args(argv)

    base = netsim.Scenario.load(HERE / "robustness_base.yaml").with_overrides(
        {"algorithms": ALGORITHMS})
    grid = {"network.links.p": [1.0, 0.7, 0.4, 0.2, 0.1], "network.loss.p": [0.0, 0.2]}
    seeds, executor = [0, 1, 2], {}
    if args.short:
        base = base.with_overrides({"schedule.rounds": 2, "schedule.eval_every": 2})
        grid, seeds, executor = {"network.links.p": [1.0, 0.2], "network.loss.p": [0.2]}, [0], \
            {"name": "serial"}
    study = netsim.run_sweep(base, grid, seeds=seeds, executor=executor,
                             name="link_failure_study", out=args.out, quiet=args.short)

    cells = study.cells                                  # one row per (p, loss, algorithm)
    print(cells.pivot_table(index=["network.loss.p", "algorithm"],
                            columns="network.links.p", values="mean_accuracy").round(3).to_string())
    curve = cells.rename(columns={"mean_accuracy": "mean", "mean_accuracy_ci_low": "ci_low",
                                  "mean_accuracy_ci_high": "ci_high"})
    curve["panel"] = [f"message loss {p:.0%}" for p in curve["network.loss.p"]]
    for path in plot_robustness(curve, "network.links.p", "mean_accuracy",
                                study.dir / "figures" / "link_failure_study.png", pdf=True,
                                panel="panel"):
        print(path)
    return study


if __name__ == "__main__":
    main()
