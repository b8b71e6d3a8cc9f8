"""netsim's gossip learning against gossipy's, per local update, in one run.

    PYTHONPATH=. python benchmarks/bench_gossipy.py [--steps 20] [--repeats 3] [--nodes 100]
        [--delta 100] [--gossipy-python /tmp/gossipy_venv/bin/python]

gossipy (PyPI ``gossipy-dfl`` 0.0.1, M. Polato) is an independent gossip-learning simulator that
steps its nodes one at a time in Python. It lives in its own virtual environment, so that
netsim's stays clean:

    python3 -m venv /tmp/gossipy_venv --system-site-packages
    /tmp/gossipy_venv/bin/pip install gossipy-dfl==0.0.1

(with the system torch already there, pip installs no other torch). ``gossipy.data`` imports
torchvision at module level, only for its CIFAR-10 / FashionMNIST loaders; where torchvision is
not importable (PyPI's build does not load beside a CPU torch 2.13) the gossipy side puts an
empty ``torchvision`` module in ``sys.modules`` first. The gossipy side runs in a subprocess of
that interpreter (this same file, ``--worker``), one per repetition; where gossipy cannot be
imported the script says how to install it and exits 0.

Workload, both sides: N = ``--nodes`` (100) nodes, bench_peer's BASE data (scikit-learn digits,
pathological partition, 2 classes per node, about 14 training samples each), MLP 64-128-10
(ReLU), plain SGD lr 0.05 (no momentum, no weight decay), batch 32, cross-entropy, one SGD step
per local update, complete graph, no loss, no evaluation, 1 torch thread.

- netsim: ``algorithms: [gossip_learning]`` (period 0), event-driven with
  ``schedule: {steps: --steps, eval_every: 1e9, links: {name: resample, coherence: 0.01}}``,
  ``network: {topology: complete, compute: {step_time: 0.01}}`` (links always up, netsim's
  default latency of 0.01 s, no loss). The run is built untimed; ``run_loop`` is timed with no
  callbacks, as in bench_async.py. Local updates: ``alg.steps_done.sum() * local_steps``.
- gossipy: ``GossipSimulator`` with ``GossipNode``s (``sync=True``: each node fires once per
  round of ``--delta`` timesteps, at a random offset) and ``StaticP2PNetwork(N)`` (no topology:
  the complete graph), ``AntiEntropyProtocol.PUSH``, ``drop_prob=0``, ``online_prob=1``,
  ``ConstantDelay(0)``, ``sampling_eval=0``; ``TorchModelHandler`` on ``TorchMLP(64, 10,
  (128,))``, ``torch.optim.SGD(lr=0.05)``, ``CrossEntropyLoss``, ``batch_size=32``,
  ``local_epochs=0`` (one step per update), ``CreateModelMode.MERGE_UPDATE``; ``--steps``
  rounds, so N x steps messages and as many updates. The nodes get netsim's own training
  samples (the same partition, via ``DataDispatcher.set_assignments``) and no test samples, so
  neither the nodes nor the dispatcher evaluate. Nodes, models and the initial local update that
  ``init_nodes`` makes are built untimed; ``start`` is timed (it includes gossipy's rich progress
  bar, part of its loop). Local updates: calls of the handler's ``_update`` during ``start``.

Differences gossipy's API leaves (none changes the work of one SGD step):

1. When the update happens: gossipy updates on *receipt* (merge, then one step, per message
   received), so a node makes as many updates in a round as messages it received (0, 1, 2, ...)
   and the total is N per round; netsim's node updates once per wake whatever arrived.
2. The merge: gossipy averages the two models with weight 1/2 (``TorchModelHandler._merge``)
   and keeps the larger age; netsim's is age-weighted, ``a = t_r / (t_k + t_r)``, and merges
   all the models received since the last wake before its one step.
3. The message: gossipy sends a deep copy of the whole handler (model, optimizer) through its
   global cache; netsim copies the model's row into a snapshot tensor.
4. Time: gossipy's clock is integer timesteps, ``--delta`` per round, and its loop visits every
   node at every timestep; netsim's is continuous, a wake every 0.01 s. Messages: gossipy
   delivers them in the timestep they are sent (``ConstantDelay(0)``), netsim 0.01 s later
   (its default latency); both deliver all of them.
5. Batches: netsim draws 32 samples with replacement from the node's own (about 14); gossipy
   takes a random permutation of them, cut at 32, i.e. all of them once.
6. Initial models: gossipy re-initialises each node's model (Xavier-uniform weights, torch's
   default biases) and makes one local update in ``init_nodes`` (untimed, not counted); netsim
   its own initialisation, no initial update.
7. Peer sampling: both uniform over the other N - 1 nodes (gossipy ``choice_not_n``, netsim
   ``rng.integers`` over the out-edges of the complete graph).

Printed: per side, the best of ``--repeats`` interleaved repetitions: seconds, local updates,
microseconds per update; and the ratio gossipy / netsim of the microseconds per update.
"""
from __future__ import annotations

import argparse
import gc
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import torch

GOSSIPY_PYTHON = "/tmp/gossipy_venv/bin/python"
STEP_TIME = 0.01                  # s: one local step (network.compute.step_time)
COHERENCE = 0.01                  # s: one draw of the links (resample)
LR, BATCH, HIDDEN = 0.05, 32, 128
INSTALL = ("python3 -m venv /tmp/gossipy_venv --system-site-packages && "
           "/tmp/gossipy_venv/bin/pip install gossipy-dfl==0.0.1")


# ------------------------------------------------------------------ netsim (system python)
def netsim_scenario(n: int, steps: int) -> dict:
    """bench_peer's BASE workload on ``n`` nodes, gossip learning for ``steps`` wakes each."""
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from bench_peer import BASE
    return {**BASE, "name": "bench_gossipy", "clients": n, "algorithms": ["gossip_learning"],
            "network": {"topology": "complete", "compute": {"step_time": STEP_TIME}},
            "schedule": {"steps": steps, "eval_every": 1.0e9,
                         "links": {"name": "resample", "coherence": COHERENCE}}}


def netsim_timed(cfg: dict) -> tuple[float, int]:
    """Seconds of netsim's run loop of ``cfg`` (built untimed) and the local updates done."""
    from netsim.running.loop import build_algorithm, run_loop
    alg = build_algorithm(cfg)
    gc.collect()
    start = time.perf_counter()
    run_loop(alg, 1, 1, ())
    seconds = time.perf_counter() - start
    return seconds, int(alg.steps_done.sum()) * alg.train.local_steps


def save_data(cfg: dict, path: str) -> None:
    """netsim's per-node training samples of ``cfg``, for the gossipy side."""
    from netsim.running.loop import build_algorithm
    data = build_algorithm({**cfg, "schedule": {**cfg["schedule"], "steps": 1}}).data
    torch.save({"x": data.x["train"].flatten(2), "y": data.y["train"], "n": data.n["train"]},
               path)


# ------------------------------------------------------------------ gossipy (its venv)
def import_gossipy() -> None:
    """Import gossipy, with an empty ``torchvision`` where the real one does not load."""
    try:
        import torchvision  # noqa: F401
    except Exception:                      # missing, or PyPI's build beside a CPU torch
        import types
        sys.modules["torchvision"] = types.ModuleType("torchvision")
    import gossipy.simul  # noqa: F401


def gossipy_timed(data_path: str, steps: int, delta: int, seed: int) -> tuple[float, int]:
    """Seconds of gossipy's simulation loop, ``steps`` rounds of ``delta`` timesteps, and the
    local updates it made."""
    import_gossipy()
    from torch.nn import CrossEntropyLoss
    from gossipy import set_seed
    from gossipy.core import AntiEntropyProtocol, ConstantDelay, CreateModelMode, StaticP2PNetwork
    from gossipy.data import DataDispatcher
    from gossipy.data.handler import ClassificationDataHandler
    from gossipy.model.handler import TorchModelHandler
    from gossipy.model.nn import TorchMLP
    from gossipy.node import GossipNode
    from gossipy.simul import GossipSimulator

    updates = [0, False]                   # updates counted, counting on

    class Counted(TorchModelHandler):
        """The torch handler, counting its updates."""

        def _update(self, data: tuple[torch.Tensor, torch.Tensor]) -> None:
            updates[0] += updates[1]
            super()._update(data)

    set_seed(seed)
    d = torch.load(data_path)
    n = len(d["n"])
    counts = d["n"].tolist()
    x = torch.cat([d["x"][i, :c] for i, c in enumerate(counts)])
    y = torch.cat([d["y"][i, :c] for i, c in enumerate(counts)])
    starts = [sum(counts[:i]) for i in range(n)]
    handler = ClassificationDataHandler(x, y, test_size=0.0)
    dispatcher = DataDispatcher(handler, n=n, eval_on_user=False, auto_assign=False)
    dispatcher.set_assignments([list(range(s, s + c)) for s, c in zip(starts, counts)], None)
    proto = Counted(net=TorchMLP(x.shape[1], 10, (HIDDEN,)), optimizer=torch.optim.SGD,
                    optimizer_params={"lr": LR}, criterion=CrossEntropyLoss(),
                    local_epochs=0, batch_size=BATCH,
                    create_model_mode=CreateModelMode.MERGE_UPDATE)
    nodes = GossipNode.generate(data_dispatcher=dispatcher, p2p_net=StaticP2PNetwork(n),
                                model_proto=proto, round_len=delta, sync=True)
    sim = GossipSimulator(nodes, dispatcher, delta, AntiEntropyProtocol.PUSH, drop_prob=0.0,
                          online_prob=1.0, delay=ConstantDelay(0), sampling_eval=0.0)
    sim.init_nodes(seed)
    gc.collect()
    updates[1] = True
    start = time.perf_counter()
    sim.start(n_rounds=steps)
    seconds = time.perf_counter() - start
    return seconds, updates[0]


def worker(args: argparse.Namespace) -> None:
    """The gossipy side, in gossipy's interpreter: one timed run, as JSON into ``--out``."""
    torch.set_num_threads(1)
    if args.check:
        import_gossipy()
        return
    seconds, updates = gossipy_timed(args.data, args.steps, args.delta, args.seed)
    Path(args.out).write_text(json.dumps({"seconds": seconds, "updates": updates}))


def run_gossipy(python: str, args: argparse.Namespace, data: str, out: str,
                seed: int) -> tuple[float, int]:
    """One gossipy run in a subprocess of ``python``."""
    cmd = [python, __file__, "--worker", "--data", data, "--out", out, "--steps",
           str(args.steps), "--delta", str(args.delta), "--seed", str(seed)]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode:
        sys.exit(f"gossipy run failed ({proc.returncode}):\n{proc.stderr[-3000:]}")
    got = json.loads(Path(out).read_text())
    return got["seconds"], got["updates"]


def gossipy_missing(python: str) -> str | None:
    """Why gossipy cannot be run with ``python`` (None: it can)."""
    if not Path(python).exists():
        return f"{python} does not exist"
    proc = subprocess.run([python, __file__, "--worker", "--check"], capture_output=True,
                          text=True)
    return proc.stderr.strip().splitlines()[-1] if proc.returncode else None


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--steps", type=int, default=20, help="local updates per node")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--nodes", type=int, default=100)
    ap.add_argument("--delta", type=int, default=100, help="gossipy's timesteps per round")
    ap.add_argument("--gossipy-python", default=GOSSIPY_PYTHON,
                    help="a Python where gossipy (gossipy-dfl 0.0.1) is importable")
    ap.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--check", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--data", help=argparse.SUPPRESS)
    ap.add_argument("--out", help=argparse.SUPPRESS)
    ap.add_argument("--seed", type=int, default=0, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.worker:
        return worker(args)
    why = gossipy_missing(args.gossipy_python)
    if why:
        print(f"gossipy is not importable with {args.gossipy_python} ({why}); install it in "
              f"its own venv:\n  {INSTALL}\nthen rerun (or pass --gossipy-python PATH).")
        return
    from netsim.util.threads import use_threads
    use_threads(1)
    torch.set_num_threads(1)
    load = os.getloadavg()[0]
    cfg = netsim_scenario(args.nodes, args.steps)
    best: dict[str, tuple[float, int]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        data, out = f"{tmp}/data.pt", f"{tmp}/out.json"
        save_data(cfg, data)
        for rep in range(args.repeats):
            for side in ("netsim", "gossipy"):
                got = (netsim_timed(cfg) if side == "netsim"
                       else run_gossipy(args.gossipy_python, args, data, out, rep))
                if side not in best or got[0] < best[side][0]:
                    best[side] = got
    print(f"# bench_gossipy: N = {args.nodes}, {args.steps} updates per node, gossipy delta "
          f"{args.delta}, best of {args.repeats}, 1 thread, load average {load:.2f} before, "
          f"{os.getloadavg()[0]:.2f} after, torch {torch.__version__}")
    print(f"{'side':<8}{'s':>8}{'updates':>9}{'us/update':>11}")
    per = {}
    for side, (seconds, updates) in best.items():
        per[side] = 1e6 * seconds / updates
        print(f"{side:<8}{seconds:>8.2f}{updates:>9}{per[side]:>11.1f}")
    print(f"ratio gossipy / netsim (us/update): {per['gossipy'] / per['netsim']:.2f}")


if __name__ == "__main__":
    main()
