"""Cost of the paper-scale scenarios (scenarios/paper/), computed from measurements, not guessed.

    python benchmarks/paper_cost.py [SCENARIO.yaml ...] [--clients 2] [--repeats 3]

For each scenario, at the paper's model, input size and batch size:

- ``d``: parameters per client model (PDBO: the K-learner ensemble);
- ``ms/step``: one client's SGD step (sample, forward, backward, update) measured on this machine's
  CPU with a ClientBank of ``--clients`` clients (median of ``--repeats`` after a warm-up,
  divided by the number of clients);
- ``client-steps``: the training SGD steps of the whole scenario, all algorithms, one seed:
  sum over algorithms of N x rounds x steps per round (PDBO: N x outer steps x T inner steps).
  Evaluations and the algorithm-specific extra passes (CoBo's midpoint gradients, DiPLe's
  bisections, DPFL's GGC rewards, HGP's M Hessian-vector products) come on top;
- ``CPU h``: client-steps x ms/step, the CPU time of the training steps alone;
- ``GPU GiB``: memory of one algorithm's run with every client batched on a GPU: parameters,
  gradients and momentum buffers (3 x N x d x 4 B), the client data (every sample the clients
  hold, 4 B per value; padding not counted; LEAF: N average writers), and the activations
  autograd keeps for one batched step (bytes saved for backward, measured for one client on the
  CPU, x N). Algorithms that keep extra model copies (Ditto, APFL, CoBo's history, DiPLe's
  candidates) need more; the estimate is for the plain step.

Data are random stand-ins with the paper's shapes (netsim.data.standins); nothing is downloaded.
"""
from __future__ import annotations

import argparse
import math
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np
import torch

from netsim import Scenario
from netsim.data import load_dataset
from netsim.data.standins import write_standin
from netsim.models import build_model
from netsim.models.ensemble import EnsembleModel
from netsim.runtime import ClientBank
from netsim.runtime.sgd import SGD

ROOT = Path(__file__).resolve().parent.parent
#: samples of the full public dataset (train + test files), for the data-memory estimate
FULL_SIZE = {"cifar10": 60_000, "cifar100": 60_000, "cinic10": 270_000, "femnist": 805_263,
             "shakespeare": 4_226_158, "emnist": 814_255, "mnist_files": 70_000}
#: writers of the LEAF datasets (a natural-split client holds one writer's samples)
WRITERS = {"femnist": 3_550, "shakespeare": 1_129}


def saved_bytes(fn) -> int:
    """Bytes of the tensors autograd saves for backward while ``fn()`` runs."""
    total = 0

    def pack(t: torch.Tensor) -> torch.Tensor:
        nonlocal total
        total += t.numel() * t.element_size()
        return t
    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        fn()
    return total


def measure(cfg: dict, clients: int, repeats: int, standin: Path) -> dict:
    """Per-client step time, parameters and activation bytes of ``cfg``'s model."""
    spec = cfg["data"]["dataset"]
    ds = load_dataset(spec, np.random.default_rng(0), root=str(standin))
    model = build_model(cfg["model"], ds.input_shape, ds.num_classes, ds.task, "cpu")
    pdbo = [a for a in cfg["algorithms"] if a["name"].startswith("pdbo")]
    if pdbo:
        model = EnsembleModel(model, pdbo[0]["learners"])
    bank = ClientBank(model, clients, "cpu", torch.Generator().manual_seed(0), task=ds.task)
    b = cfg["train"]["batch_size"]
    x = torch.from_numpy(np.array(ds.x[:1])).expand(clients, b, *ds.input_shape).contiguous()
    y = torch.randint(0, ds.num_classes, (clients, b))

    def step() -> None:
        bank.sgd_step(x, y, SGD(lr=1e-3, momentum=cfg["train"]["momentum"]))
    step()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        step()
        times.append(time.perf_counter() - start)
    one = ClientBank(model, 1, "cpu", torch.Generator().manual_seed(0), task=ds.task)
    act = saved_bytes(lambda: one.grad(x[:1], y[:1]))
    return {"d": bank.d, "ms": 1e3 * statistics.median(times) / clients, "act": act,
            "sample_values": math.prod(ds.input_shape), "name": spec["name"]}


def client_steps(cfg: dict) -> int:
    """Training SGD steps of all algorithms of the scenario (one seed)."""
    n, rounds = cfg["clients"], cfg["schedule"]["rounds"]
    total = 0
    for a in cfg["algorithms"]:
        per_round = a.get("inner_steps") or a["train"]["local_steps"]
        total += n * rounds * per_round
    return total


def data_bytes(cfg: dict, m: dict) -> float:
    """Padded client data on the device: every sample a client holds, 4 B per input value."""
    part = cfg["data"]["partition"]
    full = cfg["data"]["dataset"].get("max_samples") or FULL_SIZE[m["name"]]
    if part.get("samples_per_client"):
        held = part["samples_per_client"] * cfg["clients"]
    elif part["name"] == "natural":
        held = full * cfg["clients"] / WRITERS[m["name"]]
    elif part.get("replicate"):
        held = full * part["clusters"]            # every cluster splits the whole dataset
    else:
        held = full
    return held * (m["sample_values"] + 1) * 4.0


def _hours(h: float) -> str:
    return f"{h:,.0f}" if h >= 10 else f"{h:.2f}"


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.strip().splitlines()[0])
    p.add_argument("scenarios", nargs="*", type=Path,
                   default=sorted((ROOT / "scenarios" / "paper").glob("*.yaml")))
    p.add_argument("--clients", type=int, default=2)
    p.add_argument("--repeats", type=int, default=3)
    a = p.parse_args()
    torch.manual_seed(0)
    print(f"torch {torch.__version__}, {torch.get_num_threads()} CPU threads")
    print("| scenario | N | model | d | batch | ms/step (CPU) | client-steps | CPU h | GPU GiB |")
    print("|---|---|---|---|---|---|---|---|---|")
    with tempfile.TemporaryDirectory() as tmp:
        standins: dict[str, Path] = {}
        for path in a.scenarios:
            cfg = Scenario.load(path).resolve()
            spec = cfg["data"]["dataset"]
            key = f"{spec['name']}-{spec.get('split', 'balanced')}"
            if key not in standins:
                standins[key] = write_standin(spec["name"], Path(tmp) / key, samples_per_class=2,
                                              split=spec.get("split", "balanced"))
            m = measure(cfg, a.clients, a.repeats, standins[key])
            steps = client_steps(cfg)
            n = cfg["clients"]
            gib = (3 * n * m["d"] * 4 + data_bytes(cfg, m) + n * m["act"]) / 2**30
            model = cfg["model"]["name"]
            print(f"| {path.stem} | {n} | {model} | {m['d']:,} | {cfg['train']['batch_size']} | "
                  f"{m['ms']:.1f} | {steps:,} | {_hours(steps * m['ms'] / 3.6e6)} | {gib:.1f} |",
                  flush=True)


if __name__ == "__main__":
    main()
