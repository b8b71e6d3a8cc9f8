"""Links replayed from a measured trace: 10 clients at two sites whose links follow the contact
trace scenarios/data/contact_trace.csv (format: docs/python_api.md, "The trace link model"),
against i.i.d. Bernoulli links with the same mean availability.

    python scenarios/trace_replay.py [--out results] [--short]

Writes OUT/trace_replay/ and OUT/trace_replay_bernoulli/ (tables, figures, the link rasters).
"""
from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
import pandas as pd

import netsim
from netsim.links import TraceLinks

TRACE = Path(__file__).resolve().parent / "data" / "contact_trace.csv"
LINKS = {"name": "trace", "path": str(TRACE), "symmetric": True, "period": 20.0}
SCENARIO = {
    "name": "trace_replay",
    "clients": 10,
    "data": {"dataset": "digits", "partition": {"name": "label_permutation", "clusters": 2}},
    "model": {"name": "mlp", "hidden": [32]},
    "network": {"topology": "complete", "links": LINKS,
                "latency": {"base": [0.005, 0.02], "bandwidth": 1.0e7},
                "compute": {"step_time": 0.05}},
    "train": {"lr": 0.1, "momentum": 0.5, "batch_size": 16, "local_steps": 5},
    "schedule": {"rounds": 40, "eval_every": 5},
    "algorithms": ["local", "sgp", "dpsgd", "diple"],
}


def mean_availability() -> float:
    """Mean share of time a link of the complete graph is up in the trace."""
    n = SCENARIO["clients"]
    model = TraceLinks(~np.eye(n, dtype=bool), np.random.default_rng(0), **{
        k: v for k, v in LINKS.items() if k != "name"})
    return float(model.availability()[~np.eye(n, dtype=bool)].mean())


def main(argv: list[str] | None = None) -> dict[str, netsim.Results]:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default="results", help="results root (default: results)")
    ap.add_argument("--short", action="store_true", help="4 rounds, no figures (a smoke test)")
    args = ap.parse_args(argv)

    traced = netsim.Scenario(SCENARIO)
    if args.short:
        traced = traced.with_overrides({"schedule.rounds": 4, "schedule.eval_every": 2,
                                        "outputs.figures": False})
    p = mean_availability()
    iid = traced.with_overrides({"name": "trace_replay_bernoulli",
                                 "network.links": {"name": "bernoulli", "p": round(p, 3)}})
    print(f"trace: mean link availability {p:.3f}; the i.i.d. comparison uses p = {p:.3f}")
    out = {}
    for scenario in (traced, iid):
        res = netsim.run(scenario, out=args.out, quiet=True, overwrite=True)
        out[scenario.name] = res
    table = {name: res.summary_frame["mean_accuracy"] for name, res in out.items()}
    print(pd.DataFrame(table).round(4).to_string())
    return out


if __name__ == "__main__":
    main()
