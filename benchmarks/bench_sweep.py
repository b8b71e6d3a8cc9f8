"""Parallel speed-up of ``netsim sweep``: the same sweep run serially and in the local process
pool, in the same invocation, into two fresh folders.

    python benchmarks/bench_sweep.py [SWEEP] [--workers W] [--seeds 0 1 2]

Default sweep: scenarios/robustness_links.yaml. Serial = one process with all cores as torch
threads; pool = W worker processes (default: the machine's cores), cores / W threads each. Prints
both wall times (the sweep's own "ran N in T s") and their ratio, and checks that the two tables
agree apart from the wall-time column.
"""
from __future__ import annotations

import argparse
import os
import re
import tempfile
from pathlib import Path

import pandas as pd

from netsim.running.sweep import Sweep, run_sweep

ROOT = Path(__file__).resolve().parent.parent


def timed(sweep: Sweep, out: Path) -> tuple[float, pd.DataFrame]:
    """Run ``sweep`` into ``out``; the execution time it reports and its table."""
    lines: list[str] = []
    root = run_sweep(sweep, out=out, log=lines.append)
    ran = next(ln for ln in lines if re.search(r": ran \d+ in ", ln))
    seconds = float(re.search(r"in ([\d.]+) s", ran).group(1))
    return seconds, pd.read_csv(root / "table.csv")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.strip().splitlines()[0])
    p.add_argument("sweep", nargs="?", default=str(ROOT / "scenarios" / "robustness_links.yaml"))
    p.add_argument("--workers", type=int, default=os.cpu_count() or 1)
    p.add_argument("--seeds", type=int, nargs="+", help="override the sweep's seeds")
    a = p.parse_args()
    base = Sweep.load(a.sweep)
    if a.seeds:
        base.spec["seeds"] = a.seeds
    n = len(base.cells())
    results = {}
    with tempfile.TemporaryDirectory() as tmp:
        for mode, ex in (("serial", {"name": "serial", "workers": 1}),
                         ("pool", {"name": "local", "workers": a.workers})):
            sweep = Sweep.load(a.sweep)
            sweep.spec["seeds"] = base.spec["seeds"]
            sweep.spec["executor"] = {**sweep.spec["executor"], **ex}
            results[mode] = timed(sweep, Path(tmp) / mode)
            print(f"{mode:6s} {n} runs: {results[mode][0]:.1f} s")
    (ts, serial), (tp, pool) = results["serial"], results["pool"]
    same = [c for c in serial.columns if c != "wall_time"]
    pd.testing.assert_frame_equal(serial[same].sort_values("id").reset_index(drop=True),
                                  pool[same].sort_values("id").reset_index(drop=True))
    print(f"speed-up of {a.workers} workers over serial: {ts / tp:.2f}x (tables identical)")


if __name__ == "__main__":
    main()
