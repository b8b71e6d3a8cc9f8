"""Topology generators: sizes, degrees, symmetry, file loading and parameter errors."""
from __future__ import annotations

import networkx as nx
import numpy as np
import pytest

from netsim.errors import ConfigError
from topologies import TOPOLOGIES, build_topology, exponential_peer, validate_topology

PATH = "network.topology"
UNDIRECTED = ["complete", "ring", "torus", "grid", "small_world", "scale_free",
              "random_geometric", "star", "sbm"]
SPECS = {"sbm": {"name": "sbm", "blocks": 3}}


def build(spec, n: int = 16, seed: int = 0) -> nx.DiGraph:
    return build_topology(validate_topology(spec, PATH, n), n, np.random.default_rng(seed))


def adjacency(g: nx.DiGraph) -> np.ndarray:
    return nx.to_numpy_array(g, nodelist=range(g.number_of_nodes()), dtype=bool)


def out_degrees(g: nx.DiGraph) -> np.ndarray:
    return np.array([d for _, d in sorted(g.out_degree())])


@pytest.mark.parametrize("name", [n for n in TOPOLOGIES.names() if n != "file"])
def test_nodes_and_no_self_loops(name):
    g = build(SPECS.get(name, name), n=16)
    assert isinstance(g, nx.DiGraph)
    assert sorted(g.nodes) == list(range(16))
    assert nx.number_of_selfloops(g) == 0


@pytest.mark.parametrize("name", UNDIRECTED)
def test_undirected_families_are_symmetric(name):
    a = adjacency(build(SPECS.get(name, name), n=16))
    assert (a == a.T).all()


@pytest.mark.parametrize("name", ["erdos_renyi", "k_out", "small_world", "scale_free",
                                  "random_geometric", "sbm"])
def test_same_seed_same_graph(name):
    spec = SPECS.get(name, name)
    assert set(build(spec, seed=3).edges) == set(build(spec, seed=3).edges)
    assert set(build(spec, seed=3).edges) != set(build(spec, seed=4).edges)


def test_complete_ring_star():
    assert build("complete", 10).number_of_edges() == 90
    ring = build("ring", 10)
    assert ring.number_of_edges() == 20 and (out_degrees(ring) == 2).all()
    directed = build({"name": "ring", "directed": True}, 10)
    assert set(directed.edges) == {(i, (i + 1) % 10) for i in range(10)}
    star = build("star", 10)
    assert star.number_of_edges() == 18
    assert star.out_degree(9) == 9 and (out_degrees(star)[:9] == 1).all()
    assert all(star.has_edge(i, 9) and star.has_edge(9, i) for i in range(9))


def test_torus_and_grid():
    torus = build("torus", 16)  # auto 4 x 4
    assert torus.number_of_edges() == 64 and (out_degrees(torus) == 4).all()
    assert torus.has_edge(0, 3) and torus.has_edge(0, 12)  # wrap-around
    thin = build({"name": "torus", "rows": 2}, 16)  # 2 x 8: up and down neighbour coincide
    assert (out_degrees(thin) == 3).all() and thin.number_of_edges() == 48
    grid = build("grid", 16)
    assert grid.number_of_edges() == 48  # 2 * (4*3 + 3*4)
    assert sorted(set(out_degrees(grid))) == [2, 3, 4] and not grid.has_edge(0, 3)
    assert build("grid", 12).number_of_edges() == 2 * (3 * 3 + 2 * 4)  # auto 3 x 4
    with pytest.raises(ConfigError, match="network.topology.rows"):
        build({"name": "torus", "rows": 3}, 16)


def test_exponential():
    g = build("exponential", 16)
    assert (out_degrees(g) == 4).all() and g.number_of_edges() == 64
    assert {j for _, j in g.out_edges(0)} == {1, 2, 4, 8}
    assert (out_degrees(build("exponential", 12)) == 4).all()  # hops 1, 2, 4, 8
    assert (out_degrees(build({"name": "exponential", "one_peer": True}, 16)) == 4).all()
    assert exponential_peer(8, 0).tolist() == [1, 2, 3, 4, 5, 6, 7, 0]
    assert exponential_peer(8, 2).tolist() == [(i + 4) % 8 for i in range(8)]
    assert (exponential_peer(8, 3) == exponential_peer(8, 0)).all()  # period log2(8) = 3
    peers = np.stack([exponential_peer(16, s) for s in range(4)], axis=1)
    assert all(g.has_edge(i, j) for i in range(16) for j in peers[i])


def test_random_families_sizes():
    assert (out_degrees(build({"name": "k_out", "k": 3}, 20)) == 3).all()
    n, p = 60, 0.3
    m = build({"name": "erdos_renyi", "p": p}, n).number_of_edges()
    mean, sd = p * n * (n - 1), np.sqrt(n * (n - 1) * p * (1 - p))
    assert abs(m - mean) < 4 * sd
    assert build({"name": "small_world", "k": 4, "p": 0.2}, 20).number_of_edges() == 80
    assert build({"name": "scale_free", "m": 2}, 20).number_of_edges() == 2 * 2 * 18
    assert build({"name": "random_geometric", "radius": 1.5}, 10).number_of_edges() == 90
    assert build({"name": "random_geometric", "radius": 1e-9}, 10).number_of_edges() == 0


def test_sbm_blocks():
    g = build({"name": "sbm", "sizes": [5, 5, 6], "p_in": 1.0, "p_out": 0.0}, 16)
    assert g.number_of_edges() == 20 + 20 + 30
    blocks = [g.nodes[i]["block"] for i in range(16)]
    assert blocks == [0] * 5 + [1] * 5 + [2] * 6
    assert all(blocks[i] == blocks[j] for i, j in g.edges)
    even = build({"name": "sbm", "blocks": 4, "p_in": 1.0, "p_out": 0.0}, 16)
    assert even.number_of_edges() == 4 * 12
    d = adjacency(build({"name": "sbm", "blocks": 2, "p_in": 0.5, "directed": True}, 40))
    assert (d != d.T).any()


@pytest.mark.parametrize("spec, field", [
    ({"name": "k_out", "k": 16}, "k"),
    ({"name": "small_world", "k": 16}, "k"),
    ({"name": "scale_free", "m": 16}, "m"),
    ({"name": "erdos_renyi", "p": 1.5}, "p"),
    ({"name": "small_world", "p": -0.1}, "p"),
    ({"name": "random_geometric", "radius": 0.0}, "radius"),
    ({"name": "sbm", "sizes": [5, 5]}, "sizes"),
    ({"name": "sbm"}, "sizes"),
    ({"name": "sbm", "sizes": [8, 8], "blocks": 3}, "blocks"),
    ({"name": "nope"}, "name"),
])
def test_bad_parameters(spec, field):
    with pytest.raises(ConfigError, match=f"{PATH}.{field}"):
        build(spec, 16)


def test_generator_checks_without_validation():
    fn = TOPOLOGIES.get("k_out", PATH).obj
    with pytest.raises(ConfigError, match="network.topology.k"):
        fn(5, np.random.default_rng(0), k=5)


def test_file_edge_list(tmp_path):
    txt = tmp_path / "g.txt"
    txt.write_text("# a comment\n10 20\n20 30\n\n30 10  # trailing\n")
    g = build({"name": "file", "path": str(txt)}, 3)
    assert set(g.edges) == {(0, 1), (1, 2), (2, 0)}
    und = build({"name": "file", "path": str(txt), "undirected": True}, 3)
    assert und.number_of_edges() == 6
    csv = tmp_path / "g.csv"
    csv.write_text("a,b\nb,c\nc,d\n")
    assert set(build({"name": "file", "path": str(csv)}, 4).edges) == {(0, 1), (1, 2), (2, 3)}


def test_file_graphml(tmp_path):
    path = tmp_path / "g.graphml"
    nx.write_graphml(nx.cycle_graph(["x", "y", "z", "w"]), path)
    g = build({"name": "file", "path": str(path)}, 4)
    assert sorted(g.nodes) == [0, 1, 2, 3] and g.number_of_edges() == 8
    assert (out_degrees(g) == 2).all()


def test_file_errors(tmp_path):
    missing = tmp_path / "missing.txt"
    with pytest.raises(ConfigError, match="network.topology.path") as err:
        build({"name": "file", "path": str(missing)}, 3)
    assert str(missing) in str(err.value)
    small = tmp_path / "small.edges"
    small.write_text("0 1\n1 2\n")
    with pytest.raises(ConfigError, match="file has 3 nodes"):
        build({"name": "file", "path": str(small)}, 5)
    with pytest.raises(ConfigError, match="network.topology.path"):
        build({"name": "file", "path": str(tmp_path / "g.json")}, 3)
