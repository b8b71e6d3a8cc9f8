"""CoBo paper-style figures of one results folder, at the rounds you choose.

    python figures/cobo_figures.py results/cobo_cross_silo --rounds 6 60 600
    python figures/cobo_figures.py results/cobo_domains --client 0 --smoothing 0.6

Writes into RESULTS/figures/ (or ``--out``), PNG and PDF, for whatever the folder holds:

- ``cobo_collaboration.png``: collaboration matrices of FC, IFCA and CoBo at the evaluations
  nearest to ``--rounds`` (default 1 %, 10 % and 100 % of the run), diagonal masked, next to the
  oracle block matrix (the paper's Figures 3 and 5; cobo_fig3.py / cobo_fig5.py draw the fixed
  versions);
- ``cobo_accuracy.png``: mean test accuracy vs rounds of every method with the Oracle, 95 % CI over
  seeds (Figure 2b / 6);
- ``cobo_domain_weights_<label>.png``: for each CoBo run, the weights ``--client`` gives to every
  other client over the rounds (Figure 4), EMA-smoothed by ``--smoothing``.
"""
from __future__ import annotations

import argparse
from pathlib import Path

from common import client_table, first_seed, present, report

from netsim import Results
from netsim.analysis.series import accuracy_curves
from netsim.plot import plot_accuracy, plot_collaboration_grid
from netsim.plot.domains import plot_domain_weights

ORDER = ["cobo", "oracle", "ditto", "fedavg_ft", "local", "fedavg", "ifca", "fc"]


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.strip().splitlines()[0])
    p.add_argument("results", type=Path, help="a results folder of a cobo_* scenario")
    p.add_argument("--rounds", type=int, nargs="+", help="rounds of the collaboration matrices")
    p.add_argument("--client", type=int, default=0, help="client of the domain-weight curves")
    p.add_argument("--smoothing", type=float, default=0.0, help="EMA factor of those curves")
    p.add_argument("--out", type=Path, help="output folder (default: RESULTS/figures)")
    a = p.parse_args()
    res = Results(a.results)
    out = a.out or res.dir / "figures"
    total = res.config["schedule"]["rounds"]
    at = a.rounds or [max(1, total // 100), max(1, total // 10), total]
    cluster, group = client_table(res)
    labels = {x["label"]: x["name"] for x in res.config["algorithms"]}

    def of(*names: str) -> list[str]:
        return [lab for lab, name in labels.items() if name in names]

    paths = []
    rows = {}
    for lab in present(res, of("fc", "ifca", "cobo")):
        c = res.arrays("collab", lab, first_seed(res, lab))
        rows[lab] = (c["W"], c["rounds"])
    paths += plot_collaboration_grid(rows, out / "cobo_collaboration.png", cluster, at, pdf=True)
    order = present(res, [lab for name in ORDER for lab in of(name)], None)
    paths += plot_accuracy(accuracy_curves(res), out / "cobo_accuracy.png", "round", True, order)
    names = [f"{j}" + (f" ({g})" if g else "") for j, g in enumerate(group)]
    for lab in present(res, of("cobo")):
        c = res.arrays("collab", lab, first_seed(res, lab))
        paths += plot_domain_weights(c["W"], c["rounds"], a.client,
                                     out / f"cobo_domain_weights_{lab}.png", names, a.smoothing,
                                     f"{lab}: weights client {names[a.client]} gives", pdf=True)
    report(paths)


if __name__ == "__main__":
    main()
