"""DPFL (Alg. 1) runs: the budget B_c through the engine, BGGC's communication steps, the
label-flip case 1 and the random-graph ablation."""
from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from algorithms.dpfl_budget import random_peers, resolve_budget
from netsim import run
from netsim.analysis.graphs import oracle_matrix
from netsim.errors import ConfigError

from helpers import build, scenario

N = 9
TINY = {
    "name": "dpfl_tiny",
    "seed": 0,
    "clients": N,
    "data": {"dataset": "digits", "partition": {"name": "label_permutation", "clusters": 3}},
    "model": {"name": "mlp", "hidden": [16]},
    "network": {"topology": "complete", "links": {"name": "bernoulli", "p": 0.7},
                "latency": {"base": 0.01}},
    "train": {"lr": 0.1, "batch_size": 8, "local_steps": 2},
    "schedule": {"rounds": 5, "eval_every": 5},
    "algorithms": ["dpfl"],
    "outputs": {"figures": False, "progress": False},
}


@pytest.mark.parametrize("value, want", [(None, None), ("inf", None), (float("inf"), None),
                                         (3, 3), (3.0, 3), (0.2, 2), (0.05, 1), (0.5, 5)])
def test_budget_values(value, want):
    assert resolve_budget(value, 9, "b") == want


@pytest.mark.parametrize("spec, field", [
    ({"name": "dpfl", "budget": 1.5}, "algorithms[0].budget"),
    ({"name": "dpfl", "budget": "x"}, "algorithms[0].budget"),
    ({"name": "dpfl", "budget": 0}, "algorithms[0].budget"),
    ({"name": "dpfl", "budget": 1, "budget_counts_self": True}, "algorithms[0].budget"),
    ({"name": "dpfl_random", "tau_init": 10}, "algorithms[0].tau_init"),
])
def test_impossible_configs_name_the_field(spec, field):
    with pytest.raises(ConfigError) as err:
        scenario(TINY, algorithms=[spec]).resolve()
    assert err.value.field == field


def test_local_only_group_must_exist(tmp_path):
    with pytest.raises(ConfigError) as err:
        run(scenario(TINY, algorithms=[{"name": "dpfl", "local_only_group": "malicious"}]),
            out=tmp_path, quiet=True)
    assert err.value.field == "algorithms.dpfl.local_only_group"


def test_random_peers_draws_exactly_the_budget():
    rng = np.random.default_rng(0)
    cand = rng.random((50, 12)) < 0.5
    got = random_peers(rng, cand, 3)
    assert not (got & ~cand).any()
    np.testing.assert_array_equal(got.sum(1), np.minimum(cand.sum(1), 3))


ALGS = [{"name": "dpfl", "budget": 2, "label": "b2"},
        {"name": "dpfl", "budget": 0.3, "label": "b3"},                    # 0.3 N = 3 peers
        {"name": "dpfl", "budget": 3, "budget_counts_self": True, "label": "self3"},   # 2 peers
        {"name": "dpfl_random", "budget": 2, "label": "random2"},
        {"name": "dpfl", "label": "inf"}]
CAPS = {"b2": 2, "b3": 3, "self3": 2, "random2": 2, "inf": N - 1}


@pytest.fixture(scope="module")
def budget_run(tmp_path_factory):
    return run(scenario(TINY, algorithms=ALGS), out=tmp_path_factory.mktemp("budget"), quiet=True)


@pytest.mark.parametrize("label", list(CAPS))
def test_no_client_aggregates_more_than_its_budget(budget_run, label):
    """Every round: the peers a client accepted (engine accounting) = the models it received
    (links); every aggregation uses at most B_c peers, all of them among the models that arrived
    in its round and inside Ω_k."""
    cap = CAPS[label]
    peers = budget_run.arrays("accounting", label, 0)["peers"]
    links = budget_run.arrays("links", label, 0)["delivered"]
    graph = budget_run.arrays("graph", label, 0)
    assert int(graph["budget"]) == (-1 if label == "inf" else cap)
    assert peers.shape[0] == links.shape[0] == TINY["schedule"]["rounds"]
    np.testing.assert_array_equal(peers, links.sum(2))          # no loss: accepted = delivered
    used, omega = graph["used"], graph["omega"]
    assert omega.sum(1).max() <= cap and used.sum(2).max() <= cap
    assert used.any()
    for aggregated, r in zip(used, graph["rounds"]):
        assert not (aggregated & ~links[r]).any()               # aggregated models arrived
        assert not (aggregated & ~omega).any()                  # C_k is a subset of Ω_k
    assert not np.diagonal(used, axis1=1, axis2=2).any()


@pytest.mark.parametrize("label", list(CAPS))
def test_every_communication_step_is_a_budget_window(label):
    """No client receives more than B_c models in one communication step (an exchange: the
    engine's budget window). Preprocessing: BGGC's pass 1 takes ceil((N-1)/B_c) steps, pass 2 at
    most as many; with no cap, one step (the models are kept for pass 2); the random graph needs
    one."""
    alg = build(scenario(TINY, algorithms=ALGS), index=list(CAPS).index(label))
    received: list[list[int]] = []
    exchange = alg.net.exchange

    def spy(*args, **kwargs):
        ex = exchange(*args, **kwargs)
        received[-1].append(int(ex.delivered.sum(1).max()))
        return ex

    alg.net.exchange = spy
    for t in range(TINY["schedule"]["rounds"]):
        received.append([])
        alg.round(t)
        alg.net.end_round()
    assert max(max(r) for r in received if r) <= CAPS[label]
    steps = len(received[alg.r0 - 1])                           # the BGGC round
    batches = math.ceil((N - 1) / CAPS[label])
    if label in ("random2", "inf"):
        assert steps == 1
    else:
        assert batches + 1 <= steps <= 2 * batches


def test_scenario_peer_budget_caps_the_algorithm(tmp_path):
    res = run(scenario(TINY, **{"network.budget": {"peers_per_round": 1},
                                "algorithms": [{"name": "dpfl", "budget": 4}]}),
              out=tmp_path, quiet=True)
    graph = res.arrays("graph", "dpfl", 0)
    training = graph["rounds"][1:]                      # one communication step each
    assert res.arrays("accounting", "dpfl", 0)["peers"][training].max() == 1
    assert graph["used"].sum(2).max() <= 1


def test_local_only_group_trains_exactly_like_local(tmp_path):
    """Label-flip case 1: flipped clients never select collaborators; they draw the same batches
    as under Local, so their models and accuracies are Local's exactly, while benign clients
    (who do collaborate) differ."""
    sc = scenario(TINY, **{"data.partition": {"name": "label_flip", "share": 0.4},
                           "network.links": "always",
                           "algorithms": ["local", {"name": "dpfl", "budget": 3,
                                                    "local_only_group": "malicious"}]})
    res = run(sc, out=tmp_path, quiet=True)
    flipped = (res.clients["group"] == "malicious").to_numpy()
    graph = res.arrays("graph", "dpfl", 0)
    assert not graph["omega"][flipped].any() and not graph["used"][:, flipped].any()
    m = res.metrics
    final = m[(m["round"] == 5) & (m["split"] == "test")].pivot(index="client", columns="algorithm",
                                                                 values="loss")
    np.testing.assert_array_equal(final["dpfl"][flipped], final["local"][flipped])
    assert (final["dpfl"][~flipped] != final["local"][~flipped]).any()


def test_greedy_graph_finds_the_clusters_and_the_random_graph_does_not(tmp_path):
    """Three label-permutation clusters of 4: by the last round most GGC links stay inside the
    true cluster; a random graph under the same budget hits the cluster about 3/11 of the time."""
    sc = scenario(TINY, **{"clients": 12, "network.links": "always", "schedule.rounds": 8,
                           "train.local_steps": 5,
                           "algorithms": [{"name": "dpfl", "budget": 3},
                                          {"name": "dpfl_random", "budget": 3}]})
    res = run(sc, out=tmp_path, quiet=True)
    same = oracle_matrix(res.clients["cluster"].to_numpy())
    share = {}
    for alg in ("dpfl", "dpfl_random"):
        used = res.arrays("graph", alg, 0)["used"][-1]
        share[alg] = (used & same).sum() / used.sum()
    assert share["dpfl"] > 0.8 and share["dpfl_random"] < 0.6


def test_period_and_between(tmp_path):
    """P = 2: rounds without GGC aggregate over the last C_k (reuse) or not at all (local)."""
    res = run(scenario(TINY, **{"network.links": "always", "schedule.rounds": 6, "algorithms": [
        {"name": "dpfl", "budget": 3, "period": 2, "label": "reuse"},
        {"name": "dpfl", "budget": 3, "period": 2, "between": "local", "label": "local"}]}),
        out=tmp_path, quiet=True)
    reuse, local = (res.arrays("graph", a, 0) for a in ("reuse", "local"))
    assert list(reuse["rounds"]) == [1, 2, 3, 4, 5]                  # preprocessing ends at round 1
    assert not local["used"][[2, 4]].any() and local["used"][[1, 3]].any()
    np.testing.assert_array_equal(reuse["used"][2], reuse["used"][1])   # same C_k, all arrived
    np.testing.assert_array_equal(reuse["used"][4], reuse["used"][3])


def test_health_covers_the_models_that_train_under_best_val():
    """With ``report: best_val`` the reported models are the best-validation ones, which stay
    finite when training diverges later; the divergence check must still see the models that
    train (a grid run at lr 0.1 reported round 1's models for rounds after training diverged)."""
    alg = build(scenario(TINY, **{"algorithms": [{"name": "dpfl", "report": "best_val"}]}))
    alg.play(0)
    alg.bank.flat[0] = float("nan")
    assert torch.isfinite(alg.personal_models()).all()
    assert not all(torch.isfinite(v).all() for v in alg.health().values())
