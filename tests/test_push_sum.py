"""Push-sum under lossy and late links (netsim.runtime.pushsum): running sums keep the mass and
the exact average, the papers' idealised push-sum loses both; divergence is reported, never a
number; graphs without in-links are warned about and stay finite."""
from __future__ import annotations

import warnings

import numpy as np
import pytest
import torch

from netsim import Scenario, run
from netsim.running.callbacks import Diverged
from netsim.running.loop import HealthCheck, finite_rows
from netsim.links.edges import Edges
from netsim.runtime.mixing import push_sum_shares
from netsim.runtime.pushsum import PushSum, check_graph
from netsim.sim.store import InFlight
from helpers import build, play

N = 20


def frozen(recovery: str, form: str, rounds: int, name: str = "sgp", **options) -> Scenario:
    """lr 0, 20 nodes, Bernoulli(0.5) directed links, 20% i.i.d. loss and a deadline that
    makes about 10% of the sent messages late."""
    return Scenario({
        "name": "frozen", "seed": 0, "clients": N,
        "data": {"dataset": "gaussian_mixture", "partition": {"name": "iid"}},
        "model": {"name": "logreg"},
        "network": {"topology": "complete", "links": {"name": "bernoulli", "p": 0.5},
                    "loss": {"p": 0.2},
                    "latency": {"base": 0.01, "jitter": {"name": "exponential", "scale": 0.01}},
                    "compute": {"step_time": 0.01},
                    "policy": {"name": "deadline", "deadline": 0.021}},
        "train": {"lr": 0.0, "batch_size": 4, "local_steps": 1},
        "schedule": {"rounds": rounds, "eval_every": rounds},
        "algorithms": [{"name": name, "loss_recovery": recovery, **options,
                        **({"form": form} if name == "sgp" else {})}],
        "outputs": {"figures": False, "progress": False}})


def run_frozen(recovery: str, form: str, rounds: int = 2000, name: str = "sgp", **options):
    """The SGP algorithm after ``rounds`` rounds from distinct random models, the initial
    average, and the share of sent messages that were lost and late."""
    alg = build(frozen(recovery, form, rounds, name, **options))
    gen = torch.Generator().manual_seed(1)
    alg.bank.flat.copy_(torch.randn(alg.bank.flat.shape, generator=gen))
    if alg.push_sum is not None:
        alg.z = alg.push_sum.bias(alg.bank.flat, alg.w)
    average = alg.bank.flat.double().mean(0)
    seen = {"sent": 0, "lost": 0, "late": 0}
    exchange = alg.exchange

    def counting(*args, **kwargs):
        ex = exchange(*args, **kwargs)
        for key in seen:
            seen[key] += int(getattr(ex, key).sum())
        return ex

    alg.exchange = counting
    play(alg, range(rounds))
    lost, late, sent = seen["lost"], seen["late"], seen["sent"]
    return alg, average, lost / sent, late / sent


@pytest.mark.parametrize("form", ["nedic", "assran"])
def test_running_sums_keep_the_mass_and_the_exact_average_under_loss_and_lateness(form):
    """With the float64 state (``state_dtype: float64``) the average is kept to 1e-5 (the
    float32 models' own rounding): no mass is lost."""
    alg, average, lost, late = run_frozen("running_sums", form, state_dtype="float64")
    assert 0.18 < lost < 0.22 and 0.07 < late < 0.13
    flight = alg.net.store.mass.total()[1]
    total = float(alg.w.sum() + flight.sum())
    assert abs(total - N) / N < 1e-6
    assert float(flight.sum()) > 1.0                     # much of the mass is in flight ...
    assert float((alg.bank.flat.double() - average).abs().max()) < 1e-5   # ... none lost


def test_the_float32_state_keeps_the_weights_exact_and_the_average_to_float32_rounding():
    """The default ``state_dtype: float32``: z and its mass in flight in float32, w in float64.
    After 2,000 lossy rounds the weights' mass is exact and the models agree on the initial
    average up to float32 rounding accumulated over the rounds (1.8e-5 for unit-variance
    values)."""
    alg, average, _, _ = run_frozen("running_sums", "nedic")
    assert alg.z.dtype == torch.float32 and alg.w.dtype == torch.float64
    assert abs(float(alg.w.sum() + alg.net.store.mass.total()[1].sum()) - N) / N < 1e-9
    err = float((alg.bank.flat.double() - average).abs().max())
    assert 1e-6 < err < 1e-4                 # float64: 3e-8 (the float32 models themselves)


def test_the_state_is_float32_with_running_sums_and_float64_for_the_idealised_push_sum():
    """``state_dtype: auto``: without recovery the lost mass makes w and z decay geometrically
    (w ~ 1e-100 after the 2,000 rounds below), which a float32 z cannot follow below 1e-38."""
    assert PushSum(2).dtype == torch.float32 and PushSum(2, "none").dtype == torch.float64
    assert PushSum(2, "none", state_dtype="float32").dtype == torch.float32


@pytest.mark.parametrize("form", ["nedic", "assran"])
def test_idealised_push_sum_loses_the_mass_and_the_average(form):
    alg, average, _, _ = run_frozen("none", form)
    assert float(alg.w.sum()) < 1e-100                   # geometric decay of the weights
    assert float((alg.bank.flat.double() - average).abs().max()) > 0.05


def test_dpsgd_drifts_under_loss_and_its_running_sum_variant_keeps_the_average():
    """D-PSGD gives a missing message's weight to the receiver: the nodes agree on a value off
    the initial average (by 0.13 at most, 0.035 on average per coordinate, for initial values
    of unit variance); push-sum with the Metropolis split and running sums keeps it."""
    plain, average, _, _ = run_frozen("none", "", rounds=100, name="dpsgd")
    drift = float((plain.bank.flat.double() - average).abs().max())
    assert drift > 0.05
    robust, average, _, _ = run_frozen("running_sums", "", rounds=100, name="dpsgd")
    assert float((robust.bank.flat.double() - average).abs().max()) < 1e-5
    assert abs(float(robust.w.sum() + robust.net.store.mass.total()[1].sum()) - N) < 1e-9


def test_a_missed_share_arrives_with_the_next_message_on_its_edge():
    """Node 1 pushes half its state to node 0 twice; the first message is lost: the second
    delivers both shares (the running sum minus the last one consumed)."""
    ps = PushSum(2, mass=InFlight())
    z, w = torch.tensor([[0.0], [4.0]], dtype=torch.float64), ps.fresh_weights()
    e = Edges(2, [1], [0])                                       # the edge 1 -> 0
    up, lost = np.array([True]), np.array([False])
    z1, w1 = ps.step_uniform([z, w], e.key, e.src, up, lost)
    assert z1.tolist() == [[0.0], [2.0]] and w1.tolist() == [[1.0], [0.5]]
    assert [float(f.sum()) for f in ps.mass.total()] == [2.0, 0.5]
    z2, w2 = ps.step_uniform([z1, w1], e.key, e.src, up, up)
    assert z2.tolist() == [[3.0], [1.0]] and w2.tolist() == [[1.75], [0.25]]
    assert ps.mass.keys.size == 0                                # nothing left in flight
    none = PushSum(2, "none")
    z1, w1 = none.step_uniform([z, w], e.key, e.src, up, lost)
    assert float(z1.sum()) == 2.0 and float(w1.sum()) == 1.5     # the share is gone


def test_lossless_running_sums_equal_the_papers_push_sum_and_hold_nothing():
    rng = np.random.default_rng(0)
    z = torch.tensor(rng.normal(size=(6, 3)))
    w = torch.ones(6, 1, dtype=torch.float64)
    e = Edges.from_matrix((rng.random((6, 6)) < 0.5) & ~np.eye(6, dtype=bool))
    up = np.ones(len(e), bool)
    a = PushSum(6, mass=InFlight()).step_uniform([z, w], e.key, e.src, up, up)
    b = PushSum(6, "none").step_uniform([z, w], e.key, e.src, up, up)
    assert all(torch.allclose(x, y, rtol=0, atol=1e-12) for x, y in zip(a, b))
    assert torch.allclose(a[1].sum(), torch.tensor(6.0, dtype=torch.float64))


def small(algorithms: list, **over) -> Scenario:
    base = {"name": "tiny", "seed": 0, "clients": 8,
            "data": {"dataset": "digits", "partition": {"name": "iid"}},
            "model": {"name": "logreg"},
            "network": {"topology": "complete", "links": {"name": "bernoulli", "p": 0.6},
                        "loss": {"p": 0.2}},
            "train": {"lr": 0.1, "batch_size": 8, "local_steps": 1},
            "schedule": {"rounds": 6, "eval_every": 2},
            "algorithms": algorithms,
            "outputs": {"figures": False, "progress": False}}
    return Scenario(base).with_overrides(over)


def test_a_diverged_algorithm_is_reported_and_the_others_are_unchanged(tmp_path, capsys):
    algs = [{"name": "sgp"}, {"name": "local", "label": "exploding", "train": {"lr": 1e38}},
            {"name": "dpsgd"}]
    res = run(small(algs), out=tmp_path / "a", quiet=False)
    table = capsys.readouterr().out
    summary = res.summary["algorithms"]
    bad = summary["exploding"]
    assert bad["mean_accuracy"] is None and bad["bottom10_accuracy"] is None
    (d,) = bad["diverged"]
    assert d["seed"] == 0 and d["round"] == 2 and 0 <= d["client"] < 8 and "model" in d["what"]
    assert "exploding" in table and "DIVERGED: seed 0, round 2" in table
    metrics = res.metrics
    assert set(metrics[metrics.algorithm == "exploding"]["round"]) == {0}   # kept, finite
    assert np.isfinite(metrics["loss"]).all()
    alone = run(small([algs[0], algs[2]]), out=tmp_path / "b", quiet=True).summary["algorithms"]
    for label in ("sgp", "dpsgd"):
        assert summary[label]["per_seed"]["0"]["mean_accuracy"] == \
            alone[label]["per_seed"]["0"]["mean_accuracy"]


def test_the_divergence_check_finds_every_non_finite_row():
    x = torch.randn(6, 50, generator=torch.Generator().manual_seed(0))
    x[1, 3], x[2, 0], x[3, 49], x[4, 7] = float("inf"), float("-inf"), float("nan"), 3e38
    assert torch.equal(finite_rows(x), torch.isfinite(x).all(1))
    assert finite_rows(torch.zeros(2, 0)).all()
    huge = torch.full((3, 4), 3e38)                 # finite entries whose total overflows
    assert not torch.isfinite(huge.sum()) and finite_rows(huge).all()
    assert finite_rows(x[[0, 5]]).all()             # a finite total: every row at once


def test_a_diverged_shared_model_names_its_first_client():
    """Server models checked once (``(x[K, d], rows[N])``): the first client of a diverged
    group is reported, as when every client's copy is checked."""
    class Shared:
        def __init__(self, models, rows):
            self.models, self.rows = models, rows

        def health(self):
            return {"model": (self.models, self.rows)}

    models = torch.zeros(3, 4)
    models[2, 1] = float("nan")
    rows = torch.tensor([0, 1, 1, 2, 0, 2])
    HealthCheck().on_round(Shared(torch.zeros(3, 4), rows), 0)
    with pytest.raises(Diverged) as err:
        HealthCheck().on_round(Shared(models, rows), 4)
    assert (err.value.round, err.value.client) == (5, 3)


def test_a_vanished_or_non_finite_push_sum_weight_stops_the_run():
    """The round's check passes healthy tensors at once (one reduction) and finds the first bad
    client otherwise: a weight at or below MIN_PUSH_SUM_WEIGHT, a NaN weight, a NaN model entry;
    a model whose total overflows is still healthy."""
    class Weights:
        def __init__(self, w, model=None):
            self.w, self.model = w, torch.zeros(len(w), 3) if model is None else model

        def health(self):
            return {"model": self.model, "push-sum weight": self.w}

    w = torch.ones(5, 1, dtype=torch.float64)
    HealthCheck().on_round(Weights(w, torch.full((5, 3), 3e38)), 0)
    for client, value, what in ((3, 1e-31, "push-sum weight"), (1, float("nan"), "push-sum weight"),
                                (2, None, "model")):
        bad, model = w.clone(), torch.zeros(5, 3)
        if value is None:
            model[client, 1] = float("nan")
        else:
            bad[client] = value
        with pytest.raises(Diverged) as err:
            HealthCheck().on_round(Weights(bad, model), 6)
        assert (err.value.round, err.value.client) == (7, client) and what in str(err.value)


def test_running_sum_messages_have_the_same_size_and_accounting():
    runs = {rec: build(small([{"name": "sgp", "loss_recovery": rec}])) for rec in
            ("running_sums", "none")}
    for alg in runs.values():
        play(alg, range(4))
    a, b = (r.net.history for r in runs.values())
    assert [h["bytes_sent"] for h in a] == [h["bytes_sent"] for h in b]
    assert [h["messages_dropped"] for h in a] == [h["messages_dropped"] for h in b]
    assert runs["none"].payload_bytes() == 4 * (runs["none"].bank.flat.shape[1] + 1)


def test_graph_without_in_links_is_warned_about_once_and_stays_finite():
    """k_out (k = 2): nodes nobody picks have no in-links; every node outside the sink
    components only loses mass. Their weights are rescaled with z before they underflow (exact
    for z / w), the Nedić steps' 1/w amplification is capped, and every model stays finite."""
    rounds = 50
    sc = small([{"name": "sgp"}], clients=200, **{"network.topology": {"name": "k_out", "k": 2},
                                                 "network.links.p": 1.0, "network.loss.p": 0.0,
                                                 "schedule.rounds": rounds})
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        alg = build(sc)
    msgs = [str(w.message) for w in caught if "strongly connected" in str(w.message)]
    assert len(msgs) == 1 and "without in-links" in msgs[0]
    sources = alg.n - np.unique(alg.net.sim.edges.dst).size          # nodes without in-edges
    assert f"leaves {sources} of 200 nodes" in msgs[0] and sources > 10
    play(alg, range(rounds))
    assert torch.isfinite(alg.bank.flat).all() and bool((alg.w > 0).all())
    assert alg.push_sum.rescaled > 0
    assert float(alg.w[torch.as_tensor(~alg.push_sum.draining.numpy())].min()) > 1e-3


def test_graph_check_finds_the_components_that_drain():
    """0 -> 1 <-> 2 -> 3 and 4 <-> 5 (closed): 0 and {1, 2} drain into the sink 3; 4, 5 keep
    their mass."""
    adj = np.zeros((6, 6), bool)
    for a, b in ((0, 1), (1, 2), (2, 1), (2, 3), (4, 5), (5, 4)):
        adj[a, b] = True
    check = check_graph(adj)
    assert check.components == 4 and check.without_in_links == 1
    assert check.draining.tolist() == [True, True, True, False, False, False]
    assert "4 strongly connected components" in check.warning()
    ring = np.roll(np.eye(5, dtype=bool), 1, axis=1)
    assert check_graph(ring).warning() is None and not check_graph(ring).draining.any()


def test_step_scale_caps_the_amplification_of_a_local_step():
    ps = PushSum(3, min_weight=0.5)
    w = torch.tensor([[0.1], [0.5], [2.0]], dtype=torch.float64)
    moved = ps.step_scale(w, torch.float32)[:, 0] / w[:, 0].float()     # x moves by delta * this
    assert moved.tolist() == pytest.approx([2.0, 2.0, 0.5])
    assert PushSum(3, min_weight=0.0).step_scale(w, torch.float32).tolist() == [[1.0]] * 3


def test_add_step_scales_only_the_rows_below_min_weight():
    """``z + delta * step_scale(w)``: exact with no weight below min_weight (the scale is 1
    everywhere, so the product is skipped), and scaled row by row once one is."""
    ps = PushSum(3, min_weight=0.5)
    delta = torch.tensor([[1.0, -2.0], [3.0, 0.5], [-1.0, 4.0]])
    z = torch.tensor([[0.1, 0.2], [0.3, 0.4], [0.5, 0.6]])
    high = torch.tensor([[0.5], [1.0], [2.0]], dtype=torch.float64)
    assert torch.equal(ps.add_step(z.clone(), delta.clone(), high), z + delta)
    low = torch.tensor([[0.25], [1.0], [2.0]], dtype=torch.float64)
    scaled = torch.tensor([[0.5], [1.0], [1.0]])
    assert torch.equal(ps.add_step(z.clone(), delta.clone(), low), z + delta * scaled)


def test_combinations_alternate_between_two_buffers_and_never_read_what_they_write():
    """Each step writes its states into the buffer its input is not in (the step before last's
    output): the same values as a fresh product of the dense column-stochastic matrix."""
    n, rng = 5, np.random.default_rng(0)
    e = Edges.from_matrix(~np.eye(n, dtype=bool))                  # complete
    ps = PushSum(n, mass=InFlight())
    z, w = torch.randn(n, 3, dtype=torch.float64), ps.fresh_weights()
    seen = set()
    for _ in range(4):
        up = rng.random(len(e.key)) < 0.6
        own = push_sum_shares(n, e.src[up])
        P = np.eye(n) * own[None, :]
        P[e.dst[up], e.src[up]] = own[e.src[up]]
        expect = torch.from_numpy(P) @ z
        new_z, new_w = ps.step_uniform([z, w], e.key, e.src, up, up)
        assert new_z.data_ptr() != z.data_ptr() and torch.allclose(new_z, expect, atol=1e-12)
        seen.add(new_z.data_ptr())
        z, w = new_z, new_w
    assert len(seen) == 2
