"""The event-driven engine against the round-based one, per local step, in one run.

    python benchmarks/bench_async.py [--steps 50] [--large-steps 100] [--repeats 3]
                                     [--threads 1] [--sizes 100 1000]

Four pairs, each on one workload: asynchronous gradient push against SGP, AD-PSGD against
D-PSGD, and the same synchronous algorithm in both engines (``sync_sgp`` against ``sgp``,
``sync_dpsgd`` against ``dpsgd``: the event-driven engine's own cost, each client waiting for its
round's messages instead of a global round). SGP runs with its push-sum state in float64
(``state_dtype: float64``), as asynchronous gradient push and ``sync_sgp`` keep theirs.

- N = 100: bench_peer's workload (digits, 2 classes per client, MLP 64-128-10, batch 32, lr
  0.05; random directed Bernoulli(0.5) links of the complete graph, latency with jitter, 1%
  loss), ``--steps`` local steps per client.
- N = 1,000: bench_scale's (MLP 64-64-10, batch 2, a Gaussian mixture with 20 samples per
  client, the same links) on an undirected small world (Watts-Strogatz, k = 4, p = 0.3) instead
  of its directed Erdős–Rényi graph, which D-PSGD refuses; ``--large-steps`` local steps per
  client (100: the equivalent of 100 rounds).

Both take a local step in 10 ms of simulated time (``network.compute.step_time``; the model's
FLOPs give under 0.2 ms, and an event-driven run would end before its first messages arrive,
5 ms plus an exponential jitter of mean 2 ms later). A round-based run (``sgp``, ``dpsgd``: wait_all, no timeout) plays as many
rounds of one local step; an event-driven one (``async_push``, ``adpsgd``, batched mode) has
``schedule: {steps}`` and the links redrawn every 10 ms (``resample``), and ends when every
client did its steps.
Each run is built (data, model, algorithm) untimed, and its run loop is timed with no callbacks:
no evaluation, no results, no divergence check. Every configuration runs once per repetition,
interleaved, and the best of the repetitions is kept. Per pair and size: seconds, microseconds
per local step (the seconds over the local steps done), the ratio event-driven / round-based,
the event-driven engine's events (heap pops: arrivals at a downlink, deliveries, computations
ending, wake-ups) and events per second, and the messages it sent (asynchronous gradient push
collects its messages from inboxes: they cost no event).
"""
from __future__ import annotations

import argparse
import gc
import os
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_peer import BASE, RANDOM  # noqa: E402
from bench_scale import scenario as scale_scenario  # noqa: E402
from netsim.running.loop import build_algorithm, run_loop  # noqa: E402
from netsim.util.threads import use_threads  # noqa: E402

#: (event-driven, round-based) pairs
PAIRS = (("async_push", "sgp"), ("adpsgd", "dpsgd"), ("sync_sgp", "sgp"),
         ("sync_dpsgd", "dpsgd"))
STEP_TIME = 0.01                  # s: one local step (network.compute.step_time)
COHERENCE = 0.01                  # s: one draw of the Bernoulli links (event-driven runs)
LARGE_TOPOLOGY = {"name": "small_world", "k": 4, "p": 0.3}     # N = 1,000: undirected, for D-PSGD


def workload(n: int, alg: str, steps: int, event: bool) -> dict:
    """The scenario of size ``n`` running ``alg`` for ``steps`` local steps per client."""
    if n == 100:
        base = {**BASE, "network": RANDOM}
    else:
        base = scale_scenario(n, steps)
        base["network"] = {**base["network"], "topology": LARGE_TOPOLOGY}
    base["network"] = {**base["network"], "compute": {"step_time": STEP_TIME}}
    schedule = ({"steps": steps, "eval_every": 1.0e9,
                 "links": {"name": "resample", "coherence": COHERENCE}} if event
                else {"rounds": steps, "eval_every": steps})
    spec = {"name": "sgp", "state_dtype": "float64"} if alg == "sgp" else alg   # as async_push's
    return {**base, "name": f"bench_async_{n}", "clients": n, "algorithms": [spec],
            "schedule": schedule}


def timed(cfg: dict, event: bool) -> tuple[float, int, int, int]:
    """Seconds of the run loop of ``cfg``, the local steps done, the engine's events and the
    messages it sent (0 and 0 for a round-based run)."""
    alg = build_algorithm(cfg)
    rounds = cfg["schedule"].get("rounds", 1)
    gc.collect()
    start = time.perf_counter()
    run_loop(alg, rounds, rounds, ())
    seconds = time.perf_counter() - start
    if not event:
        return seconds, rounds * alg.n * alg.train.local_steps, 0, 0
    queue = alg.net.queue                   # events popped: those pushed less those still queued
    messages = sum(row["messages_sent"] for row in alg.net.history)
    return (seconds, int(alg.steps_done.sum()) * alg.train.local_steps, queue._seq - len(queue),
            messages)


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--steps", type=int, default=50, help="local steps per client at N = 100")
    ap.add_argument("--large-steps", type=int, default=100,
                    help="local steps per client at N = 1,000")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--sizes", type=int, nargs="+", default=[100, 1000], choices=(100, 1000))
    args = ap.parse_args(argv)
    use_threads(args.threads)
    load = os.getloadavg()[0]
    runs = list(dict.fromkeys((n, alg, args.steps if n == 100 else args.large_steps,
                               alg == pair[0]) for n in args.sizes for pair in PAIRS
                              for alg in pair))
    best: dict[tuple[int, str], tuple[float, int, int, int]] = {}
    for _ in range(args.repeats):
        for n, alg, steps, event in runs:
            got = timed(workload(n, alg, steps, event), event)
            if (n, alg) not in best or got[0] < best[n, alg][0]:
                best[n, alg] = got
    print(f"# bench_async: best of {args.repeats}, {args.threads} thread(s), load average "
          f"{load:.2f} before, {os.getloadavg()[0]:.2f} after, torch {torch.__version__}")
    print(f"{'N':>6} {'event-driven':<12}{'steps':>6}{'s':>8}{'us/step':>9}  {'round-based':<12}"
          f"{'s':>8}{'us/step':>9}{'ratio':>7}{'events':>10}{'events/s':>10}{'messages':>10}")
    for n in args.sizes:
        for ev, rb in PAIRS:
            (es, esteps, events, messages), (rs, rsteps, _, _) = best[n, ev], best[n, rb]
            steps = esteps // n
            print(f"{n:>6} {ev:<12}{steps:>6}{es:>8.2f}{1e6 * es / esteps:>9.1f}  {rb:<12}"
                  f"{rs:>8.2f}{1e6 * rs / rsteps:>9.1f}{(es / esteps) / (rs / rsteps):>7.2f}"
                  f"{events:>10}{events / es:>10.0f}{messages:>10}")


if __name__ == "__main__":
    main()
