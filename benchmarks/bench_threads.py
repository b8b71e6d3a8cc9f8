"""Which torch thread setting is fastest, on a quiet CPU and with other busy processes beside it.

    python benchmarks/bench_threads.py [--busy 2] [--repeats 3] [--rounds 3]

Each configuration runs in its own process (OpenMP reads its settings when torch is loaded):
torch's default (as many threads as cores, libgomp's default spin of 300,000 iterations before a
waiting thread sleeps), 1 thread, as many threads as cores with ``OMP_WAIT_POLICY=PASSIVE`` (no
spin), and netsim's default (as many threads as cores, ``GOMP_SPINCOUNT=10000``:
netsim.util.threads). Workloads: the PDBO quickstart
(``netsim run --set 'algorithms=[pdbo_mtl]' --set train.momentum=0 --set schedule.rounds=R``,
PDBO's HGP needs plain SGD; the run's wall time from
summary.json, without interpreter start-up) and one training step of benchmarks/bench_step.py
(MLP N = 100, LeNet-5 N = 10; median of 7). Configurations are interleaved in every repeat, so
background load hits them alike; ``--busy K`` starts K busy-looping processes for the duration.
Prints medians over repeats and each one's ratio to torch's default.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
CORES = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
#: name: (environment, threads); each sets GOMP_SPINCOUNT, which ``import netsim`` would set
#: (the step worker imports torch before netsim)
CONFIGS = {"torch default": ({"GOMP_SPINCOUNT": "300000"}, CORES),
           "1 thread": ({"GOMP_SPINCOUNT": "10000"}, 1),
           f"{CORES} threads, passive": ({"OMP_WAIT_POLICY": "PASSIVE", "GOMP_SPINCOUNT": "0"},
                                         CORES),
           f"{CORES} threads, spin 10k (netsim)": ({"GOMP_SPINCOUNT": "10000"}, CORES)}


def _env(extra: dict) -> dict:
    env = {k: v for k, v in os.environ.items() if k not in ("OMP_NUM_THREADS", "MKL_NUM_THREADS",
                                                           "OMP_WAIT_POLICY", "GOMP_SPINCOUNT")}
    return {**env, **extra}


def pdbo(extra: dict, threads: int, rounds: int) -> float:
    """Wall seconds of the PDBO quickstart run (summary.json's wall_time)."""
    with tempfile.TemporaryDirectory() as out:
        subprocess.run([sys.executable, "-m", "netsim.cli", "run", "--set", "algorithms=[pdbo_mtl]",
                        "--set", "train.momentum=0", "--set", f"schedule.rounds={rounds}",
                        "--set", "outputs.figures=false",
                        "--set", "outputs.progress=false", "--out", out, "--threads", str(threads)],
                       env=_env(extra), check=True, stdout=subprocess.DEVNULL)
        summary = json.loads(next(Path(out).glob("*/summary.json")).read_text())
    return summary["algorithms"]["pdbo_mtl"]["wall_time"]


def steps(extra: dict, threads: int) -> dict[str, float]:
    """ms per training step of bench_step.py's MLP (N = 100) and LeNet-5 (N = 10)."""
    out = subprocess.run([sys.executable, __file__, "--step-worker", str(threads)],
                         env=_env(extra), check=True, capture_output=True, text=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def step_worker(threads: int) -> None:
    import torch

    sys.path.insert(0, str(HERE))
    from bench_step import CLASSES, LOCAL, _batched_step, _measure

    torch.set_num_threads(threads)
    device = torch.device("cpu")
    result = {}
    for label, spec, shape, n in (("MLP N=100 ms", {"name": "mlp", "hidden": [64]}, (1, 8, 8), 100),
                                  ("LeNet-5 N=10 ms", {"name": "lenet5"}, (1, 28, 28), 10)):
        gen = torch.Generator().manual_seed(1)
        X = torch.randn(n, LOCAL, *shape, generator=gen)
        Y = torch.randint(0, CLASSES, (n, LOCAL), generator=gen)
        step = _batched_step(spec, shape, n, device, X, Y, gen)
        result[label] = _measure({label: step}, device, 7, 0.0)[label]
    print(json.dumps(result))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--busy", type=int, default=0, help="busy-looping processes beside the runs")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--rounds", type=int, default=3, help="PDBO quickstart rounds")
    ap.add_argument("--only", nargs="+", choices=list(CONFIGS), help="configurations to run")
    ap.add_argument("--step-worker", type=int, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.step_worker:
        return step_worker(args.step_worker)
    busy = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(args.busy)]
    try:
        times: dict[str, dict[str, list[float]]] = {c: {} for c in CONFIGS}
        for _ in range(args.repeats):
            for name, (extra, threads) in CONFIGS.items():
                if args.only and name not in args.only and name != "torch default":
                    continue
                row = {f"PDBO {args.rounds} rounds s": pdbo(extra, threads, args.rounds),
                       **steps(extra, threads)}
                for key, value in row.items():
                    times[name].setdefault(key, []).append(value)
    finally:
        for p in busy:
            p.kill()
            p.wait()
    med = {c: {k: statistics.median(v) for k, v in t.items()} for c, t in times.items() if t}
    base = med["torch default"]
    print(f"{CORES} cores, {args.busy} busy processes, {args.repeats} repeats (medians; "
          "ratio = time / torch default's)")
    for key in base:
        print(f"{key:<22}" + "".join(f"  {c}: {m[key]:.3g} ({m[key] / base[key]:.2f})"
                                     for c, m in med.items()))


if __name__ == "__main__":
    main()
