"""A broadcast's receivers start their local work at their own model's arrival (simulated time),
even when the engine's clock has moved on waiting for a lost or later message."""
from __future__ import annotations

import numpy as np

import algorithms.fedavg as fedavg
from netsim import Scenario, run

from helpers import TINY

STAR = {"topology": {"name": "star"}, "loss": {"p": 0.1},
        "latency": {"base": 0.001, "bandwidth": 1.0e6},
        "policy": {"name": "deadline", "deadline": 1.0}}
SCEN = dict(TINY, clients=20, network=STAR, algorithms=["fedavg"],
            schedule={"rounds": 6, "eval_every": 6})


def test_deadline_fedavg_aggregates_every_round_despite_lost_downlinks(tmp_path, monkeypatch):
    """With 10% loss, most rounds lose a downlink message, and the engine waits for it until the
    deadline; the other clients' work must still count (it used to start at the deadline, so
    those rounds aggregated no client at all)."""
    arrived, starts = [], []
    aggregate, broadcast = fedavg.ServerAveraging.aggregate, fedavg.ServerAveraging.broadcast

    def count(self, mask):
        arrived.append(int(mask.sum()))
        return aggregate(self, mask)

    def record(self, *args, **kwargs):
        comp, received = broadcast(self, *args, **kwargs)
        starts.append((comp.start[received], self.net.now))
        return comp, received

    monkeypatch.setattr(fedavg.ServerAveraging, "aggregate", count)
    monkeypatch.setattr(fedavg.ServerAveraging, "broadcast", record)
    run(Scenario(SCEN), out=tmp_path, quiet=True)
    assert min(arrived) >= 10, arrived             # 20 x 0.9 x 0.9 = 16 expected per round
    # receivers start at their own arrival: distinct times (the server's uplink is a queue)
    for start, _ in starts:
        assert np.unique(start).size == start.size
