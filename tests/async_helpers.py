"""Small event-driven scenarios and how to play them (test_async_engine.py, test_adpsgd.py,
test_async_push.py)."""
from __future__ import annotations

import copy

import torch

from netsim.running.loop import build_algorithm

#: 6 clients, a tiny MLP, lossy links redrawn every 50 ms, latency with jitter, finite bandwidth
BASE = {
    "name": "async_tiny", "seed": 0, "clients": 6,
    "data": {"dataset": "digits", "partition": {"name": "iid"}, "max_samples_per_client": 60},
    "model": {"name": "mlp", "hidden": [8]},
    "network": {"topology": "complete", "links": {"name": "bernoulli", "p": 0.8},
                "latency": {"base": [0.005, 0.02], "jitter": {"name": "exponential",
                                                              "scale": 0.002},
                            "bandwidth": 1.0e6},
                "compute": {"step_time": 0.01, "speed": {"name": "lognormal", "sigma": 0.3}}},
    "train": {"lr": 0.1, "batch_size": 4, "local_steps": 1},
    "schedule": {"until": 0.6, "eval_every": 0.2, "links": {"name": "resample",
                                                            "coherence": 0.05}},
    "algorithms": ["adpsgd", "async_push"],
    "outputs": {"figures": False, "progress": False, "trace": True},   # the tests read it
}

#: what each of the three comparison scenarios adds to BASE
SCENARIOS = {
    "loss": {"network.loss": {"p": 0.2}},
    "stragglers": {"network.compute.stragglers": {"share": 0.34, "slowdown": 5.0,
                                                  "jitter": "pareto"},
                   "schedule.links": {"name": "markov", "mean_up": 0.2, "mean_down": 0.05}},
    "failures": {"network.failures": {"churn": {"crash_rate": 2.0, "recover_rate": 8.0,
                                                "share": 0.5},
                                      "crash": {"share": 0.2, "at": 0.3},
                                      "scripted": [{"kind": "partition", "groups": [[0, 1, 2]],
                                                    "t0": 0.1, "t1": 0.25}]}},
}


def scenario(overrides: dict | None = None) -> dict:
    """BASE with dotted-path ``overrides``."""
    raw = copy.deepcopy(BASE)
    for path, value in (overrides or {}).items():
        *parents, key = path.split(".")
        node = raw
        for p in parents:
            node = node.setdefault(p, {})
        node[key] = value
    return raw


def play(raw: dict, index: int = 0, check=None, setup=None):
    """Build algorithm ``index`` of ``raw``, call ``setup(alg)``, play its windows to the end
    with ``check(alg)`` after each. Returns the algorithm."""
    alg = build_algorithm(raw, index)
    if setup is not None:
        setup(alg)

    def emit(hook: str, *args) -> None:    # the run loop's hooks: a window played, not closed
        if hook == "on_report" and check is not None:
            check(alg)

    alg.run_windows(emit)
    return alg


def models(alg) -> torch.Tensor:
    return alg.personal_models().detach().clone()


def spread(rows: torch.Tensor) -> None:
    """Give every client its own model (every algorithm starts from one shared init)."""
    gen = torch.Generator().manual_seed(0)
    rows.copy_(torch.randn(rows.shape, generator=gen))
