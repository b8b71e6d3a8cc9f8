"""The engine at scale (issue 18): edge lists reproduce the dense models' numbers exactly, its
memory grows with the edges, and the 10,000-client scenario's estimate stays bounded."""
from __future__ import annotations

import tracemalloc
from pathlib import Path

import networkx as nx
import numpy as np
import pytest

from netsim.links import make_latency, make_links, make_loss, validate_latency, validate_links
from netsim.links.draws import UniformAt
from netsim.links.edges import Edges
from netsim.scenario import memory
from netsim.scenario.config import Scenario, _validate_network
from netsim.sim.engine import Simulator
from netsim.sim.queueing import RADIX_MIN, fifo_finish, queue_last, queue_order, segment_cumsum
from netsim.util.rng import Streams
from topologies import build_topology
from topologies.generators import _seed

ROOT = Path(__file__).resolve().parent.parent


def sparse_edges(n: int, seed: int = 0, degree: int = 5) -> Edges:
    """A random directed graph with about ``degree`` out-edges per node."""
    rng = np.random.default_rng(seed)
    return Edges(n, np.repeat(np.arange(n), degree), rng.integers(0, n, n * degree))


@pytest.mark.parametrize("total, m", [(90_000, 1500), (5_000_017, 7), (2_500_000, 20_000)])
def test_uniform_at_is_the_dense_draw_and_leaves_the_generator_alike(total, m):
    """Jumping (PCG64) and drawing through in blocks give the dense draw's values at the
    positions, call after call, and leave the generator where the dense draw leaves it."""
    pos = np.random.default_rng(1).integers(0, total, m)
    draw, dense = np.random.default_rng(5), np.random.default_rng(5)
    at = UniformAt(total, pos)
    for _ in range(2):
        expect = dense.random(total)[pos]
        np.testing.assert_array_equal(at(draw), expect)
    assert draw.bit_generator.state == dense.bit_generator.state
    np.testing.assert_array_equal(at._draw_through(draw), dense.random(total)[pos])
    np.testing.assert_array_equal(at.uniform(draw, 0.2, 0.7), dense.uniform(0.2, 0.7, total)[pos])


def test_edge_models_draw_what_the_dense_models_drew():
    """Bernoulli links (a p range, symmetric), a loss range and a latency range: the values the
    former ``[n, n]`` draws had on the edges, and the same draws after them."""
    n, edges = 300, sparse_edges(300)
    src, dst = edges.src, edges.dst
    for symmetric in (False, True):
        spec = validate_links({"name": "bernoulli", "p": [0.3, 0.9], "symmetric": symmetric},
                              "network.links", n)
        model, rng = make_links(spec, edges, np.random.default_rng(3)), np.random.default_rng(3)
        probs = rng.uniform(0.3, 0.9, (n, n))
        sym = (lambda a: np.triu(a, 1) + np.triu(a, 1).T) if symmetric else (lambda a: a)
        np.testing.assert_array_equal(model.availability_edges(), sym(probs)[src, dst])
        for t in range(3):
            np.testing.assert_array_equal(model.up_edges(float(t)),
                                          sym(rng.random((n, n)))[src, dst] < sym(probs)[src, dst])
    loss = make_loss({"p": [0.1, 0.5]}, edges, np.random.default_rng(4))
    np.testing.assert_array_equal(loss.probability(),
                                  np.random.default_rng(4).uniform(0.1, 0.5, (n, n))[src, dst])
    spec = {"base": [0.01, 0.05], "bandwidth": 1.0, "bandwidth_spread": 0.3}
    lat = make_latency(validate_latency(spec, "network.latency", n), edges,
                       np.random.default_rng(6))
    rng = np.random.default_rng(6)
    np.testing.assert_array_equal(lat.base, rng.uniform(0.01, 0.05, (n, n))[src, dst])
    np.testing.assert_array_equal(lat.uplink, np.exp(rng.normal(0.0, 1.0, n) * 0.3 - 0.3**2 / 2))


def test_segment_cumsum_is_numpys_cumsum_of_each_segment():
    rng = np.random.default_rng(2)
    values = rng.random(500) * 10.0 ** rng.integers(-3, 6, 500)
    ptr = np.r_[0, np.sort(rng.integers(0, 500, 40)), 500]
    got = segment_cumsum(values, ptr)
    expect = np.concatenate([np.cumsum(values[a:b]) for a, b in zip(ptr[:-1], ptr[1:])])
    np.testing.assert_array_equal(got, expect)


@pytest.mark.parametrize("m", [0, 1, 300, RADIX_MIN + 500])
def test_queue_order_is_lexsort_and_queue_last_the_latest_completion(m):
    """The engine's downlink order (a radix sort from RADIX_MIN messages) is np.lexsort's, ties
    in arrival included; the last FIFO completion of each queue is its maximum."""
    rng = np.random.default_rng(m)
    n = 40
    queue = rng.integers(0, n, m)
    entry = np.round(rng.random(m), 2)                         # many equal arrivals
    order = queue_order(queue, entry)
    np.testing.assert_array_equal(order, np.lexsort((entry, queue)))
    q, a = queue[order], entry[order]
    finish = fifo_finish(a, rng.random(m) * 0.01, q)
    expect = np.full(n, -np.inf)
    np.maximum.at(expect, q, finish)
    np.testing.assert_array_equal(queue_last(finish, q, n, -np.inf), expect)


def test_random_graphs_are_the_graphs_they_were():
    """Erdős–Rényi is networkx's gnp_random_graph edge for edge; k_out the k smallest of the
    dense matrix of keys it drew."""
    er = build_topology({"name": "erdos_renyi", "p": 0.03}, 200, np.random.default_rng(4))
    ref = nx.gnp_random_graph(200, 0.03, seed=_seed(np.random.default_rng(4)), directed=True)
    assert list(er.edges()) == list(ref.edges())
    kout = build_topology({"name": "k_out", "k": 3}, 150, np.random.default_rng(2))
    keys = np.random.default_rng(2).random((150, 150))
    np.fill_diagonal(keys, np.inf)
    dense = np.argsort(keys, axis=1)[:, :3]
    assert list(kout.edges()) == list(zip(np.repeat(np.arange(150), 3).tolist(),
                                          dense.ravel().tolist()))


def _peak_bytes(n: int) -> int:
    """Peak traced memory of building the engine on a sparse random graph of ``n`` nodes (every
    model drawing per edge, budgets on) and playing 3 rounds of compute and exchange."""
    net = _validate_network({"topology": {"name": "erdos_renyi", "p": 5 / (n - 1)},
                             "links": {"name": "bernoulli", "p": [0.5, 0.9]},
                             "loss": {"p": [0.0, 0.1]}, "latency": {"base": [0.01, 0.02]},
                             "budget": {"peers_per_round": 3, "bytes_per_round": 1e9}}, n)
    graph = build_topology(net["topology"], n, Streams(0).numpy("topology"))
    tracemalloc.start()
    try:
        sim = Simulator(net, graph, Streams(0))
        for _ in range(3):
            comp = sim.compute(1, 0.1)
            ex = sim.exchange(np.ones(len(sim.edges), bool), 1000.0, ready=comp.finish_time)
            sim.end_round()
        assert ex.per_edge["delivered"].any()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_engine_memory_grows_with_the_edges_not_n_squared():
    _peak_bytes(500)                                          # imports, caches
    small, large = _peak_bytes(2000), _peak_bytes(4000)
    assert large < 2.6 * small                                # N^2 would give 4x
    assert large < 4000 * 4000 / 2                            # half a bool N x N matrix


def test_an_edge_mask_request_is_the_matrix_request():
    """A request over the edges plays exactly as the same request as a matrix (trace included)."""
    def play(as_mask: bool) -> np.ndarray:
        net = _validate_network({"topology": "complete", "links": {"name": "bernoulli", "p": 0.6},
                                 "loss": {"p": 0.2}, "budget": {"peers_per_round": 4}}, 12)
        sim = Simulator(net, nx.complete_graph(12, nx.DiGraph), Streams(1), trace=True)
        for _ in range(4):
            req = np.random.default_rng(sim.round).random((12, 12)) < 0.7
            sim.exchange(sim.edges.gather(req) if as_mask else req, 100.0)
            sim.end_round()
        return sim.trace.array()
    np.testing.assert_array_equal(play(True), play(False))


def test_scale_10k_validates_and_its_estimate_is_bounded():
    cfg = Scenario.load(ROOT / "scenarios" / "scale_10k.yaml").resolve()
    parts = memory.estimate(cfg)
    assert cfg["clients"] == 10_000
    assert parts["engine and links log (edge lists)"] < 50e6        # 50,000 edges
    assert 2e9 < sum(parts.values()) < 3.2e9                        # measured peak: see the file
