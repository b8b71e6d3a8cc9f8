"""Network models: empirical frequencies and means against theory, validation, determinism."""
from __future__ import annotations

import numpy as np
import pytest

from netsim.errors import ConfigError
from netsim.links import (make_compute, make_failures, make_latency, make_links, make_loss,
                          validate_compute, validate_failures, validate_latency, validate_links,
                          validate_loss)
from netsim.links.edges import Edges

COMPLETE10 = ~np.eye(10, dtype=bool)
EDGES10 = Edges.from_matrix(COMPLETE10)


def complete(n: int) -> Edges:
    return Edges.from_matrix(~np.eye(n, dtype=bool))


def rng(seed: int = 0) -> np.random.Generator:
    return np.random.default_rng(seed)


def links(spec, adjacency=COMPLETE10, seed=0):
    return make_links(validate_links(spec, "network.links", len(adjacency)), adjacency, rng(seed))


def latency(spec, n=5, seed=0, edges=None):
    edges = complete(n) if edges is None else edges
    return make_latency(validate_latency(spec, "network.latency", n), edges, rng(seed))


def compute(spec, n=10, seed=0):
    return make_compute(validate_compute(spec, "network.compute", n), n, rng(seed))


def failures(spec, n=10, seed=0):
    return make_failures(validate_failures(spec, "network.failures", n), n, rng(seed))


# --------------------------------------------------------------------------- defaults

def test_missing_sections_mean_defaults():
    assert validate_links(None, "l", 4) == {"name": "always"}
    assert validate_failures(None, "f", 4) == {"scripted": [], "churn": None, "crash": None}
    assert validate_loss(None, "p", 4) == {"p": 0.0}
    lat = latency(None)
    assert lat.base.shape == (20,) and np.allclose(lat.base, 0.01)
    assert np.isinf(lat.uplink).all() and np.isinf(lat.downlink).all()
    assert np.allclose(lat.propagation(np.array([0, 7])), 0.01)
    comp = compute(None)
    assert (comp.speed == 1).all() and not comp.stragglers.any()
    assert np.allclose(comp.durations(3, 0.5, 0.0), 1.5)
    f = failures(None)
    src, dst = np.nonzero(COMPLETE10)
    assert f.alive(1e6).all() and f.edges_up(5.0, src, dst).all() and f.events_between(0, 1e9) == []


# --------------------------------------------------------------------------- links

def test_always_links_follow_adjacency():
    ring = np.roll(np.eye(6, dtype=bool), 1, axis=1)
    model = links("always", ring)
    assert (model.up(0.0) == ring).all() and (model.availability() == ring).all()


def test_bernoulli_frequencies_match_p():
    model = links({"name": "bernoulli", "p": [0.4, 0.8]})
    p = model.availability()
    off = COMPLETE10
    assert (p[off] >= 0.4).all() and (p[off] <= 0.8).all() and (p[~off] == 0).all()
    assert (p != p.T)[off].all()  # drawn per ordered pair
    steps = 4000
    draws = np.stack([model.up(float(t)) for t in range(steps)])
    assert not draws[:, ~off].any()
    freq = draws.mean(axis=0)
    se = np.sqrt(p * (1 - p) / steps)
    assert (np.abs(freq - p)[off] <= 4 * se[off] + 0.005).all()
    i, j = np.nonzero(np.triu(off, 1))
    a, b = draws[:, i, j].astype(float), draws[:, j, i].astype(float)
    corr = ((a - a.mean(0)) * (b - b.mean(0))).mean(0) / (a.std(0) * b.std(0))
    assert np.abs(corr).max() < 5 / np.sqrt(steps) and abs(corr.mean()) < 0.02


def test_bernoulli_constant_and_symmetric():
    sparse = COMPLETE10 & (np.arange(10)[:, None] < 5)
    model = links({"name": "bernoulli", "p": 0.3}, sparse)
    assert np.allclose(model.availability()[sparse], 0.3)
    assert not model.up(0.0)[~sparse].any()
    sym = links({"name": "bernoulli", "p": [0.2, 0.9], "symmetric": True})
    assert (sym.availability() == sym.availability().T).all()
    assert all((u == u.T).all() for u in (sym.up(float(t)) for t in range(50)))


def test_gilbert_elliott_availability_and_bursts():
    mean_up, mean_down, dt, steps = 1.0, 0.5, 0.005, 30000
    model = links({"name": "gilbert_elliott", "mean_up": mean_up, "mean_down": mean_down})
    assert np.allclose(model.availability()[COMPLETE10], 2 / 3)
    assert (model.availability()[~COMPLETE10] == 0).all()
    states = np.stack([model.up(k * dt)[COMPLETE10] for k in range(steps)])
    assert abs(states.mean() - 2 / 3) < 0.05 * 2 / 3
    rises = (states[1:] & ~states[:-1]).sum()
    falls = (~states[1:] & states[:-1]).sum()
    burst = states[1:].sum() * dt / rises
    assert abs(burst - mean_up) < 0.05 * mean_up
    assert abs(falls / (steps * dt * 90) - 1 / (mean_up + mean_down)) < 0.05 / 1.5
    with pytest.raises(ValueError):
        model.up(0.0)


def test_link_validation_errors():
    with pytest.raises(ConfigError, match="network.links.p"):
        validate_links({"name": "bernoulli", "p": [0.5, 1.2]}, "network.links", 4)
    with pytest.raises(ConfigError, match="network.links.mean_down"):
        validate_links({"name": "gilbert_elliott", "mean_down": 0}, "network.links", 4)
    with pytest.raises(ConfigError, match="network.links.name"):
        validate_links({"name": "flaky"}, "network.links", 4)


# --------------------------------------------------------------------------- latency

@pytest.mark.parametrize("jitter", [
    {"name": "none"}, {"name": "constant", "scale": 0.01}, {"name": "uniform", "scale": 0.01},
    {"name": "exponential", "scale": 0.01}, {"name": "lognormal", "scale": 0.01, "sigma": 1.0},
    {"name": "pareto", "scale": 0.01, "alpha": 2.5}])
def test_jitter_means(jitter):
    model = latency({"base": 0.02, "jitter": jitter})
    m = 200_000
    delay = model.propagation(rng(1).integers(0, 20, m))           # edge ids of the 5 nodes
    target = 0.02 + jitter.get("scale", 0.0)
    assert (delay >= 0.02 - 1e-12).all()
    assert abs(delay.mean() - target) < 0.01 * target
    assert np.allclose(model.mean_propagation(), target)


def test_latency_asymmetric_base_and_bandwidth():
    model = latency({"base": [0.01, 0.05], "bandwidth": 1e7, "uplink": 2e6}, n=6)
    edges = complete(6)
    assert (model.base >= 0.01).all() and (model.base <= 0.05).all()
    assert (model.base != model.base[edges.find(edges.src, edges.dst)]).all()   # asymmetric
    assert (model.uplink == 2e6).all() and (model.downlink == 1e7).all()
    ring = Edges(2000, np.arange(2000), (np.arange(2000) + 1) % 2000)
    spread = latency({"bandwidth": 1e6, "bandwidth_spread": 0.5}, n=2000, edges=ring)
    assert abs(spread.uplink.mean() / 1e6 - 1) < 0.05 and spread.uplink.std() > 0
    assert (spread.uplink == spread.downlink).all()


def test_latency_validation_errors():
    with pytest.raises(ConfigError, match="network.latency.jitter.alpha"):
        validate_latency({"jitter": {"name": "pareto", "alpha": 1.0}}, "network.latency", 3)
    with pytest.raises(ConfigError, match="network.latency.jitter.name"):
        validate_latency({"jitter": "gamma"}, "network.latency", 3)
    with pytest.raises(ConfigError, match="network.latency.bandwidth"):
        validate_latency({"bandwidth": 0}, "network.latency", 3)


# --------------------------------------------------------------------------- loss

def test_loss_frequency_and_ranges():
    model = make_loss(validate_loss({"p": 0.1}, "network.loss", 10), COMPLETE10, rng())
    m = 100_000
    assert abs(model.lost(rng(1).integers(0, 90, m)).mean() - 0.1) < 4 * np.sqrt(0.09 / m)
    ranged = make_loss(validate_loss({"p": [0.2, 0.3]}, "network.loss", 10), EDGES10, rng())
    p = ranged.probability()
    assert p.shape == (90,) and (p >= 0.2).all() and (p <= 0.3).all()
    with pytest.raises(ConfigError, match="network.loss.p"):
        validate_loss({"p": 1.5}, "network.loss", 10)


# --------------------------------------------------------------------------- compute

def test_stragglers_share_and_slowdown():
    model = compute({"step_time": 0.1, "stragglers": {"share": 0.3, "slowdown": 10}})
    assert model.stragglers.sum() == 3
    d = model.durations(5, None, 0.0)
    assert np.allclose(d[model.stragglers], 5.0) and np.allclose(d[~model.stragglers], 0.5)
    per_node = model.durations(np.arange(10), 7.0, 0.0)  # configured step_time wins
    assert np.allclose(per_node, 0.1 * np.arange(10) * np.where(model.stragglers, 10, 1))


def test_speed_distributions():
    classes = compute({"speed": {"name": "classes", "classes": [[1.0, 0.7], [0.25, 0.3]]}})
    assert (classes.speed == 1.0).sum() == 7 and (classes.speed == 0.25).sum() == 3
    assert np.allclose(classes.durations(2, 1.0, 0.0), 2 / classes.speed)
    logn = compute({"speed": {"name": "lognormal", "sigma": 0.3}}, n=20000)
    assert abs(logn.speed.mean() - 1) < 0.01
    uni = compute({"speed": {"name": "uniform", "low": 0.5, "high": 2.0}}, n=20000)
    assert uni.speed.min() >= 0.5 and uni.speed.max() <= 2.0 and abs(uni.speed.mean() - 1.25) < 0.02


@pytest.mark.parametrize("jitter", ["pareto", "lognormal"])
def test_compute_jitter_mean_one(jitter):
    model = compute({"stragglers": {"jitter": jitter, "alpha": 3.0, "sigma": 0.5}}, n=100)
    d = np.stack([model.durations(1, 1.0, float(t)) for t in range(2000)])
    assert abs(d.mean() - 1) < 0.02 and d.std() > 0.1


@pytest.mark.parametrize("jitter", ["pareto", "lognormal"])
def test_compute_duration_draws_one_jitter_per_call(jitter):
    """An event-driven wake-up's duration is node i's speed and slowdown times one jitter draw
    (the next value of the model's stream, not one of n), with mean 1 over many calls."""
    model = compute({"stragglers": {"share": 0.5, "slowdown": 4.0, "jitter": jitter,
                                    "alpha": 3.0, "sigma": 0.5},
                     "speed": {"name": "lognormal", "sigma": 0.3}}, n=1000)
    twin = np.random.Generator(np.random.PCG64())
    twin.bit_generator.state = model.rng.bit_generator.state
    i = int(np.flatnonzero(model.stragglers)[0])
    got = model.duration(i, 2, 0.5)
    factor = ((3.0 - 1) / 3.0 * (1.0 + twin.pareto(3.0, 1)[0]) if jitter == "pareto" else
              np.exp(0.5 * twin.standard_normal(1)[0] - 0.5 ** 2 / 2))
    assert got == pytest.approx(2 * 0.5 / model.speed[i] * 4.0 * factor, rel=1e-12)
    assert model.rng.bit_generator.state == twin.bit_generator.state      # one draw taken
    scale = 2 * 0.5 / model.speed[i] * 4.0
    d = np.array([model.duration(i, 2, 0.5) for _ in range(4000)]) / scale
    assert abs(d.mean() - 1) < 0.03 and d.std() > 0.1


def test_compute_errors():
    with pytest.raises(ValueError):
        compute(None).durations(1, None, 0.0)
    with pytest.raises(ConfigError, match="network.compute.speed.high"):
        validate_compute({"speed": {"name": "uniform", "low": 2, "high": 1}}, "network.compute", 4)
    with pytest.raises(ConfigError, match="network.compute.speed.classes"):
        validate_compute({"speed": {"name": "classes", "classes": [[1, 0.5]]}},
                         "network.compute", 4)
    with pytest.raises(ConfigError, match="network.compute.stragglers.slowdown"):
        validate_compute({"stragglers": {"slowdown": 0.5}}, "network.compute", 4)


# --------------------------------------------------------------------------- failures

def test_crash_at_time():
    f = failures({"crash": {"share": 0.5, "at": 10.0}})
    assert f.alive(9.99).all() and f.alive(10.0).sum() == 5 and f.alive(1e4).sum() == 5
    crashed = ~f.alive(10.0)
    assert f.alive_during(5.0, np.where(crashed, 9.0, 20.0)).all()
    assert (f.alive_during(5.0, np.full(10, 20.0)) == ~crashed).all()
    assert (f.alive_during(0.0, np.full(10, np.inf)) == ~crashed).all()
    events = f.events_between(0.0, 100.0)
    assert sorted(e[2] for e in events) == np.flatnonzero(crashed).tolist()
    assert {(e[0], e[1], e[3]) for e in events} == {(10.0, "crash", -1)}


def test_scripted_node_edge_partition():
    f = failures({"scripted": [
        {"kind": "node", "nodes": [1, 2], "t0": 1.0, "t1": 3.0},
        {"kind": "edge", "edges": [[0, 4]], "t0": 2.0, "t1": 4.0},
        {"kind": "partition", "groups": [[0, 1, 2], [3, 4, 5]], "t0": 5.0, "t1": 6.0}]})
    assert f.alive(0.5).all() and f.alive(1.0).sum() == 8 and f.alive(3.0).all()
    assert f.alive_during(0.0, np.full(10, 0.99)).all()
    assert f.alive_during(0.0, np.full(10, 1.0)).sum() == 8
    src, dst = np.nonzero(np.ones((10, 10), bool))           # every ordered pair, [src, dst]
    cut = f.edges_up(2.0, src, dst).reshape(10, 10)
    assert not cut[0, 4] and cut[4, 0] and cut.sum() == 99
    part = f.edges_up(5.5, src, dst).reshape(10, 10)
    labels = np.array([0, 0, 0, 1, 1, 1, 2, 2, 2, 2])  # unlisted nodes form a third group
    assert (part == (labels[:, None] == labels[None, :])).all()
    assert f.edges_up(6.0, src, dst).all() and f.edges_up(4.9, src, dst).all()
    kinds = [e[1] for e in f.events_between(0.0, 10.0)]
    assert kinds == ["crash", "crash", "edge_down", "recover", "recover", "edge_up",
                     "partition", "heal"]
    assert [e[1] for e in f.events_between(3.0, 5.0)] == ["recover", "recover", "edge_up"]


def test_churn_long_run_availability():
    crash, recover = 0.1, 0.4
    f = failures({"churn": {"crash_rate": crash, "recover_rate": recover, "share": 1.0}}, n=200)
    alive = np.stack([f.alive(float(t)) for t in np.arange(100.0, 1000.0, 1.0)])
    assert abs(alive.mean() - recover / (crash + recover)) < 0.03
    events = f.events_between(0.0, 1000.0)
    rate = sum(e[1] == "crash" for e in events) / (200 * 1000.0)
    assert abs(rate - 1 / (1 / crash + 1 / recover)) < 0.1 * rate
    assert events == sorted(events)


@pytest.mark.parametrize("recover", [2.0, 0.0])
def test_next_change_is_the_first_crash_or_recovery(recover):
    """``next_change(t)``: the first crash or recovery after t, over churn, scripted node outages
    and crashes (edge cuts do not count); ``alive`` holds until then; churn is drawn no further
    than t; inf where nothing can change."""
    spec = {"crash": {"share": 0.2, "at": 6.0},
            "scripted": [{"kind": "node", "nodes": [1, 2], "t0": 1.0, "t1": 3.0},
                         {"kind": "edge", "edges": [[0, 4]], "t0": 2.5, "t1": 4.5}],
            "churn": {"crash_rate": 0.5, "recover_rate": recover, "share": 0.5}}
    f, g = failures(spec, n=12), failures(spec, n=12)
    asked = []
    extend = f.churn.extend
    f.churn.extend = lambda t: asked.append(t) or extend(t)
    for t in np.linspace(0.0, 12.0, 61):
        nxt = f.next_change(float(t))
        assert max(asked) <= t                          # churn drawn only as far as t
        changes = [e[0] for e in g.events_between(float(t), 40.0)
                   if e[1] in ("crash", "recover") and e[0] > t]
        assert nxt == min(changes, default=np.inf)
        if np.isfinite(nxt):
            assert (g.alive(float(t)) == g.alive(float((t + nxt) / 2))).all()
    assert failures({}, n=3).next_change(0.0) == np.inf


def test_churn_share_and_permanent():
    f = failures({"churn": {"crash_rate": 1.0, "recover_rate": 0.0, "share": 0.3}}, n=20)
    assert f.alive(1000.0).sum() == 14  # churned nodes crash for good, the rest never
    assert f.alive_during(0.0, np.full(20, np.inf)).sum() == 14


@pytest.mark.parametrize("recover", [2.0, 0.0])
def test_one_node_answers_are_the_all_node_ones(recover):
    """``up_throughout`` (one node over [t0, t1]) and ``alive_at`` (one node at many times) give
    ``alive_during``'s and ``alive``'s answers, under crashes, scripted outages and churn."""
    spec = {"crash": {"share": 0.2, "at": 6.0},
            "scripted": [{"kind": "node", "nodes": [1, 2], "t0": 1.0, "t1": 3.0}],
            "churn": {"crash_rate": 0.5, "recover_rate": recover, "share": 0.5}}
    f, g = failures(spec, n=12), failures(spec, n=12)
    rng = np.random.default_rng(0)
    spans = np.sort(rng.uniform(0.0, 10.0, (40, 2)), axis=1).tolist() + [[4.0, np.inf]]
    for t0, t1 in spans:
        every = f.alive_during(t0, np.full(12, t1))
        assert [g.up_throughout(i, t0, t1) for i in range(12)] == every.tolist()
    times = np.linspace(0.0, 10.0, 41)
    at = np.stack([f.alive(float(t)) for t in times], 1)
    assert all((g.alive_at(i, times) == at[i]).all() for i in range(12))
    assert not at.all() and at.any()
    from netsim.sim.engine import _ReliableExtra        # a server, node 12, never fails
    hub = _ReliableExtra(g, 13)
    assert hub.alive_at(12, times).all() and hub.up_throughout(12, 0.0, np.inf)
    assert (hub.alive_at(3, times) == at[3]).all()
    assert [hub.up_throughout(i, 4.0, 9.0) for i in range(12)] == \
        f.alive_during(4.0, np.full(12, 9.0)).tolist()


def test_failure_validation_errors():
    bad = [({"scripted": [{"kind": "node", "nodes": [0]}, {"kind": "node", "nodes": [10]}]},
            r"network.failures.scripted\[1\].nodes"),
           ({"scripted": [{"kind": "edge", "edges": [0, 1]}]}, r"scripted\[0\].edges"),
           ({"scripted": [{"kind": "node", "nodes": [1], "t0": 3, "t1": 1}]}, r"scripted\[0\].t1"),
           ({"scripted": [{"kind": "partition", "groups": [[0, 1], [1]]}]},
            r"scripted\[0\].groups"),
           ({"scripted": [{"kind": "link"}]}, r"scripted\[0\].kind"),
           ({"churn": {"crash_rate": -1}}, "network.failures.churn.crash_rate"),
           ({"crash": {"share": 2}}, "network.failures.crash.share")]
    for spec, field in bad:
        with pytest.raises(ConfigError, match=field):
            validate_failures(spec, "network.failures", 10)


# --------------------------------------------------------------------------- determinism

def test_same_seed_same_draws():
    def run(seed):
        ber = links({"name": "bernoulli", "p": [0.4, 0.8]}, seed=seed)
        ge = links({"name": "gilbert_elliott", "mean_up": 1.0, "mean_down": 1.0}, seed=seed)
        lat = latency({"base": [0.01, 0.05], "jitter": {"name": "exponential", "scale": 0.01}},
                      seed=seed)
        loss = make_loss({"p": [0.1, 0.5]}, EDGES10, rng(seed))
        comp = compute({"speed": {"name": "lognormal"},
                        "stragglers": {"share": 0.5, "jitter": "pareto"}}, seed=seed)
        fail = failures({"churn": {"crash_rate": 1.0, "recover_rate": 1.0}}, seed=seed)
        idx = np.arange(4)
        return [ber.up(0.0), ge.up(3.0), lat.propagation(idx), lat.base,
                loss.lost(idx), loss.probability(), comp.durations(1, 1.0, 0.0),
                fail.alive(5.0), np.array(fail.events_between(0.0, 5.0), dtype=object)]
    first, again, other = run(7), run(7), run(8)
    assert all(np.array_equal(a, b) for a, b in zip(first, again))
    assert not all(np.array_equal(a, b) for a, b in zip(first, other))


def test_a_link_model_must_define_one_method_of_each_pair():
    """up/up_edges and availability/availability_edges are defined through each other: a
    subclass with neither of a pair is refused when it is defined (not a RecursionError later)."""
    from netsim.links.models import LinkModel

    with pytest.raises(TypeError, match="neither availability nor availability_edges"):
        class OnlyUp(LinkModel):
            def up(self, t):
                return self.adjacency

    class Both(LinkModel):
        def up(self, t):
            return self.adjacency

        def availability(self):
            return self.adjacency * 1.0

    assert Both(np.ones((3, 3), bool)).up_edges(0.0).all()
