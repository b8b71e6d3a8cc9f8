"""A link model written in a script: clients live in regions, and when a region goes down every
link into or out of it fails at once (correlated failures that independent Bernoulli links do
not produce). Registered with netsim.register_link_model and used by a scenario built in code.

    python scenarios/custom_link_model.py [--out results] [--short]

Writes OUT/region_outages/ with the link raster (figures/links_*.png: the outages) and the
accuracy figures, and prints each algorithm's accuracy.
"""
from __future__ import annotations

import argparse

import numpy as np

import netsim
from netsim.links import LinkModel
from netsim.plot import write_run_figures
from netsim.schema import Field


@netsim.register_link_model("region_outage", {
    "regions": Field("int", 3, "clients i with i mod regions = r form region r", lo=1),
    "mean_up": Field("float", 2.0, "mean time a region stays up (simulated s, exponential)",
                     lo=0.0, lo_open=True),
    "mean_down": Field("float", 0.5, "mean outage of a region (simulated s, exponential)",
                       lo=0.0, lo_open=True)})
class RegionOutage(LinkModel):
    """Regions alternate up and down (exponential times); a link is up when both ends' regions
    are up."""

    def __init__(self, adjacency: np.ndarray, rng: np.random.Generator, regions: int = 3,
                 mean_up: float = 2.0, mean_down: float = 0.5):
        super().__init__(adjacency)
        self.rng, self.mean = rng, {True: mean_up, False: mean_down}
        self.region = np.arange(self.n) % regions
        self.state = rng.random(regions) < mean_up / (mean_up + mean_down)
        self.switch = np.array([rng.exponential(self.mean[bool(s)]) for s in self.state])
        self.p_up = mean_up / (mean_up + mean_down)

    def up(self, t: float) -> np.ndarray:
        for r in range(len(self.state)):                 # play every switch up to t
            while self.switch[r] <= t:
                self.state[r] = not self.state[r]
                self.switch[r] += self.rng.exponential(self.mean[bool(self.state[r])])
        alive = self.state[self.region]
        return self.adjacency & alive[:, None] & alive[None, :]

    def availability(self) -> np.ndarray:
        same = self.region[:, None] == self.region[None, :]
        return self.adjacency * np.where(same, self.p_up, self.p_up ** 2)


SCENARIO = {
    "name": "region_outages",
    "clients": 12,
    "data": {"dataset": "digits", "partition": {"name": "label_permutation", "clusters": 3}},
    "model": {"name": "mlp", "hidden": [32]},
    "network": {"topology": "complete",
                "links": {"name": "region_outage", "regions": 3, "mean_up": 2.0,
                          "mean_down": 1.0},
                "latency": {"base": [0.005, 0.02], "bandwidth": 1.0e7},
                "compute": {"step_time": 0.05}},
    "train": {"lr": 0.1, "momentum": 0.5, "batch_size": 16, "local_steps": 5},
    "schedule": {"rounds": 40, "eval_every": 5},
    "algorithms": ["local", "sgp", "dpsgd", "diple"],
    "outputs": {"figures": False},
}


def main(argv: list[str] | None = None) -> netsim.Results:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default="results", help="results root (default: results)")
    ap.add_argument("--short", action="store_true", help="4 rounds, one seed, the link figure "
                    "only (a smoke test)")
    args = ap.parse_args(argv)
    scenario = netsim.Scenario(SCENARIO)
    if args.short:
        scenario = scenario.with_overrides({"schedule.rounds": 4, "schedule.eval_every": 2})
    res = netsim.run(scenario, seeds=[0, 1] if not args.short else [0], out=args.out,
                     quiet=True, overwrite=True)
    print(res.summary_frame[["mean_accuracy", "bottom10_accuracy", "messages_dropped"]]
          .round(4).to_string())
    kinds = ["links"] if args.short else ["links", "accuracy"]
    for path in write_run_figures(res.dir, only=kinds, pdf=not args.short):
        print(path)
    return res


if __name__ == "__main__":
    main()
