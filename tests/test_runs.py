"""Whole runs through the engine: results contract, reproducibility, budgets, failures, deadlines."""
from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from netsim import Results, Scenario, run
from netsim.cli import DEFAULT_SCENARIO, main
from netsim.results import CLIENT_COLUMNS, METRIC_COLUMNS, NETWORK_COLUMNS

from helpers import TINY, tiny


def test_results_contract(tmp_path):
    res = run(tiny().with_overrides({"outputs.figures": True, "outputs.trace": True}),
              out=tmp_path, quiet=True)
    d = tmp_path / "tiny"
    assert res.dir == d
    m = pd.read_csv(d / "metrics.csv")
    assert tuple(m.columns) == METRIC_COLUMNS
    assert set(m["split"]) == {"val", "test"} and set(m["round"]) == {0, 2, 4}
    assert len(m) == 5 * 3 * 2 * 8
    assert tuple(pd.read_csv(d / "network.csv").columns) == NETWORK_COLUMNS
    clients = pd.read_csv(d / "clients.csv")
    assert tuple(clients.columns) == CLIENT_COLUMNS and list(clients["cluster"]) == [0] * 4 + [1] * 4
    summary = json.loads((d / "summary.json").read_text())
    for alg in ("local", "fedavg", "oracle", "sgp", "dpsgd"):
        s = summary["algorithms"][alg]
        for key in ("seeds", "mean_accuracy", "std_accuracy", "bottom10_accuracy", "client_variance",
                    "improved_over_local", "bytes_sent", "messages_sent", "messages_dropped",
                    "sim_time", "wall_time"):
            assert key in s
    assert summary["algorithms"]["local"]["bytes_sent"] == 0
    assert summary["algorithms"]["fedavg"]["bytes_sent"] > 0
    w = res.arrays("collab", "oracle", 0)
    assert w["W"].shape == (3, 8, 8) and list(w["rounds"]) == [0, 2, 4]
    np.testing.assert_allclose(w["W"][-1][:4, 4:], 0)
    links = res.arrays("links", "sgp", 0)["delivered"]
    assert links.shape == (4, 8, 8) and links.dtype == bool
    cfg = res.config
    assert cfg["network"]["budget"]["peers_per_round"] is None and summary["seeds"] == [0]
    assert Scenario(cfg).resolve() == cfg              # config.yaml re-runs exactly
    figs = {p.name for p in (d / "figures").iterdir()}
    assert {"accuracy_vs_rounds.png", "accuracy_vs_time.png", "partition.png",
            "timeline_sgp_seed0.png"} <= figs
    trace = pd.read_csv(d / "trace" / "sgp_seed0.csv")
    assert {"compute_start", "compute_end", "send", "deliver"} <= set(trace["kind"])


def test_same_seed_same_metrics_other_seed_differs(tmp_path):
    run(tiny(), out=tmp_path / "a", quiet=True)
    run(tiny(), out=tmp_path / "b", quiet=True)
    run(tiny(seed=1), out=tmp_path / "c", quiet=True)
    a, b, c = ((tmp_path / x / "tiny" / "metrics.csv").read_text() for x in "abc")
    assert a == b
    assert a != c
    net = [(tmp_path / x / "tiny" / "network.csv").read_text() for x in "ab"]
    assert net[0] == net[1]


def test_peer_budget_holds_over_a_whole_run(tmp_path):
    res = run(tiny(**{"network.topology": "complete", "network.budget": {"peers_per_round": 2},
                      "algorithms": ["sgp"], "schedule.rounds": 6}), out=tmp_path, quiet=True)
    peers = res.arrays("accounting", "sgp", 0)["peers"]
    assert peers.shape == (6, 8) and peers.max() == 2
    delivered = res.arrays("links", "sgp", 0)["delivered"]
    assert delivered.sum(axis=2).max() <= 2


@pytest.mark.parametrize("alg", ["sgp", "dpsgd"])
def test_gossip_survives_rare_links_and_half_the_nodes_crashing(tmp_path, alg):
    sc = tiny(**{"network.links": {"name": "bernoulli", "p": 0.05},
                 "network.failures": {"crash": {"share": 0.5, "at": 0.05}},
                 "network.compute": {"step_time": 0.01}, "algorithms": [alg],
                 "schedule.rounds": 8})
    res = run(sc, out=tmp_path, quiet=True)
    m = res.metrics
    assert m["loss"].notna().all() and np.isfinite(m["loss"]).all()
    net = res.network
    assert net["messages_sent"].iloc[-1] < net["messages_sent"].iloc[0] or net["messages_sent"].iloc[0] <= 2


def test_deadline_leaves_stragglers_out_of_fedavg(tmp_path):
    sc = tiny(**{"clients": 40, "data.partition": "iid",
                 "network.compute": {"step_time": 0.01, "stragglers": {"share": 0.3, "slowdown": 10}},
                 "network.latency": {"base": 0.001}, "network.links": "always",
                 "network.policy": {"name": "deadline", "deadline": 0.1},
                 "algorithms": ["fedavg"], "schedule.rounds": 5})
    res = run(sc, out=tmp_path, quiet=True)
    net = res.network
    uploads = net["messages_delivered"] - 40          # the broadcast reaches all 40 clients
    assert (uploads / 40).mean() == pytest.approx(0.7, abs=0.03)
    assert net["sim_time"].diff().dropna().round(6).eq(0.1).all()


def test_quickstart_shows_each_methods_point(tmp_path):
    """The quickstart's baselines and its two cheapest learned graphs, on its full schedule
    (seed 0; README.md has all algorithms over 3 seeds): FedAvg fails on the conflicting label
    permutations, the Oracle is the best, and CoBo and pFedGraph learn the 4 clusters (edges
    above half the largest off-diagonal weight of the last W) and beat FedAvg by far."""
    sc = Scenario.load(DEFAULT_SCENARIO)
    keep = [a for a in sc.raw["algorithms"]
            if (a if isinstance(a, str) else a["name"]) in ("local", "fedavg", "oracle",
                                                             "pfedgraph", "cobo")]
    res = run(sc.with_overrides({"algorithms": keep, "outputs.figures": False,
                                 "outputs.progress": False}), out=tmp_path, quiet=True)
    s = res.summary["algorithms"]
    acc = {k: v["mean_accuracy"] for k, v in s.items()}
    # measured: oracle 0.937, local 0.873, pfedgraph 0.932, cobo 0.869, fedavg 0.224
    assert acc["oracle"] > acc["local"] > 0.8 and acc["fedavg"] < 0.35
    assert acc["oracle"] >= max(acc.values())
    for alg in ("pfedgraph", "cobo"):
        assert acc[alg] > acc["fedavg"] + 0.4
        # measured: pfedgraph 1.00 / 0.90, cobo 1.00 / 1.00
        assert s[alg]["collab_precision"] >= 0.8 and s[alg]["collab_recall"] >= 0.8, alg
    assert s["fedavg"]["collab_precision"] < 0.3                # one model for everyone
    assert s["local"]["collab_recall"] == 0                     # works alone


def test_cli_run_with_overrides_and_seeds(tmp_path, capsys):
    path = tmp_path / "tiny.yaml"
    import yaml
    path.write_text(yaml.safe_dump(TINY))
    assert main(["run", str(path), "--set", "algorithms=[local]", "--seeds", "0", "1",
                 "--out", str(tmp_path / "out")]) == 0
    out = capsys.readouterr().out
    assert "local" in out and "results:" in out
    res = Results(tmp_path / "out" / "tiny")
    assert res.summary["algorithms"]["local"]["seeds"] == [0, 1]
    assert set(res.metrics["seed"]) == {0, 1}
