"""The SimPy engine: queueing, budgets, deadlines, push-sum over realised links, reproducibility."""
from __future__ import annotations

import networkx as nx
import numpy as np
import pytest

from netsim.errors import ConfigError
from netsim.runtime.mixing import push_sum_weights
from netsim.scenario.config import _validate_network
from netsim.util.rng import Streams
from netsim.sim.engine import Simulator
from netsim.sim.policy import Policy
from netsim.sim.queueing import fifo_finish


def make_sim(n: int, network: dict | None = None, topology: str = "complete", seed: int = 0,
             stream_seeds=None, trace: bool = False) -> Simulator:
    net = _validate_network({"topology": topology, **(network or {})}, n)
    graph = nx.complete_graph(n, nx.DiGraph) if topology == "complete" else nx.star_graph(n - 1)
    return Simulator(net, nx.DiGraph(graph), Streams(seed, stream_seeds), trace=trace)


def test_fifo_matches_sequential_recurrence():
    rng = np.random.default_rng(1)
    q = np.sort(rng.integers(0, 5, 200))
    a = rng.uniform(0, 10, 200)
    order = np.lexsort((a, q))
    q, a = q[order], a[order]
    s = rng.uniform(0, 1, 200)
    f = fifo_finish(a, s, q)
    expect = np.empty_like(a)
    for i in range(a.size):
        prev = expect[i - 1] if i and q[i - 1] == q[i] else -np.inf
        expect[i] = max(a[i], prev) + s[i]
    np.testing.assert_allclose(f, expect, rtol=0, atol=1e-9)


def test_k_messages_on_one_uplink_finish_at_k_s_over_b():
    n, s, b = 9, 1000.0, 1.0e4
    sim = make_sim(n, {"latency": {"base": 0.0, "uplink": b}})
    req = np.zeros((n, n), bool)
    req[1:, 0] = True                        # node 0 sends to the 8 others
    ex = sim.exchange(req, s)
    times = np.sort(ex.arrival_time[1:, 0])
    np.testing.assert_allclose(times, np.arange(1, n) * s / b, rtol=0, atol=1e-12)
    assert sim.now == pytest.approx((n - 1) * s / b)


def test_k_messages_into_one_downlink_queue():
    n, s, b = 6, 500.0, 2.0e3
    sim = make_sim(n, {"latency": {"base": 0.0, "downlink": b}})
    req = np.zeros((n, n), bool)
    req[0, 1:] = True                        # the others send to node 0
    ex = sim.exchange(req, s)
    np.testing.assert_allclose(np.sort(ex.arrival_time[0, 1:]), np.arange(1, n) * s / b, atol=1e-12)



def test_infinite_bandwidth_delivers_at_send_plus_propagation():
    """Links that serve at once (no bandwidth given) skip the FIFO queues: each message arrives
    exactly its propagation delay after the round starts, and the receivers stop at their last
    arrival, as with a bandwidth so large that queueing adds nothing."""
    n, net = 7, {"latency": {"base": 0.004, "jitter": {"name": "exponential", "scale": 0.002}}}
    req = ~np.eye(n, dtype=bool)
    instant, fast = make_sim(n, net), make_sim(n, {**net, "latency": {**net["latency"],
                                                                      "bandwidth": 1.0e30}})
    a, b = instant.exchange(req, 1000.0), fast.exchange(req, 1000.0)
    np.testing.assert_allclose(a.arrival_time, b.arrival_time, rtol=1e-12, atol=0)
    assert np.isfinite(a.arrival_time[req]).all() and instant.now == a.arrival_time[req].max()
    assert instant.now == pytest.approx(fast.now, rel=1e-12)


def test_peer_budget_caps_in_degree_every_round():
    n = 12
    sim = make_sim(n, {"budget": {"peers_per_round": 2}, "links": {"name": "bernoulli", "p": 0.7}})
    for _ in range(30):
        for _ in range(3):                    # several exchanges inside one round
            ex = sim.exchange(~np.eye(n, dtype=bool), 100.0)
            assert ex.blocked.any()
        sim.end_round()
    peers = np.stack(sim.peer_history)
    assert peers.max() == 2 and peers.min() >= 0


@pytest.mark.parametrize("window, blocked, peers", [("round", True, 1), ("exchange", False, 2)])
def test_the_budget_window_is_the_round_or_each_exchange(window, blocked, peers):
    """Cap 1: receivers 2 and 3 accept node 0 in the first exchange; node 1's messages in the
    second are refused when the window is the round, accepted when it is the exchange. The
    accounting counts the distinct peers of the round either way."""
    n = 4
    sim = make_sim(n, {"budget": {"peers_per_round": 1}})
    sim.budget_window = window
    for sender in (0, 1):
        request = np.zeros((n, n), bool)
        request[:, sender] = True
        ex = sim.exchange(request & ~np.eye(n, dtype=bool), 1.0)
    assert ex.blocked[2:, 1].all() == blocked and ex.delivered[0, 1]
    sim.end_round()
    assert sim.peer_history[-1].tolist() == [1, 1, peers, peers]


def test_bytes_budget_blocks_and_counts():
    n = 5
    sim = make_sim(n, {"budget": {"bytes_per_round": 250.0}})
    ex = sim.exchange(~np.eye(n, dtype=bool), 100.0)
    assert (ex.bytes_sent <= 250.0).all() and ex.sent.sum(axis=0).max() == 2
    row = sim.end_round()
    assert row["messages_sent"] == 2 * n


def test_deadline_drops_about_the_straggler_share():
    n = 400
    sim = make_sim(n, {"compute": {"stragglers": {"share": 0.3, "slowdown": 10.0}}})
    res = sim.compute(5, 0.01, deadline=0.1)
    missed = 1 - res.finished.mean()
    assert missed == pytest.approx(0.3, abs=0.02)
    assert res.end == pytest.approx(0.1)


def test_compute_without_deadline_waits_for_the_slowest():
    sim = make_sim(10, {"compute": {"stragglers": {"share": 0.2, "slowdown": 4.0}}})
    res = sim.compute(2, 0.5)
    assert res.finished.all() and res.end == pytest.approx(4.0)


def test_phases_move_the_clock_by_their_delay_and_leave_no_event():
    """A phase ends at ``now + delay`` (a SimPy timeout: the earlier of the last node's finish
    and the deadline) and leaves the SimPy queue empty (what checkpoints rely on)."""
    sim = make_sim(10, {"compute": {"stragglers": {"clients": [3], "slowdown": 4.0}}})
    sim.compute(1, 0.1)                                    # node 3 takes 0.4 s
    now = sim.now
    assert now == pytest.approx(0.4) and sim.env.peek() == np.inf
    res = sim.compute(2, 0.15, deadline=now + 0.7)          # node 3 (1.2 s) misses it
    assert res.end == now + ((now + 0.7) - now) and not res.finished[3]
    assert sim.env.peek() == np.inf
    now = sim.now
    res = sim.compute(2, 0.15, active=np.arange(10) != 3, deadline=now + 5.0)
    assert res.end == now + float((res.finish_time[res.finished] - now).max())  # the last
    now = sim.now
    assert sim.compute(1, 0.1, active=np.zeros(10, bool), deadline=now + 1.0).end == now
    sim.exchange(~np.eye(10, dtype=bool), 1.0)
    assert sim.env.peek() == np.inf


def test_stragglers_listed_by_index_are_exactly_those():
    sim = make_sim(10, {"compute": {"stragglers": {"clients": [7, 2], "slowdown": 4.0}}})
    res = sim.compute(2, 0.5, deadline=1.5)
    assert np.flatnonzero(~res.finished).tolist() == [2, 7]


@pytest.mark.parametrize("stragglers, field", [
    ({"clients": [3, 10]}, "clients"), ({"clients": [1, 1]}, "clients"),
    ({"clients": [-1]}, "clients"), ({"clients": [2], "share": 0.1}, "share")])
def test_bad_straggler_list_is_refused(stragglers, field):
    with pytest.raises(ConfigError, match=rf"^network.compute.stragglers.{field}(\[0\])?: got"):
        make_sim(10, {"compute": {"stragglers": stragglers}})


def test_push_sum_reaches_exact_average_and_conserves_mass():
    n = 20
    sim = make_sim(n, {"links": {"name": "bernoulli", "p": 0.5}})
    rng = np.random.default_rng(3)
    z = rng.normal(size=(n, 3))
    w = np.ones(n)
    target = z.mean(axis=0)
    mass = z.sum(axis=0)
    for _ in range(150):
        ex = sim.exchange(~np.eye(n, dtype=bool), 100.0)
        d = push_sum_weights(ex.link_up) * (ex.delivered | np.eye(n, dtype=bool))
        z, w = d @ z, d @ w
        sim.end_round()
    np.testing.assert_allclose(z.sum(axis=0), mass, rtol=0, atol=1e-10)
    assert w.sum() == pytest.approx(n, abs=1e-10)
    assert np.abs(z / w[:, None] - target).max() < 1e-6


def test_stale_policy_delivers_late_messages_in_a_later_round():
    n = 3
    sim = make_sim(n, {"latency": {"base": [0.0, 0.5]}})
    pol = Policy(name="deadline", deadline=0.05, late="stale", max_staleness=3)
    req = ~np.eye(n, dtype=bool)
    first = sim.exchange(req, 1.0, policy=pol)
    assert first.late.sum() > 0
    sim.end_round()
    sim.compute(1, 1.0)                       # time passes: late messages arrive
    second = sim.exchange(np.zeros((n, n), bool), 1.0, policy=pol)
    assert (second.staleness[first.late] == 1).all()
    assert second.available[first.late].all()


def _trace_of(seed, stream_seeds=None):
    n = 8
    sim = make_sim(n, {"links": {"name": "bernoulli", "p": 0.5},
                       "latency": {"base": [0.01, 0.02], "jitter": {"name": "exponential", "scale": 0.01}},
                       "compute": {"speed": {"name": "lognormal", "sigma": 0.5}}},
                   seed=seed, stream_seeds=stream_seeds, trace=True)
    links = []
    for _ in range(5):
        comp = sim.compute(2, 0.1)
        ex = sim.exchange(~np.eye(n, dtype=bool), 100.0, ready=comp.finish_time)
        links.append(ex.link_up)
        sim.end_round()
    return sim.trace.array(), np.stack(links)


def test_same_seed_same_trace_and_link_seed_changes_only_links():
    a, la = _trace_of(0)
    b, lb = _trace_of(0)
    np.testing.assert_array_equal(a, b)
    c, lc = _trace_of(0, {"links": 99})
    assert not np.array_equal(la, lc)
    # compute durations and latency draws are untouched by the link seed
    def durations(t):
        start, end = t[t[:, 1] == 0], t[t[:, 1] == 1]
        key = lambda e: np.lexsort((e[:, 2], e[:, 5]))      # noqa: E731  by round, node
        return end[key(end), 0] - start[key(start), 0]
    np.testing.assert_allclose(durations(a), durations(c), rtol=1e-12)


def test_failures_spare_the_server_node():
    net = _validate_network({"topology": "complete",
                             "failures": {"crash": {"share": 1.0, "at": 0.0}}}, 4)
    star = nx.DiGraph(nx.star_graph(4))                       # 5 nodes: 4 clients + a server
    sim = Simulator(net, nx.relabel_nodes(star, {0: 4, 4: 0}), Streams(0), clients=4)
    assert sim.alive().tolist() == [False] * 4 + [True]
    res = sim.compute(1, 0.1)
    assert res.finished.tolist() == [False] * 4 + [True]
