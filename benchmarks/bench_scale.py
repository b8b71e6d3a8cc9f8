"""Time and memory of SGP against the number of clients, each size in a fresh process.

    python benchmarks/bench_scale.py [--sizes 100 300 1000 3000 10000] [--rounds 20]
                                     [--threads 1] [--state-dtype float32|float64]
                                     [--checkpoint-every K]

Workload (issue 18's first scale case): SGP on a sparse random directed graph (Erdős–Rényi with
p = 5 / (N - 1), so the mean out-degree stays 5) with bench_peer's random directed links
(Bernoulli(0.5) per step, latency with jitter, 1% loss), an MLP 64-64-10 trained with batch 2,
one local step per round, on a 10-class Gaussian mixture in 64 dimensions with 20 samples per
client (iid), evaluated only at the end. ``--state-dtype``: SGP's push-sum state z (the
``state_dtype`` option; default float32, netsim's). ``--checkpoint-every K``: ``outputs.checkpoint_every``
(default netsim's: every ``rounds // 4`` rounds once 10 s have passed since the last one, so
only the runs longer than 10 s write one mid-run; K = the rounds: none).

Per size: seconds per round (mean over rounds 2..R, timed between rounds by a run-loop
callback, recording and netsim's default checkpoints included, setup and evaluations not), the
engine's time per round and its share of the rounds (``Simulator.wall_time``), the run time of
the whole run (summary.json's ``wall_time``: the algorithm's construction, its rounds and
evaluations), peak memory (``VmHWM`` of the process), and the growth exponents of s/round, of
the engine's time and of the peak between consecutive sizes (``log(t2 / t1) / log(N2 / N1)``).
"""
from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_peer import RANDOM, peak_rss_mb, per_round  # noqa: E402

DEGREE, SAMPLES, BATCH = 5, 20, 2


def scenario(n: int, rounds: int, state_dtype: str = "float32",
             checkpoint_every: int | None = None) -> dict:
    """The workload on ``n`` clients."""
    return {
        "name": f"bench_scale_{n}", "seed": 0, "clients": n,
        "data": {"dataset": {"name": "gaussian_mixture", "n_samples": SAMPLES * n, "dim": 64,
                             "classes": 10},
                 "partition": "iid", "val_fraction": 0.1, "test_fraction": 0.2},
        "model": {"name": "mlp", "hidden": [64]},
        "network": {**RANDOM, "topology": {"name": "erdos_renyi", "p": DEGREE / (n - 1)}},
        "train": {"lr": 0.05, "momentum": 0.0, "batch_size": BATCH, "local_steps": 1},
        "schedule": {"rounds": rounds, "eval_every": rounds},
        "algorithms": [{"name": "sgp", "state_dtype": state_dtype}],
        "outputs": {"figures": False, "progress": False, "checkpoint_every": checkpoint_every},
    }


def child(n: int, rounds: int, threads: int, state_dtype: str,
          checkpoint_every: int | None) -> dict:
    """Run the workload once on ``n`` clients; what this process measured."""
    from netsim import Scenario, run
    from netsim.running.callbacks import Callback

    class Clock(Callback):
        """Wall-clock and engine time at the end of every round."""

        def __init__(self):
            self.ends: list[float] = []
            self.engine: list[float] = []

        def on_round(self, alg, t: int) -> None:
            self.ends.append(time.perf_counter())
            self.engine.append(alg.net.engine_wall_time)

    clock = Clock()
    with tempfile.TemporaryDirectory() as out:
        res = run(Scenario(scenario(n, rounds, state_dtype, checkpoint_every)), out=out,
                  quiet=True, threads=threads, callbacks=[clock])
        sgp = res.summary["algorithms"]["sgp"]
    s_round = per_round(clock.ends)
    share = (clock.engine[-1] - clock.engine[0]) / (clock.ends[-1] - clock.ends[0])
    return {"n": n, "s_round": s_round, "engine_share": share, "engine_s": share * s_round,
            "run_s": sgp["wall_time"], "peak_mb": peak_rss_mb(), "accuracy": sgp["mean_accuracy"]}


def measure(n: int, rounds: int, threads: int, state_dtype: str,
            checkpoint_every: int | None) -> dict:
    """:func:`child` in a fresh process."""
    flags = [] if checkpoint_every is None else ["--checkpoint-every", str(checkpoint_every)]
    out = subprocess.run([sys.executable, __file__, "--child", str(n), "--rounds", str(rounds),
                          "--threads", str(threads), "--state-dtype", state_dtype, *flags],
                         check=True, capture_output=True, text=True)
    return json.loads(out.stdout.splitlines()[-1])


def exponent(a: dict, b: dict, key: str) -> float:
    """Growth exponent of ``key`` between two sizes."""
    return math.log(b[key] / a[key]) / math.log(b["n"] / a["n"])


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[100, 300, 1000, 3000, 10000])
    ap.add_argument("--rounds", type=int, default=20)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--state-dtype", default="float32", choices=("float32", "float64"))
    ap.add_argument("--checkpoint-every", type=int, default=None)
    ap.add_argument("--child", type=int, default=None, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child:
        print(json.dumps(child(args.child, args.rounds, args.threads, args.state_dtype,
                               args.checkpoint_every)))
        return
    rows = [measure(n, args.rounds, args.threads, args.state_dtype, args.checkpoint_every)
            for n in args.sizes]
    print(f"# SGP ({args.state_dtype} state), Erdős–Rényi mean out-degree {DEGREE}, "
          f"{args.rounds} rounds, {args.threads} thread(s), load average "
          f"{os.getloadavg()[0]:.2f}")
    print(f"{'N':>6}{'s/round':>10}{'engine ms':>10}{'engine':>8}{'run s':>8}{'peak MB':>9}"
          f"{'exp time':>10}{'exp engine':>11}{'exp mem':>9}")
    for prev, row in zip([None, *rows], rows):
        grow = "".join(f"{exponent(prev, row, key):>{w}.2f}" if prev else " " * w
                       for key, w in (("s_round", 10), ("engine_s", 11), ("peak_mb", 9)))
        print(f"{row['n']:>6}{row['s_round']:>10.4f}{1000 * row['engine_s']:>10.2f}"
              f"{row['engine_share']:>8.1%}{row['run_s']:>8.2f}{row['peak_mb']:>9.0f}{grow}")


if __name__ == "__main__":
    main()
