"""A user's whole ``netsim run`` of the peer workload against the floor's whole script, in one run.

    python benchmarks/bench_whole.py [--algorithm fedavg] [--rounds 50] [--repeats 5]

Both are timed as a user meets them: a fresh Python process each, from its start to its exit,
with torch's default threads, interleaved ``--repeats`` times so that background load hits them
alike (median and best of the wall times; the ratio of the medians and of the bests).

- ``netsim``: ``netsim run`` (what the console script runs, with this interpreter: ``python -c
  "from netsim.cli import entry; entry()" run ...``) of bench_peer's workload (scikit-learn's digits, 100 clients holding
  2 classes each, MLP 64-128-10, one local SGD step of batch 32 per round, evaluation at the start
  and after the last round, figures off): FedAvg on a star with stragglers, a deadline and 1%
  loss (``--algorithm sgp``: SGP on Bernoulli(0.5) links with latency and 1% loss).
- ``floor``: the same job written by hand as one script (:func:`floor_script`): import torch and
  numpy, read the digits CSV, give each client 2 classes, split off 10% validation and 20% test,
  stack the clients' samples, initialise the MLP, run the rounds on stacked ``[N, ...]`` weights
  with ``baddbmm``/``bmm`` (FedAvg: a weighted average and broadcast every round), evaluate val
  and test, and write the accuracies as JSON. Its partition is drawn by its own code, so its
  accuracy differs a little from netsim's. ``floor, frozen``: the same script with the garbage
  collector settings of netsim's own process (netsim.cli.entry: off while torch loads, then
  ``gc.freeze``; frozen again before the exit, which saves the interpreter's final scan).

Then one more netsim run in a process that times its phases (:func:`phases`): the interpreter's
start and torch's import, netsim's import, the scenario's validation, the clients' data, the
model, the algorithm with its network, the rounds, the evaluations, the recording (metrics and
network rows, round reports, the run's arrays), the summary with its table, and the rest (the
results folder, its lock and manifest, the memory check) and the interpreter's exit. Each is
stated in ms.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

HERE = Path(__file__).resolve().parent


def write_scenario(path: Path, algorithm: str, rounds: int) -> None:
    """bench_peer's scenario of ``algorithm`` as a YAML file."""
    sys.path.insert(0, str(HERE))
    from bench_peer import scenario                      # noqa: E402 (bench_peer imports torch)
    path.write_text(yaml.safe_dump(scenario(algorithm, rounds), sort_keys=False))


def floor_script(out: Path, rounds: int, frozen: bool) -> None:
    """FedAvg on the peer workload written by hand, from the data to a results file; ``frozen``:
    with netsim's own process's collector settings (the collector off while torch loads, then
    ``gc.freeze``, and ``gc.freeze`` again before the exit: netsim.cli.entry)."""
    import gc
    import importlib.util
    if frozen:
        gc.disable()
    import numpy as np
    import torch
    from floor_mlp import gather_batch, mlp_grads
    if frozen:
        gc.freeze()
        gc.enable()

    n_clients, batch, lr, gen = 100, 32, 0.05, torch.Generator().manual_seed(0)
    rng = np.random.default_rng(0)
    root = Path(importlib.util.find_spec("sklearn").submodule_search_locations[0])
    table = np.loadtxt(root / "datasets" / "data" / "digits.csv.gz", delimiter=",")
    x_all, y_all = (table[:, :-1] / 16.0).astype(np.float32), table[:, -1].astype(np.int64)
    shards = np.array_split(np.argsort(y_all, kind="stable"), 2 * n_clients)   # 2 classes each
    order = rng.permutation(2 * n_clients)
    splits: dict[str, list[np.ndarray]] = {"train": [], "val": [], "test": []}
    for i in range(n_clients):
        idx = rng.permutation(np.concatenate([shards[order[2 * i]], shards[order[2 * i + 1]]]))
        n_val, n_test = round(0.1 * len(idx)), round(0.2 * len(idx))
        splits["val"].append(idx[:n_val])
        splits["test"].append(idx[n_val:n_val + n_test])
        splits["train"].append(idx[n_val + n_test:])

    def stack(parts: list[np.ndarray]) -> tuple[torch.Tensor, ...]:
        width = max(len(p) for p in parts)
        rows = np.stack([np.pad(p, (0, width - len(p))) for p in parts])
        n = torch.tensor([len(p) for p in parts])
        return torch.from_numpy(x_all[rows]), torch.from_numpy(y_all[rows]), n

    x, y, n = stack(splits["train"])
    share = (n / n.sum()).float()
    bound1, bound2 = 64 ** -0.5, 128 ** -0.5                  # nn.Linear's initialisation
    params = [torch.empty(128, 64).uniform_(-bound1, bound1, generator=gen),
              torch.empty(128).uniform_(-bound1, bound1, generator=gen),
              torch.empty(10, 128).uniform_(-bound2, bound2, generator=gen),
              torch.empty(10).uniform_(-bound2, bound2, generator=gen)]
    w1, b1, w2, b2 = (p.expand(n_clients, *p.shape).clone() for p in params)
    for _ in range(rounds):
        idx = (torch.rand(n_clients, batch, generator=gen) * n[:, None]).long()
        grads = mlp_grads(*gather_batch(x, y, idx), w1, b1, w2, b2)
        for t, g in zip((w1, b1, w2, b2), grads):
            t.sub_(g, alpha=lr)
            t.copy_(torch.tensordot(share, t, dims=1).expand_as(t))
    accuracy = {}
    for split in ("val", "test"):
        xs, ys, ns = stack(splits[split])
        h = torch.relu(torch.baddbmm(b1[:, None], xs, w1.transpose(1, 2)))
        pred = torch.baddbmm(b2[:, None], h, w2.transpose(1, 2)).argmax(-1)
        mask = torch.arange(xs.shape[1])[None] < ns[:, None]
        accuracy[split] = ((pred == ys) & mask).sum(1).div(ns.clamp(min=1)).tolist()
    out.mkdir(parents=True, exist_ok=True)
    tmp = out / "results.json.tmp"
    tmp.write_text(json.dumps({"rounds": rounds, "accuracy": accuracy}))
    os.replace(tmp, out / "results.json")
    print(f"mean test accuracy {np.mean(accuracy['test']):.4f}")
    if frozen:
        gc.freeze()


def phases(yaml_path: str, out: str, t_launch: float) -> dict[str, float]:
    """One ``netsim run`` in this process with its phases timed (ms); ``t_launch``: the parent's
    ``time.time()`` just before it started this process."""
    import torch                                          # noqa: F401
    t_torch = time.time()
    from netsim import cli
    cli._OWN_PROCESS = True                               # as the console script (cli.entry)
    with cli._loading():                                  # what `netsim run` imports first
        import networkx                                   # noqa: F401
        from netsim.running import recorder, runner
    t_netsim = time.time()
    spent: dict[str, float] = {}

    def timed(owner, name: str, phase: str) -> None:
        fn = getattr(owner, name)

        def wrapper(*args, **kwargs):
            start = time.perf_counter()
            try:
                return fn(*args, **kwargs)
            finally:
                spent[phase] = spent.get(phase, 0.0) + time.perf_counter() - start
        setattr(owner, name, wrapper)

    for owner, name, phase in [
            (runner, "_resolve", "validation"), (runner, "build_client_data", "data"),
            (runner, "build_model", "model"), (runner, "make_algorithm", "algorithm"),
            (runner, "run_loop", "loop"), (recorder.Recorder, "on_eval", "evaluation"),
            (recorder.Recorder, "on_report", "recording"),
            (recorder.Recorder, "on_step", "recording"),
            (recorder.Recorder, "finish", "finish"), (runner, "_finish", "summary"),
            (runner, "_report", "summary")]:
        timed(owner, name, phase)
    sys.argv = ["netsim", "run", yaml_path, "--out", out]
    t_main = time.time()
    try:
        cli.entry()
    except SystemExit:
        pass
    t_end = time.time()
    loop_hooks = spent["evaluation"] + spent["recording"]        # called inside run_loop
    ms = {"start and torch import": t_torch - t_launch, "netsim import": t_netsim - t_torch,
          **{k: spent[k] for k in ("validation", "data", "model", "algorithm")},
          "rounds": spent["loop"] - loop_hooks,
          "evaluation": spent["evaluation"], "recording": spent["recording"] + spent["finish"],
          "summary": spent["summary"]}
    ms["rest (folder, lock, memory check)"] = t_end - t_main - sum(
        spent[k] for k in ("validation", "data", "model", "algorithm", "loop", "finish",
                           "summary"))
    return {k: 1000 * v for k, v in ms.items()}


def timed_process(cmd: list[str]) -> float:
    """Wall seconds of one process, start to exit (its output discarded)."""
    start = time.perf_counter()
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
    return time.perf_counter() - start


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--algorithm", default="fedavg", choices=["fedavg", "sgp"])
    ap.add_argument("--rounds", type=int, default=50)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--floor-child", nargs=2, default=None, help=argparse.SUPPRESS)
    ap.add_argument("--phases-child", nargs=3, default=None, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.floor_child:
        return floor_script(Path(args.floor_child[0]), args.rounds, args.floor_child[1] == "1")
    if args.phases_child:
        yaml_path, out, launch = args.phases_child
        print(json.dumps(phases(yaml_path, out, float(launch))), file=sys.stderr)
        return None
    netsim_cmd = [sys.executable, "-c", "from netsim.cli import entry; entry()"]   # the script
    with tempfile.TemporaryDirectory() as tmp:
        scenario = Path(tmp) / "peer.yaml"
        write_scenario(scenario, args.algorithm, args.rounds)
        times: dict[str, list[float]] = {"floor": [], "floor, frozen": [], "netsim": []}
        for r in range(args.repeats):
            for frozen, key in ((0, "floor"), (1, "floor, frozen")):
                times[key].append(timed_process(
                    [sys.executable, __file__, "--rounds", str(args.rounds),
                     "--floor-child", f"{tmp}/floor{r}_{frozen}", str(frozen)]))
            times["netsim"].append(timed_process(
                [*netsim_cmd, "run", str(scenario), "--out", f"{tmp}/netsim{r}"]))
        launch = time.time()
        child = subprocess.run([sys.executable, __file__, "--phases-child", str(scenario),
                                f"{tmp}/phases", str(launch)], check=True,
                               capture_output=True, text=True)
        whole = 1000 * (time.time() - launch)
        ms = json.loads(child.stderr.strip().splitlines()[-1])
        ms["interpreter exit"] = whole - sum(ms.values())
    print(f"# {args.algorithm}, {args.rounds} rounds, {args.repeats} interleaved repeats, "
          f"load average {os.getloadavg()[0]:.2f}")
    print("| process | median s | best s |\n|---|---|---|")
    for k, v in times.items():
        print(f"| {k} | {statistics.median(v):.3f} | {min(v):.3f} |")
    print()
    for key in ("floor", "floor, frozen"):
        med = statistics.median(times["netsim"]) / statistics.median(times[key])
        best = min(times["netsim"]) / min(times[key])
        print(f"netsim / {key}: {med:.2f}x (medians), {best:.2f}x (bests)")
    print()
    print("| netsim phase | ms |\n|---|---|")
    for k, v in ms.items():
        print(f"| {k} | {v:.0f} |")
    print(f"| total | {sum(ms.values()):.0f} |")


if __name__ == "__main__":
    main()
