"""Shared command line of the paper-figure scripts in figures/.

Every script reads the results folder of its scenario (default ``results/<scenario>``, as written
by ``netsim run scenarios/<scenario>.yaml``) and writes PNG and vector PDF files into
``RESULTS/figures/`` (or ``--out``).
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from netsim import Results
from netsim.analysis.folder import client_table, has_arrays, runs


def parse(scenario: str, doc: str) -> tuple[Results, Path]:
    """The results folder and the output folder from the command line."""
    p = argparse.ArgumentParser(description=doc.strip().splitlines()[0])
    p.add_argument("results", nargs="?", default=f"results/{scenario}",
                   help=f"results folder of scenarios/{scenario}.yaml "
                   f"(default: results/{scenario})")
    p.add_argument("--out", help="output folder (default: RESULTS/figures)")
    a = p.parse_args()
    res = Results(a.results)
    return res, Path(a.out) if a.out else res.dir / "figures"


def present(res: Results, labels: list[str], kind: str = "collab") -> list[str]:
    """The ``labels`` that ran in the folder (with ``kind`` arrays unless kind is None); exits
    with a message naming what the folder has when none did."""
    ran = dict.fromkeys(alg for alg, seed in runs(res)
                        if kind is None or has_arrays(res, kind, alg, seed))
    found = [lab for lab in labels if lab in ran]
    if not found:
        sys.exit(f"{res.dir}: none of {labels} (it has: {', '.join(ran) or 'nothing'})")
    return found


def first_seed(res: Results, label: str) -> int:
    """The first seed the algorithm ran."""
    return next(seed for alg, seed in runs(res) if alg == label)


def report(paths: list[Path]) -> None:
    for p in paths:
        print(p)


__all__ = ["client_table", "first_seed", "parse", "present", "report"]
