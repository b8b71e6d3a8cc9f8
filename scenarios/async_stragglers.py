"""Stragglers: why asynchrony matters (docs/async.md). The asynchronous methods of
scenarios/async_stragglers.yaml against the synchronous ones in the same event-driven engine
(async_stragglers_wait.yaml: SGP, D-PSGD and FedAvg, each waiting for its round's messages) and
in the round engine (async_stragglers_sync.yaml, wait_all), all on the same data, model,
clients, network and compute model (log-normal speeds, 10% of the clients 10x slower), over 3
seeds: the simulated time each method needs to reach one target mean test accuracy, and the
accuracy it ends with.

    python scenarios/async_stragglers.py [--out results] [--target 0.85] [--threads 1] [--short]

Prints a Markdown table, one row per method: the seeds that reached the target; the simulated
time to it (summary.json's time_to_accuracy: the first evaluation at or above it), mean and 95%
Student-t interval over those seeds; its difference with synchronous SGP in the event-driven
engine, paired by seed;
the mean test accuracy at the event-driven run's end time and at the method's own end, with
that end time. Writes
OUT/async_stragglers/figures/stragglers_accuracy_vs_time.png (and .pdf, with a caption .txt):
mean test accuracy over clients against simulated time for every method of the event-driven
engine.
"""
from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
import pandas as pd

import netsim
from netsim.analysis.clocks import target_key
from netsim.analysis.paired import paired_difference
from netsim.analysis.series import accuracy_curves
from netsim.analysis.stats import mean_ci
from netsim.plot import plot_accuracy

HERE = Path(__file__).resolve().parent
#: the three runs by engine (the table's "engine" column)
SCENARIOS = {"event-driven": "async_stragglers.yaml",
             "event-driven, rounds": "async_stragglers_wait.yaml",
             "round-based": "async_stragglers_sync.yaml"}
REFERENCE = "sync_sgp"                     # the synchronous baseline of the paired differences
FIGURE = "stragglers_accuracy_vs_time.png"
#: the smoke test's schedules (--short)
SHORT = {"event-driven": {"schedule.until": 1.0}, "event-driven, rounds": {"schedule.until": 1.0},
         "round-based": {"schedule.rounds": 4}}


def run_both(out: str, threads: int, seeds: list[int], target: float,
             short: bool) -> dict[str, netsim.Results]:
    """Both scenarios with ``target`` among their accuracy targets, figures off (this script
    draws its own), by engine."""
    results = {}
    for engine, file in SCENARIOS.items():
        sc = netsim.Scenario.load(HERE / file)
        targets = sorted({*sc.resolve()["outputs"]["targets"], target})
        changes = {"outputs.figures": False, "outputs.progress": False,
                   "outputs.targets": targets}
        if short:
            changes |= {"name": f"{sc.name}_short", **SHORT[engine]}
        results[engine] = netsim.run(sc.with_overrides(changes), seeds=seeds, out=out,
                                     quiet=True, threads=threads)
    return results


def accuracy_at(curve: pd.DataFrame, t: float) -> float:
    """Mean test accuracy of the last evaluation at or before simulated time ``t``."""
    return float(curve.loc[curve["sim_time"] <= t + 1e-9, "value"].iloc[-1])


def interval(values: list[float], digits: int) -> str:
    """``mean ± half-width`` of the 95% Student-t interval over ``values`` (``-`` if none)."""
    mean, _, high = mean_ci(values)
    return "-" if np.isnan(mean) else f"{mean:.{digits}f} ± {high - mean:.{digits}f}"


def method_table(results: dict[str, netsim.Results], curves: dict[str, pd.DataFrame],
                 target: float, horizon: float) -> pd.DataFrame:
    """One row per method of both runs (by engine): its time to ``target`` (summary.json's
    ``time_to_accuracy``) and accuracies over seeds; the paired difference of the time with
    :data:`REFERENCE`'s."""
    per_seed: dict[str, dict] = {}
    rows = []
    for engine, res in results.items():
        for alg, summary in res.summary["algorithms"].items():
            seeds = summary["per_seed"]
            times = {int(s): r["time_to_accuracy"][target_key(target)] for s, r in seeds.items()}
            per_seed[alg] = {"per_seed": {s: {"time": t} for s, t in times.items()}}
            reached = [t for t in times.values() if t is not None]
            cur = curves[engine][curves[engine]["algorithm"] == alg]
            rows.append({
                "method": alg, "engine": engine, "reached": f"{len(reached)}/{len(seeds)}",
                "time": interval(reached, 1),
                "at_horizon": interval([accuracy_at(c.sort_values("round"), horizon)
                                        for _, c in cur.groupby("seed")], 3),
                "final": interval([r["mean_accuracy"] for r in seeds.values()], 3),
                "end": float(np.mean([r["sim_time"] for r in seeds.values()]))})
    table = pd.DataFrame(rows).set_index("method")
    table["vs_reference"] = [_paired(per_seed, alg) for alg in table.index]
    return table


def _paired(per_seed: dict[str, dict], alg: str) -> str:
    """The time to the target of ``alg`` less :data:`REFERENCE`'s, seed by seed: mean [95%
    interval]."""
    if alg == REFERENCE:
        return ""
    d = paired_difference({"algorithms": per_seed}, alg, REFERENCE, key="time")
    return f"{d['mean']:+.1f} [{d['ci_low']:+.1f}, {d['ci_high']:+.1f}]" if d["seeds"] else "-"


def markdown(table: pd.DataFrame, target: float, horizon: float) -> str:
    """The table as Markdown."""
    head = ["method", "engine", "seeds at target", f"time to {target:g} (s)",
            f"minus {REFERENCE}'s, paired (s)", f"accuracy at {horizon:g} s", "final accuracy",
            "end (s)"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for alg, r in table.iterrows():
        lines.append(f"| `{alg}` | {r['engine']} | {r['reached']} | {r['time']} | "
                     f"{r['vs_reference']} | {r['at_horizon']} | {r['final']} | {r['end']:.1f} |")
    return "\n".join(lines)


def figure(curves: dict[str, pd.DataFrame], path: Path) -> list[Path]:
    """Mean test accuracy against simulated time of every method of the event-driven engine,
    asynchronous and waiting for its rounds (the round engine's curves lie on the latter's;
    the table compares them): PNG, PDF and caption."""
    both = pd.concat([c for engine, c in curves.items() if engine != "round-based"],
                     ignore_index=True)
    both.attrs = curves["event-driven"].attrs
    order = list(dict.fromkeys(both["algorithm"]))
    return plot_accuracy(both, path, x="sim_time", pdf=True, order=order)


def main(argv: list[str] | None = None) -> pd.DataFrame:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default="results", help="results root (default: results)")
    ap.add_argument("--target", type=float, default=0.85,
                    help="mean test accuracy to reach (default: 0.85)")
    ap.add_argument("--threads", type=int, default=1, help="torch CPU threads (default: 1)")
    ap.add_argument("--short", action="store_true", help="1 simulated second, 4 rounds, 1 seed "
                    "(a smoke test)")
    args = ap.parse_args(argv)

    results = run_both(args.out, args.threads, [0] if args.short else [0, 1, 2], args.target,
                       args.short)
    curves = {engine: accuracy_curves(res) for engine, res in results.items()}
    horizon = results["event-driven"].config["schedule"]["until"]
    table = method_table(results, curves, args.target, horizon)
    print(markdown(table, args.target, horizon))
    for path in figure(curves, results["event-driven"].dir / "figures" / FIGURE):
        print(path)
    return table


if __name__ == "__main__":
    main()
