"""CoBo's baselines (docs/specifications/baselines.md): Ditto, IFCA and Federated Clustering
against hand computations on the quadratic cluster task (full gradients), their collaboration
matrices, and whole runs over lossy links."""
from __future__ import annotations

import numpy as np
import pytest
import torch

from algorithms.fed_clustering import threshold_clustering
from netsim import Scenario, run
from netsim.analysis.graphs import edges, oracle_matrix
from netsim.errors import ConfigError
from netsim.running.checkpoint import dump_algorithm, load_algorithm
from netsim.running.loop import build_algorithm
from helpers import DIGITS, QUAD, build, play, quad_truth

LR = 0.1


def quad(alg: dict, **data) -> dict:
    """QUAD with one algorithm and optional dataset overrides."""
    over = {"algorithms": [alg]}
    over.update({f"data.dataset.{k}": v for k, v in data.items()})
    return Scenario(QUAD).with_overrides(over).raw


# ------------------------------------------------------------------ Ditto
@pytest.mark.parametrize("global_grad", ["global", "personal"])
def test_ditto_matches_hand_computation(global_grad):
    lam = 0.5
    alg = build(quad({"name": "ditto", "lam": lam, "global_grad": global_grad}))
    mu, a = quad_truth(alg)
    w, v = np.zeros(mu.shape[1]), np.zeros_like(mu)
    play(alg, range(3))
    for _ in range(3):
        at = v if global_grad == "personal" else w[None, :]
        copies = w[None, :] - LR * a[:, None] * (at - mu)          # global copies after E = 1 step
        v = v - LR * (a[:, None] * (v - mu) + lam * (v - w[None, :]))
        w = copies.mean(0)                                         # uniform average
    np.testing.assert_allclose(alg.personal_models().double().numpy(), v, atol=1e-5)
    np.testing.assert_allclose(alg.server_models[0].double().numpy(), w, atol=1e-5)
    np.testing.assert_allclose(alg.collaboration(), np.full((6, 6), 1 / 6))


# ------------------------------------------------------------------ IFCA
@pytest.mark.parametrize("select, aggregation", [("data", "mean"), ("batch", "sum")])
def test_ifca_picks_the_lowest_loss_centre_and_keeps_the_true_centres(select, aggregation):
    alg = build(quad({"name": "ifca", "select": select, "aggregation": aggregation}))
    mu, _ = quad_truth(alg)
    cluster = np.asarray(alg.data.cluster)
    centre = np.stack([mu[cluster == k][0] for k in range(3)])
    perm = np.array([2, 0, 1])                                  # server slot j holds centre perm[j]
    alg.server_models.copy_(torch.as_tensor(centre[perm], dtype=torch.float32))
    play(alg, range(2))
    np.testing.assert_array_equal(perm[alg.server_index], cluster)
    np.testing.assert_allclose(alg.server_models.double().numpy(), centre[perm], atol=1e-6)
    np.testing.assert_allclose(alg.personal_models().double().numpy(), mu, atol=1e-6)
    np.testing.assert_array_equal(edges(alg.collaboration()), oracle_matrix(cluster))
    np.testing.assert_allclose(alg.collaboration().sum(1), 1.0)


def test_ifca_centres_start_apart_and_identical_centres_collapse_to_the_first():
    alg = build(Scenario(DIGITS).with_overrides({"algorithms": ["ifca"]}).raw)
    dist = torch.cdist(alg.server_models, alg.server_models)
    assert alg.k == 3 and dist[~torch.eye(3, dtype=torch.bool)].min() > 0
    zero = build(quad({"name": "ifca"}))                         # the mean model starts at 0
    play(zero, range(1))
    assert (zero.server_index == 0).all()


@pytest.mark.parametrize("device", ["cpu"] + (["cuda"] if torch.cuda.is_available() else []))
def test_ifca_personal_models_follow_every_new_choice_also_after_a_resume(device):
    """The personal model of client i is centre ``j_i`` of its latest choice. Its index used to
    alias the numpy choices only where torch shared their memory (CPU, before a checkpoint):
    on CUDA, and on the CPU after a resume, every client kept centre 0."""
    raw = Scenario(DIGITS).with_overrides({"algorithms": ["ifca"]}).raw
    first = build_algorithm(Scenario(raw), 0, device=device)
    play(first, range(2))
    alg = build_algorithm(Scenario(raw), 0, device=device)
    load_algorithm(alg, dump_algorithm(first))                  # what a resumed run holds
    for a in (first, alg):
        choice = torch.tensor([2, 0, 1, 2, 1, 0])
        a.assign(torch.arange(6, device=a.device), choice)
        assert torch.equal(a.personal_models(), a.server_models[choice.to(a.device)])
        play(a, range(2, 4))
        assert torch.equal(a.personal_models(),
                           a.server_models[torch.as_tensor(a.server_index, device=a.device)])


# ------------------------------------------------------------------ Federated Clustering
def test_threshold_clustering_by_hand():
    cand = torch.tensor([[[0.0, 0.0], [0.1, 0.0], [5.0, 5.0], [5.0, 5.1]]])
    own = torch.zeros(1, 2)
    v, kept = threshold_clustering(cand, own, torch.tensor([1]), rounds=1)
    np.testing.assert_allclose(v.numpy(), [[0.025, 0.0]], atol=1e-7)     # (0 + 0.1 + 2 v) / 4
    np.testing.assert_array_equal(kept.numpy(), [[True, True, False, False]])
    v, _ = threshold_clustering(cand, own, torch.tensor([1]), rounds=2)
    np.testing.assert_allclose(v.numpy(), [[0.0375, 0.0]], atol=1e-7)
    v, kept = threshold_clustering(cand, own, torch.tensor([3]), rounds=1)   # keep everything
    np.testing.assert_allclose(v.numpy(), cand.mean(1).numpy(), atol=1e-6)


@pytest.mark.parametrize("orientation", ["werner", "cobo"])
def test_fc_keeps_its_cluster_and_steps_like_cluster_gd(orientation):
    """Curvature 1, full gradients: TC keeps exactly the cluster, so x_{t+1} = x_t - eta (x_t - mu)."""
    alg = build(quad({"name": "fc", "orientation": orientation}, curvature=1.0))
    mu, _ = quad_truth(alg)
    play(alg, range(3))
    np.testing.assert_allclose(alg.bank.flat.double().numpy(), mu * (1 - (1 - LR) ** 3), atol=1e-5)
    np.testing.assert_allclose(alg.collaboration(), oracle_matrix(alg.data.cluster) / 6 + np.eye(6) / 6)


# ------------------------------------------------------------------ whole runs and config
def test_baselines_run_over_lossy_links(tmp_path):
    sc = Scenario(DIGITS).with_overrides({
        "network.links.p": 0.3, "network.loss": {"p": 0.1},
        "algorithms": [{"name": "ditto", "participation": 0.5}, "ifca",
                       {"name": "fc", "orientation": "cobo", "quantile": 0.2, "tc_rounds": 10}]})
    res = run(sc, out=tmp_path, quiet=True)
    assert np.isfinite(res.metrics["loss"]).all()
    np.testing.assert_allclose(res.arrays("collab", "ditto", 0)["W"], 1 / 6)
    ifca = res.arrays("collab", "ifca", 0)["W"]
    same = ifca > 0                                      # same-cluster indicator, rows normalised
    assert same[:, np.arange(6), np.arange(6)].all() and (same == same.transpose(0, 2, 1)).all()
    np.testing.assert_allclose(ifca, same / same.sum(2, keepdims=True), atol=1e-6)
    assert res.arrays("collab", "fc", 0)["W"].shape == (4, 6, 6)
    assert res.summary["algorithms"]["fc"]["bytes_sent"] > res.summary["algorithms"]["ifca"]["bytes_sent"]


@pytest.mark.parametrize("over, field", [
    ({"data.partition": "iid", "algorithms": ["ifca"]}, "algorithms[0].clusters"),
    ({"data.partition": "iid", "algorithms": ["fc"]}, "algorithms[0].quantile"),
    ({"train.clip": 1.0, "algorithms": ["fc"]}, "algorithms[0].train.clip"),
    ({"train.momentum": 0.9, "algorithms": [{"name": "ditto", "global_grad": "personal"}]},
     "algorithms[0].train.momentum"),
])
def test_config_errors(over, field):
    with pytest.raises(ConfigError) as e:
        Scenario(DIGITS).with_overrides(over).resolve()
    assert e.value.field == field


@pytest.mark.parametrize("alg, bank", [
    ({"name": "fc"}, "bank"), ({"name": "cobo", "gradient": "ema"}, "bank"),
    ({"name": "ditto", "global_grad": "personal"}, "personal"), ({"name": "cobo"}, "bank")])
def test_steps_outside_sgd_step_keep_batchnorm_statistics(alg, bank):
    """Every training step moves the BatchNorm running statistics, also where an algorithm
    updates its models by hand (FC's heavy ball, CoBo's EMA, Ditto's code variant)."""
    a = build(DIGITS, {"model": {"name": "resnet9", "width": 0.0625}, "algorithms": [alg],
                       "network.links": "always"})
    b = getattr(a, bank)
    initial = b.running.clone()
    play(a, range(2))
    assert (b.tracked == 2).all() and not torch.equal(b.running, initial)
