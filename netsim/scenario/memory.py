"""Memory a scenario needs, estimated before it runs, against what the device has free.

The estimate counts what grows with the scenario (``netsim validate`` and ``netsim run`` check it
before anything is allocated, and ``run`` again, with the model, once the data is loaded):

- the engine's arrays over the E edges of the base graph (links, latencies, losses, newest-copy
  rounds, one exchange's messages: about :data:`ENGINE_BYTES_PER_EDGE` bytes per edge; E from the
  topology's parameters, :data:`EDGES`) and the links log the run keeps (the delivered edges of
  every round, 4 bytes each, or 1 bit per pair when that is smaller);
- the algorithms' dense ``N x N`` arrays at the peak of a round (each algorithm's
  ``pair_bytes`` per pair of clients; the algorithms run one after the other) or, at the end of
  the run, the stacked copy of the collaboration matrices, whichever is larger;
- the collaboration matrices kept for the results (float32, one per evaluation);
- the client banks: ``N x d`` float32 parameters, their gradients and momentum
  (:data:`BANK_COPIES` copies; algorithms that keep more models need more);
- the data: the dataset's samples x features x 4 bytes (``validate``, for datasets that need no
  files; ``run`` checks once the data is loaded, so it is already out of the free memory).

It is a lower bound of the need, so a refusal is certain to be right (the Python process with
torch imported, about 0.3 GB, comes on top). The free memory and the refusal:
netsim.util.free_memory, which refuses other needs the same way.
"""
from __future__ import annotations

import math

from netsim.util.free_memory import human, require
from netsim.util.rng import Streams

#: measured at the peak of building the engine and playing rounds on sparse random graphs of
#: 2,000-8,000 nodes (tests/test_scale.py's workload, tracemalloc): 260 bytes per edge; 200
#: here, as the estimate is a lower bound of the need
ENGINE_BYTES_PER_EDGE = 200
BANK_COPIES = 3


#: Directed edges of the base graphs on n nodes (expected for the random ones) by topology; the
#: others count 2n, a lower bound (a ring), so that nothing is built to estimate.
EDGES = {
    "complete": lambda n, spec: n * (n - 1),
    "ring": lambda n, spec: n if spec.get("directed") else 2 * n,
    "star": lambda n, spec: 2 * (n - 1),
    "erdos_renyi": lambda n, spec: spec["p"] * n * (n - 1),
    "k_out": lambda n, spec: spec["k"] * n,
    "small_world": lambda n, spec: spec["k"] * n,
    "scale_free": lambda n, spec: 2 * spec["m"] * (n - spec["m"]),
}


def edge_count(cfg: dict) -> int:
    """Directed edges of the scenario's base graph (a server's star included), from
    :data:`EDGES`."""
    n, spec = cfg["clients"], cfg["network"]["topology"]
    count = EDGES.get(spec["name"], lambda n, spec: 2 * n)(n, spec)
    return int(max(count, 2 * n))


def pair_bytes(cfg: dict) -> int:
    """The largest ``pair_bytes`` of the scenario's algorithms (netsim.scenario.memory's doc)."""
    from algorithms import ALGORITHMS

    return max(ALGORITHMS.get(a["name"], "algorithms").obj.pair_bytes for a in cfg["algorithms"])


def estimate(cfg: dict, n_params: int | None = None, data_bytes: int = 0) -> dict[str, int]:
    """Bytes per part of a resolved config's run; banks only when ``n_params`` is known."""
    n, sched = cfg["clients"], cfg["schedule"]
    pairs, edges = n * n, edge_count(cfg)
    evals = sched["rounds"] // sched["eval_every"] + 2
    parts = {"engine and links log (edge lists)":
             edges * ENGINE_BYTES_PER_EDGE + sched["rounds"] * min(4 * edges, pairs // 8),
             "algorithms' N x N arrays": pairs * max(pair_bytes(cfg), 4 * evals),
             "collaboration matrices": pairs * 4 * evals}
    if n_params is not None:
        parts["client banks"] = BANK_COPIES * 4 * n * n_params
    if data_bytes:
        parts["client data"] = data_bytes
    return parts


def check(cfg: dict, device, n_params: int | None = None, data_bytes: int = 0) -> dict[str, int]:
    """Refuse a run whose estimate exceeds the free memory: a ConfigError on ``schedule.rounds``
    when most of the estimate grows with the rounds (the links log, the matrices kept per
    evaluation), else on ``clients``."""
    parts = estimate(cfg, n_params, data_bytes)
    total = sum(parts.values())
    one_round = {**cfg, "schedule": {**cfg["schedule"], "rounds": 1}}
    by_rounds = total - sum(estimate(one_round, n_params, data_bytes).values()) > total / 2
    field, value = (("schedule.rounds", cfg["schedule"]["rounds"]) if by_rounds
                    else ("clients", cfg["clients"]))
    require(total, device, field, value, "a scenario",
            ", ".join(f"{k} {human(v)}" for k, v in parts.items()))
    return parts


def dataset_estimate(cfg: dict) -> tuple[int | None, int]:
    """(parameters per model, data bytes) of a scenario whose dataset needs no files, by loading
    the dataset (from the data stream of the scenario's seed, as its run does: a generated
    dataset is then generated once and cached for the run) and building the model; (None, 0) for
    local-file datasets (not read here)."""
    from netsim.data import DATASETS, load_dataset
    from netsim.data.datasets import _FILES
    from netsim.models import build_model

    spec = DATASETS.resolve(cfg["data"]["dataset"], "data.dataset")
    if spec["name"] in _FILES:
        return None, 0
    ds = load_dataset(spec, Streams(cfg["seed"], cfg["stream_seeds"]).numpy("data"))
    model = build_model(cfg["model"], ds.input_shape, ds.num_classes, ds.task, device="cpu")
    return model.num_params, len(ds) * math.prod(ds.input_shape) * 4

