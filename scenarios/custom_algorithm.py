"""An algorithm written in a script: D-PSGD gossip plus a personalisation step (each client
fine-tunes a copy of its gossiped model on its own data and uses the copy), registered with
netsim.register_algorithm and compared with Local, D-PSGD and DiPLe on the quickstart's
clustered data.

    python scenarios/custom_algorithm.py [--out results] [--short]
"""
from __future__ import annotations

import argparse
from dataclasses import dataclass
from pathlib import Path

import netsim
from algorithms.dpsgd import DPSGD, DPSGDParams
from netsim.schema.params import param

HERE = Path(__file__).resolve().parent


@dataclass(frozen=True)
class GossipFineTuneParams(DPSGDParams):
    """D-PSGD's parameters and the fine-tuning's."""

    personal_steps: int = param(5, "local fine-tuning steps per round", lo=1)


@netsim.register_algorithm("gossip_ft")
class GossipFineTune(DPSGD):
    """D-PSGD whose clients use a copy of the gossiped model fine-tuned for a few local steps."""

    params = GossipFineTuneParams
    hp: GossipFineTuneParams

    def __init__(self, ctx):
        super().__init__(ctx)
        self.personal = self.bank.copy()

    def round(self, t: int) -> None:
        super().round(t)                                   # gossip: compute, exchange, mix
        steps = self.hp.personal_steps
        done = self.compute_phase(steps=steps).finished             # simulated time it takes
        self.personal.flat.copy_(super().personal_models())
        self.personal.reset_momentum()
        self.local_sgd(self.personal, steps, clients=self.index(done, self.device))  # batched

    def personal_models(self):
        return self.personal.flat


def main(argv: list[str] | None = None) -> netsim.Results:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default="results", help="results root (default: results)")
    ap.add_argument("--short", action="store_true", help="4 rounds, no figures (a smoke test)")
    args = ap.parse_args(argv)
    scenario = netsim.Scenario.load(HERE / "quickstart.yaml").with_overrides({
        "name": "custom_algorithm", "schedule.rounds": 30,
        "algorithms": ["local", "dpsgd", {"name": "gossip_ft", "personal_steps": 10}, "diple"]})
    if args.short:
        scenario = scenario.with_overrides({"schedule.rounds": 4, "schedule.eval_every": 2,
                                            "outputs.figures": False})
    res = netsim.run(scenario, seeds=[0] if args.short else [0, 1, 2], out=args.out,
                     quiet=True, overwrite=True)
    print(res.summary_frame[["mean_accuracy", "bottom10_accuracy", "bytes_sent"]]
          .round(4).to_string())
    return res


if __name__ == "__main__":
    main()
