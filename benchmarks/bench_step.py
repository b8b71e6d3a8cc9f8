"""One training step (sample, forward, backward, SGD update) for N clients: the batched
ClientBank against a per-client ``nn.Module`` loop with ``torch.optim.SGD``, in the same run.

    python benchmarks/bench_step.py [--quick] [--device auto|cpu|cuda] [--threads T]
                                    [--models mlp lenet5 cnn resnet9] [--sizes 8 50]
                                    [--resnet-width 0.25]

The batched step gets the client list as runs pass it (the indices of the clients that finished
their compute phase, here all of them). Models (``--models``, default mlp and lenet5): MLP (64
hidden) on 8x8 digits-shaped inputs, LeNet-5 on 1x28x28, the small CNN (16 channels) on 8x8 and
ResNet-9 (BatchNorm; ``--resnet-width``, default 0.25 of its channels, to fit a CPU's time) on
3x32x32; batch 32, SGD with momentum 0.9, N in {10, 100, 1000} (``--sizes``). Every
convolutional model runs each backend (``loop``, ``vmap``, ``grouped``; ``auto`` marked).
Prints ms per step (median of repeats after warm-up) and speedups over the nn.Module loop. The
process fixes glibc's malloc thresholds as a netsim run does (netsim/util/allocator.py), for both
sides.
"""
from __future__ import annotations

import argparse
import statistics
import time
from typing import Callable

import numpy as np
import torch
import torch.nn.functional as F

from netsim.models import auto_backend, build_model
from netsim.runtime import ClientBank, resolve_device
from netsim.runtime.sgd import SGD
from netsim.util.allocator import tune_malloc

BATCH, LOCAL, CLASSES, LR, MOMENTUM = 32, 64, 10, 0.05, 0.9


def _measure(steps: dict[str, Callable[[], None]], device: torch.device, repeats: int,
             budget_s: float) -> dict[str, float]:
    """Median ms per call of each step after one warm-up call each. Rounds interleave the steps
    so that background load hits all of them alike; at least 3 rounds, then stop at ``repeats``
    or once ``budget_s`` is spent."""
    def run(step: Callable[[], None]) -> float:
        start = time.perf_counter()
        step()
        if device.type == "cuda":
            torch.cuda.synchronize()
        return (time.perf_counter() - start) * 1e3

    for step in steps.values():
        run(step)
    times: dict[str, list[float]] = {name: [] for name in steps}
    spent = 0.0
    while (rounds := len(times[next(iter(steps))])) < repeats and \
            (rounds < 3 or spent < budget_s * 1e3):
        for name, step in steps.items():
            times[name].append(run(step))
            spent += times[name][-1]
    return {name: statistics.median(t) for name, t in times.items()}


def _batched_step(spec: dict, shape: tuple, n: int, device: torch.device,
                  X: torch.Tensor, Y: torch.Tensor, gen: torch.Generator) -> Callable[[], None]:
    model = build_model(spec, shape, CLASSES, "classification", device=device)
    bank = ClientBank(model, n, device, torch.Generator().manual_seed(0))
    rows = torch.arange(n, device=device)[:, None]

    done = np.ones(n, bool)                  # every client finished its compute phase

    def step() -> None:
        # the client list as runs pass it (Algorithm.local_sgd(clients=Algorithm.index(done)))
        clients = torch.as_tensor(np.flatnonzero(done), dtype=torch.long, device=device)
        idx = torch.randint(0, LOCAL, (n, BATCH), generator=gen, device=device)
        bank.sgd_step(X[rows, idx], Y[rows, idx], SGD(lr=LR, momentum=MOMENTUM), clients=clients)
    return step


def _loop_step(spec: dict, shape: tuple, n: int, device: torch.device,
               X: torch.Tensor, Y: torch.Tensor, gen: torch.Generator) -> Callable[[], None]:
    model = build_model(spec, shape, CLASSES, "classification", device=device)
    params = model.init(n, torch.Generator().manual_seed(0), device)
    nets = [model.reference({k: v[i] for k, v in params.items()}).to(device) for i in range(n)]
    opts = [torch.optim.SGD(net.parameters(), lr=LR, momentum=MOMENTUM) for net in nets]

    def step() -> None:
        for i, (net, opt) in enumerate(zip(nets, opts)):
            idx = torch.randint(0, LOCAL, (BATCH,), generator=gen, device=device)
            opt.zero_grad()
            F.cross_entropy(net(X[i, idx]), Y[i, idx]).backward()
            opt.step()
    return step


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="fewer repeats, no N=1000 LeNet")
    ap.add_argument("--device", default="auto")
    ap.add_argument("--threads", type=int, default=0, help="torch threads (0: torch's default)")
    ap.add_argument("--models", nargs="+", default=["mlp", "lenet5"],
                    choices=["mlp", "lenet5", "cnn", "resnet9"])
    ap.add_argument("--sizes", nargs="+", type=int, default=None,
                    help="numbers of clients (default 10 100 1000; --quick: no N=1000 CNN)")
    ap.add_argument("--resnet-width", type=float, default=0.25)
    args = ap.parse_args()
    tune_malloc()                                  # as netsim.run does (netsim/util/allocator.py)
    if args.threads:
        torch.set_num_threads(args.threads)
    device = resolve_device(args.device)
    repeats, budget = (5, 2.0) if args.quick else (21, 20.0)
    conv = ["loop", "vmap", "grouped"]
    every = tuple(args.sizes or (10, 100, 1000))
    small = tuple(args.sizes or ((10, 100) if args.quick else (10, 100, 1000)))
    known = {"mlp": ({"name": "mlp", "hidden": [64]}, (1, 8, 8), every, ["bmm"]),
             "lenet5": ({"name": "lenet5"}, (1, 28, 28), small, conv),
             "cnn": ({"name": "cnn", "channels": 16}, (1, 8, 8), every, conv),
             "resnet9": ({"name": "resnet9", "width": args.resnet_width}, (3, 32, 32), small,
                         conv)}
    cases = [(name, *known[name]) for name in args.models]
    print(f"device {device}, torch {torch.__version__}, {torch.get_num_threads()} threads, "
          f"batch {BATCH}, SGD momentum {MOMENTUM}; auto conv backend: {auto_backend(device)}")
    print(f"{'model':8} {'N':>5} {'backend':>12} {'batched ms':>11} {'loop ms':>10} {'speedup':>8}")
    for label, spec, shape, sizes, backends in cases:
        for n in sizes:
            gen = torch.Generator(device=device).manual_seed(1)
            X = torch.randn(n, LOCAL, *shape, generator=gen, device=device)
            Y = torch.randint(0, CLASSES, (n, LOCAL), generator=gen, device=device)
            names = {b: f"{b} (auto)" if b == auto_backend(device) else b for b in backends}
            steps = {"nn.Module loop": _loop_step(spec, shape, n, device, X, Y, gen)}
            steps.update({names[b]: _batched_step(spec if b == "bmm" else {**spec, "backend": b},
                                                  shape, n, device, X, Y, gen)
                          for b in backends})
            ms = _measure(steps, device, repeats, budget)
            loop_ms = ms.pop("nn.Module loop")
            for name, t in ms.items():
                print(f"{label:8} {n:5d} {name:>12} {t:11.2f} {loop_ms:10.2f} "
                      f"{loop_ms / t:7.1f}x", flush=True)


if __name__ == "__main__":
    main()
