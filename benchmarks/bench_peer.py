"""netsim against a hand-written batched floor and a per-client loop on one workload, in one run.

    python benchmarks/bench_peer.py [--rounds 50] [--repeats 3] [--threads 1] [--no-memory]
                                    [--checkpoint-every K] [--only fedavg sgp ...]

Workload (issue 18): scikit-learn's digits, 100 clients holding 2 classes each (pathological
partition), MLP 64-128-10, 1 local SGD step of batch 32 per round, evaluation only at the end.

- ``floor``: FedAvg with no network, written by hand: stacked parameters ``[N, ...]``, every
  client's batch in one row gather of the flattened data, forward and backward with
  ``baddbmm``/``bmm``, in-place SGD, weighted average and broadcast.
- ``floor_sgp``: SGP with no network, written by hand: the floor's step, then push-sum in the
  Nedić form with the state netsim keeps by default (z float32, w float64), over Bernoulli(0.5)
  directed links of the complete graph, every message delivered (one dense ``[N, N] @ [N, d]``
  product per round). SGP's row also gives its ratio to it: the cost of netsim around SGP's own
  maths; PDBO's per inner step (an inner step is an SGP step). ``floor_sgp64``: the same with
  z in float64, for ``sgp_float64``.
- ``loop``: the same FedAvg with one ``nn.Module`` and ``torch.optim.SGD`` per client.
- netsim, with the full engine on: FedAvg on a star with stragglers (lognormal speeds, 10% of
  the clients 5x slower), a deadline and 1% loss; SGP and D-PSGD (and DPFL, CoBo, DiPLe, PDBO)
  on random directed Bernoulli(0.5) links of the complete graph with latency and 1% loss;
  ``sgp_float64``: SGP with its push-sum state z in float64 (``state_dtype``).

The floor, the loop and netsim's FedAvg start from the same initial weights on the same client
data. Every configuration runs once per repetition, interleaved, so that background load hits them
alike; seconds per round are medians over repetitions of the mean over rounds 2..R (netsim: timed
by a run-loop callback between rounds, so recording and checkpoints are included; setup and the
evaluations are not); ``best``: the configuration's best repetition over the floor's best (issue
34's "best of 3"; SGP's rows also against their own floor); ``engine``: the share of those
rounds spent inside the engine (``Simulator.wall_time``, median over repetitions). netsim's default writes a checkpoint every
``rounds // 4`` rounds once 10 s of wall time have passed since the last one, so these runs of
seconds write none mid-run; ``--checkpoint-every K`` sets ``outputs.checkpoint_every`` (a
checkpoint every K rounds, however short the run) to show their cost. PDBO's round is
``inner_steps`` SGP steps plus HGP: its ratio is also given per inner step against floor_sgp's
round, the round divided by its inner steps and the inner steps alone (``solve_inner``, timed
in place); ``pdbo_mtl`` has the default K = 3 learners (an inner step trains three MLPs),
``pdbo_mtl_k1`` one (an inner step is an SGP step of floor_sgp's model). DPFL and DiPLe are
many batched steps per round: their round is also given per GGC decision step (``algorithms.ggc._step``, one batched over the clients still deciding) and per bisection
iteration (``bisect``'s, one batched over a block of the round's pairs), counted during the timed
rounds; no floor is defined for them. Peak memory
(``VmHWM``) is measured by running each configuration once more in its own process. Accuracy:
mean test accuracy over clients at the end.
"""
from __future__ import annotations

import argparse
import json
import math
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F

from floor_mlp import gather_batch, mlp_grads
from netsim import Scenario, run
from netsim.running.callbacks import Callback
from netsim.running.loop import build_algorithm
from netsim.util.threads import use_threads

CLIENTS, LR, BATCH = 100, 0.05, 32

BASE = {
    "name": "bench_peer", "seed": 0, "clients": CLIENTS,
    "data": {"dataset": "digits", "partition": {"name": "pathological", "classes_per_client": 2},
             "val_fraction": 0.1, "test_fraction": 0.2},
    "model": {"name": "mlp", "hidden": [128]},
    "train": {"lr": LR, "momentum": 0.0, "batch_size": BATCH, "local_steps": 1},
    "outputs": {"figures": False, "progress": False},
}
STAR = {"topology": "star", "loss": {"p": 0.01},
        "compute": {"speed": {"name": "lognormal", "sigma": 0.3},
                    "stragglers": {"share": 0.1, "slowdown": 5.0}},
        "policy": {"name": "deadline", "deadline": 0.05}}
RANDOM = {"topology": "complete", "links": {"name": "bernoulli", "p": 0.5}, "loss": {"p": 0.01},
          "latency": {"base": 0.005, "jitter": {"name": "exponential", "scale": 0.002}}}
PDBO_INNER = 10
#: the configurations without netsim: the two floors and the per-client loop
FLOORS = ("floor", "floor_sgp", "floor_sgp64", "loop")
NETSIM = {
    "fedavg": ("fedavg", STAR),
    "sgp": ("sgp", RANDOM),
    "sgp_float64": ({"name": "sgp", "state_dtype": "float64"}, RANDOM),
    "dpsgd": ("dpsgd", RANDOM),
    "dpfl": ({"name": "dpfl", "budget": 0.1}, RANDOM),
    "cobo": ("cobo", RANDOM),
    "diple": ("diple", RANDOM),
    "pdbo_mtl": ({"name": "pdbo_mtl", "inner_steps": PDBO_INNER, "decay_last": [3],
                  "neumann_steps": 5, "reinit": False, "fixed_batches": False}, RANDOM),
}
NETSIM["pdbo_mtl_k1"] = ({**NETSIM["pdbo_mtl"][0], "learners": 1}, RANDOM)
#: the PDBO configurations (their rows give the ratio per inner step)
PDBO = ("pdbo_mtl", "pdbo_mtl_k1")


def scenario(name: str, rounds: int, checkpoint_every: int | None = None) -> dict:
    """The workload with the network and algorithm of ``name``; ``checkpoint_every``: as
    ``outputs.checkpoint_every`` (None: netsim's default)."""
    alg, network = NETSIM[name]
    outputs = {**BASE["outputs"], "checkpoint_every": checkpoint_every}
    return {**BASE, "network": network, "algorithms": [alg], "outputs": outputs,
            "schedule": {"rounds": rounds, "eval_every": rounds}}


#: batched steps counted so far: DPFL's GGC decisions (``algorithms.ggc._step``, one batched
#: over the deciding clients) and DiPLe's bisection iterations (``bisect``'s, batched over a
#: block of pairs: ``algorithms.diple_weights.BISECTION_FLOATS``), the units of those rows
UNITS = {"dpfl": 0, "diple": 0}
#: seconds spent in PDBO's inner solves (``InnerSGP.solve_inner``) so far
INNER = {"seconds": 0.0}
#: the unit's name in the printed table
UNIT_NAMES = {"dpfl": "GGC decision step", "diple": "bisection iteration"}


def count_units() -> None:
    """Count :data:`UNITS` by wrapping the functions that take them (once per process)."""
    import algorithms.diple_graph as diple_graph
    import algorithms.ggc as ggc
    from algorithms.diple_weights import bisection_iterations
    from algorithms.pdbo_inner import InnerSGP
    if getattr(ggc._step, "counted", False):
        return
    step, bisect, solve = ggc._step, diple_graph.bisect, InnerSGP.solve_inner

    def timed_solve(self):
        start = time.perf_counter()
        try:
            return solve(self)
        finally:
            INNER["seconds"] += time.perf_counter() - start

    def counted_step(*args, **kwargs):
        UNITS["dpfl"] += 1
        return step(*args, **kwargs)

    def counted_bisect(phi, n, eps, search, device=None):
        UNITS["diple"] += bisection_iterations(eps, search)
        return bisect(phi, n, eps, search, device)

    counted_step.counted = True
    ggc._step, diple_graph.bisect = counted_step, counted_bisect
    InnerSGP.solve_inner = timed_solve


class RoundClock(Callback):
    """Times of the ends of rounds, the engine's own time then (``Simulator.wall_time``), the
    :data:`UNITS` counted by then and the seconds of PDBO's inner solves (:data:`INNER`)."""

    def __init__(self):
        self.ends: list[float] = []
        self.engine: list[float] = []
        self.units: list[dict[str, int]] = []
        self.inner: list[float] = []

    def on_round(self, alg, t: int) -> None:
        self.ends.append(time.perf_counter())
        self.engine.append(alg.net.engine_wall_time)
        self.units.append(dict(UNITS))
        self.inner.append(INNER["seconds"])


def per_round(ends: list[float]) -> float:
    """Mean seconds per round over rounds 2..R (round 1 warms up)."""
    return (ends[-1] - ends[0]) / (len(ends) - 1)


#: per netsim configuration of :data:`UNIT_NAMES`: its units per round in each repetition
UNITS_PER_ROUND: dict[str, list[float]] = {}
#: per PDBO configuration: the seconds of its inner solve per round in each repetition
INNER_PER_ROUND: dict[str, list[float]] = {}


def run_netsim(name: str, rounds: int, checkpoint_every: int | None
               ) -> tuple[float, float, float]:
    """Seconds per round, accuracy, and the engine's share of the rounds 2..R (DPFL and DiPLe:
    also their units per round, into :data:`UNITS_PER_ROUND`)."""
    count_units()
    clock = RoundClock()
    with tempfile.TemporaryDirectory() as out:
        res = run(Scenario(scenario(name, rounds, checkpoint_every)), out=out, quiet=True,
                  threads=torch.get_num_threads(), callbacks=[clock])
        acc = res.summary["algorithms"][NETSIM[name][0] if isinstance(NETSIM[name][0], str)
                                        else NETSIM[name][0]["name"]]["mean_accuracy"]
    if name in UNIT_NAMES:
        units = [u[name] for u in clock.units]
        UNITS_PER_ROUND.setdefault(name, []).append(per_round(units))
    if name in PDBO:
        INNER_PER_ROUND.setdefault(name, []).append(per_round(clock.inner))
    return per_round(clock.ends), acc, per_round(clock.engine) / per_round(clock.ends)


class Workload:
    """The clients' data and FedAvg's initial model as netsim builds them."""

    def __init__(self):
        alg = build_algorithm(scenario("fedavg", 1))
        data = alg.data
        self.n = data.n["train"].double()
        self.x = data.x["train"].flatten(2)                  # [N, max_n, 64]
        self.y = data.y["train"]
        self.xt, self.yt, self.nt = data.x["test"].flatten(2), data.y["test"], data.n["test"]
        flat, at, self.init = alg.personal_models().detach(), 0, {}
        for k, shape in alg.ctx.model.shapes.items():      # the flat rows' layout, in order
            size = math.prod(shape)
            self.init[k] = flat[:, at:at + size].reshape(flat.shape[0], *shape).clone()
            at += size
        self.share = (self.n / self.n.sum()).float()

    def batch(self, gen: torch.Generator) -> tuple[torch.Tensor, torch.Tensor]:
        """One batch of BATCH samples per client, uniformly from its own training samples."""
        u = torch.rand(CLIENTS, BATCH, generator=gen)
        idx = (u * self.n[:, None].float()).long()
        return gather_batch(self.x, self.y, idx)

    def accuracy(self, w1, b1, w2, b2) -> float:
        """Mean over clients of the test accuracy of stacked weights."""
        h = torch.relu(torch.baddbmm(b1[:, None], self.xt, w1.transpose(1, 2)))
        out = torch.baddbmm(b2[:, None], h, w2.transpose(1, 2))
        mask = torch.arange(self.xt.shape[1])[None] < self.nt[:, None]
        correct = ((out.argmax(-1) == self.yt) & mask).sum(1)
        return float((correct / self.nt.clamp(min=1)).mean())


KEYS = ("fc1.weight", "fc1.bias", "fc2.weight", "fc2.bias")


def floor_grads(wl: Workload, gen: torch.Generator, w1: torch.Tensor, b1: torch.Tensor,
                w2: torch.Tensor, b2: torch.Tensor) -> tuple[torch.Tensor, ...]:
    """Every client's gradients of ``w1, b1, w2, b2`` on a fresh batch, by hand (floor_mlp)."""
    return mlp_grads(*wl.batch(gen), w1, b1, w2, b2)


def run_floor(wl: Workload, rounds: int) -> tuple[float, float]:
    """FedAvg by hand: stacked forward/backward with baddbmm/bmm, no network."""
    params = [wl.init[k].clone() for k in KEYS]
    gen, ends, share = torch.Generator().manual_seed(0), [], wl.share
    for _ in range(rounds):
        for t, g in zip(params, floor_grads(wl, gen, *params)):
            t.sub_(g, alpha=LR)
        for t in params:                                  # FedAvg: weighted mean, broadcast
            t.copy_(torch.tensordot(share, t, dims=1).expand_as(t))
        ends.append(time.perf_counter())
    return per_round(ends), wl.accuracy(*params)


def run_floor_sgp(wl: Workload, rounds: int, dtype: torch.dtype = torch.float32
                  ) -> tuple[float, float]:
    """SGP by hand, no network: the floor's step, then push-sum in the Nedić form (netsim's
    default) over Bernoulli(0.5) directed links of the complete graph, every message delivered:
    ``z <- P z + delta``, ``w <- P w``, ``x = z / w``, the state z in ``dtype`` (netsim's
    ``state_dtype``) and w in float64 as netsim keeps them, one dense ``[N, N] @ [N, d]`` product
    (P column-stochastic, uniform over each sender's realised out-links and itself)."""
    flat = torch.cat([wl.init[k].flatten(1) for k in KEYS], 1)          # models x [N, d]
    delta = torch.empty_like(flat)
    sizes = [wl.init[k][0].numel() for k in KEYS]
    params = [v.view_as(wl.init[k]) for v, k in zip(flat.split(sizes, 1), KEYS)]
    steps = [v.view_as(wl.init[k]) for v, k in zip(delta.split(sizes, 1), KEYS)]
    z, w = flat.to(dtype), torch.ones(CLIENTS, 1, dtype=torch.float64)
    work = torch.empty_like(z)
    rng, gen, ends = np.random.default_rng(0), torch.Generator().manual_seed(0), []
    for _ in range(rounds):
        for d, g in zip(steps, floor_grads(wl, gen, *params)):
            torch.mul(g, -LR, out=d)
        up = rng.random((CLIENTS, CLIENTS)) < 0.5                   # up[i, j]: link j -> i
        np.fill_diagonal(up, False)
        share = 1.0 / (1.0 + up.sum(0))
        np.fill_diagonal(up, True)
        P = torch.from_numpy(up * share[None, :])
        z, w = P.to(dtype) @ z, P @ w
        z.add_(work.copy_(delta))
        flat.copy_(torch.div(z, w.to(dtype), out=work))
        ends.append(time.perf_counter())
    return per_round(ends), wl.accuracy(*params)


def run_loop(wl: Workload, rounds: int) -> tuple[float, float]:
    """FedAvg with one nn.Module and optimiser per client."""
    models = []
    for i in range(CLIENTS):
        m = torch.nn.Sequential(torch.nn.Linear(64, 128), torch.nn.ReLU(), torch.nn.Linear(128, 10))
        with torch.no_grad():
            for (name, _), q in zip(wl.init.items(), m.parameters()):
                q.copy_(wl.init[name][i])
        models.append((m, torch.optim.SGD(m.parameters(), lr=LR)))
    gen, ends, share = torch.Generator().manual_seed(0), [], wl.share
    for _ in range(rounds):
        x, y = wl.batch(gen)
        for i, (m, opt) in enumerate(models):
            opt.zero_grad()
            F.cross_entropy(m(x[i]), y[i]).backward()
            opt.step()
        with torch.no_grad():
            for qs in zip(*(m.parameters() for m, _ in models)):
                mean = sum(s * q for s, q in zip(share.tolist(), qs))
                for q in qs:
                    q.copy_(mean)
        ends.append(time.perf_counter())
    stacked = [torch.stack([q.detach() for q in qs]) for qs in
               zip(*(m.parameters() for m, _ in models))]
    return per_round(ends), wl.accuracy(*stacked)


def measure(name: str, rounds: int, wl: Workload | None,
            checkpoint_every: int | None = None) -> tuple[float, float, float]:
    """Seconds per round, accuracy and the engine's share (NaN: no engine)."""
    if name == "floor":
        return (*run_floor(wl, rounds), float("nan"))
    if name == "floor_sgp":
        return (*run_floor_sgp(wl, rounds), float("nan"))
    if name == "floor_sgp64":
        return (*run_floor_sgp(wl, rounds, torch.float64), float("nan"))
    if name == "loop":
        return (*run_loop(wl, rounds), float("nan"))
    return run_netsim(name, rounds, checkpoint_every)


def peak_rss_mb() -> float:
    """This process's peak resident memory: ``VmHWM`` (reset by exec, unlike ``ru_maxrss``,
    which a child started by fork + exec inherits from its parent), else ``ru_maxrss``."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def peak_mb(name: str, rounds: int, threads: int, checkpoint_every: int | None) -> float:
    """``ru_maxrss`` of a fresh process running ``name`` once."""
    flags = [] if checkpoint_every is None else ["--checkpoint-every", str(checkpoint_every)]
    out = subprocess.run([sys.executable, __file__, "--child", name, "--rounds", str(rounds),
                          "--threads", str(threads), *flags],
                         check=True, capture_output=True, text=True)
    return json.loads(out.stdout.splitlines()[-1])["peak_mb"]


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rounds", type=int, default=50)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--only", nargs="+", default=None, help="netsim algorithms (default: all)")
    ap.add_argument("--no-memory", action="store_true")
    ap.add_argument("--checkpoint-every", type=int, default=None,
                    help="a checkpoint every K rounds (default: netsim's, none in runs of "
                         "seconds)")
    ap.add_argument("--child", default=None, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    use_threads(args.threads)
    if args.child:
        wl = Workload() if args.child in FLOORS else None
        measure(args.child, args.rounds, wl, args.checkpoint_every)
        print(json.dumps({"peak_mb": peak_rss_mb()}))
        return
    names = [*FLOORS, *(args.only or NETSIM)]
    wl = Workload()
    times: dict[str, list[float]] = {n: [] for n in names}
    shares: dict[str, list[float]] = {n: [] for n in names}
    acc: dict[str, float] = {}
    for _ in range(args.repeats):
        for name in names:
            sec, acc[name], share = measure(name, args.rounds, wl, args.checkpoint_every)
            times[name].append(sec)
            shares[name].append(share)
    med = {n: statistics.median(t) for n, t in times.items()}
    best = {n: min(t) for n, t in times.items()}
    engine = {n: statistics.median(s) for n, s in shares.items()}
    mem = {n: (float("nan") if args.no_memory else
               peak_mb(n, args.rounds, args.threads, args.checkpoint_every)) for n in names}
    load = os.getloadavg()[0]
    print(f"# {CLIENTS} clients, {args.rounds} rounds, {args.repeats} repetitions, "
          f"{args.threads} thread(s), load average {load:.2f}, torch {torch.__version__}"
          + (f", a checkpoint every {args.checkpoint_every} rounds" if args.checkpoint_every
             else ""))
    print(f"{'':<10}{'s/round':>10}{'x floor':>9}{'best':>7}{'x loop':>8}{'engine':>8}"
          f"{'peak MB':>9}{'accuracy':>10}")
    for n in names:
        extra = ""
        if n in PDBO:
            inner = statistics.median(INNER_PER_ROUND[n]) / PDBO_INNER
            extra = (f"   per inner step: {med[n] / PDBO_INNER / med['floor_sgp']:.2f}x floor_sgp"
                     f" (the inner steps alone: {inner / med['floor_sgp']:.2f}x)")
        if n in ("sgp", "sgp_float64"):
            own = "floor_sgp" if n == "sgp" else "floor_sgp64"
            extra = f"   {med[n] / med[own]:.2f}x {own} (best: {best[n] / best[own]:.2f}x)"
        if n in UNIT_NAMES:
            units = statistics.median(UNITS_PER_ROUND[n])
            extra = (f"   {med[n] / units * 1000:.2f} ms per {UNIT_NAMES[n]} ({units:.0f} per "
                     "round)")
        print(f"{n:<10}{med[n]:>10.5f}{med[n] / med['floor']:>9.2f}"
              f"{best[n] / best['floor']:>7.2f}{med[n] / med['loop']:>8.2f}"
              f"{engine[n]:>8.1%}{mem[n]:>9.0f}{acc[n]:>10.4f}{extra}")


if __name__ == "__main__":
    main()
