"""Memory a scenario needs, estimated before it runs, against what the device has free.

The estimate counts what grows with the scenario (``netsim validate`` and ``netsim run`` check it
before anything is allocated, and ``run`` again, with the model, once the data is loaded):

- the engine's and the recorder's ``N x N`` arrays: about :data:`ENGINE_BYTES_PER_PAIR` bytes per
  ordered pair (link probabilities, latencies, newest-copy rounds, one exchange's arrival times,
  losses and deliveries), plus the realised links (1 byte per pair and round) and the
  collaboration matrices (4 bytes per pair and evaluation) the run keeps for its results;
- the client banks: ``N x d`` float32 parameters, their gradients and momentum
  (:data:`BANK_COPIES` copies; algorithms that keep more models need more);
- the data: the dataset's samples x features x 4 bytes (``validate``, for datasets that need no
  files; ``run`` checks once the data is loaded, so it is already out of the free memory).

It is a lower bound of the need, so a refusal is certain to be right. Free memory: MemAvailable
of ``/proc/meminfo`` (Linux; elsewhere the CPU check is skipped) or ``torch.cuda.mem_get_info``.
"""
from __future__ import annotations

import math
from pathlib import Path

from netsim.errors import ConfigError
from netsim.rng import Streams

ENGINE_BYTES_PER_PAIR = 64
BANK_COPIES = 3


def human(nbytes: float) -> str:
    """``1.5 GB``-style size (powers of 1000)."""
    for unit in ("B", "kB", "MB", "GB", "TB"):
        if nbytes < 1000 or unit == "TB":
            return f"{nbytes:.1f} {unit}" if unit != "B" else f"{int(nbytes)} B"
        nbytes /= 1000
    raise AssertionError


def estimate(cfg: dict, n_params: int | None = None, data_bytes: int = 0) -> dict[str, int]:
    """Bytes per part of a resolved config's run; banks only when ``n_params`` is known."""
    n, sched = cfg["clients"], cfg["schedule"]
    pairs = (n + 1) ** 2                                     # server algorithms add node N
    evals = sched["rounds"] // sched["eval_every"] + 2
    parts = {"engine N x N arrays": pairs * (ENGINE_BYTES_PER_PAIR + sched["rounds"] + 4 * evals)}
    if n_params is not None:
        parts["client banks"] = BANK_COPIES * 4 * n * n_params
    if data_bytes:
        parts["client data"] = data_bytes
    return parts


def available(device) -> tuple[int | None, str]:
    """(free bytes or None when unknown, where that number comes from) on ``device``."""
    if getattr(device, "type", str(device)) == "cuda":
        import torch
        free, _ = torch.cuda.mem_get_info(device)
        return int(free), f"free on {device}"
    meminfo = Path("/proc/meminfo")
    if not meminfo.is_file():
        return None, "unknown"
    for line in meminfo.read_text().splitlines():
        if line.startswith("MemAvailable:"):
            return int(line.split()[1]) * 1024, "available on the CPU (MemAvailable)"
    return None, "unknown"


def check(cfg: dict, device, n_params: int | None = None, data_bytes: int = 0) -> dict[str, int]:
    """Refuse (ConfigError on ``clients``) a run whose estimate exceeds the free memory."""
    parts = estimate(cfg, n_params, data_bytes)
    free, source = available(device)
    total = sum(parts.values())
    if free is not None and total > free:
        detail = ", ".join(f"{k} {human(v)}" for k, v in parts.items())
        raise ConfigError("clients", cfg["clients"], f"a scenario that fits in the "
                          f"{human(free)} {source}", f"it needs at least {human(total)}: {detail}")
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

