"""Collaboration- and communication-graph analyses against hand-computed values, and the report
of a results folder against recomputations from its files."""
import json
import math

import networkx as nx
import numpy as np
import pandas as pd
import pytest
from sklearn.metrics import adjusted_rand_score

from netsim import run
from netsim.analysis import (analyze, collab_graph, community_analysis, community_scores,
                             detect_communities, edge_precision_recall, edges, export_graphml,
                             graph_metrics, group_shares, jaccard, joint_connectivity_window,
                             link_share, mean_ci, mixing_matrix, oracle_matrix,
                             rounds_to_connect, spectral, stabilisation_round, stability,
                             union_connected, write_analysis)
from netsim.analysis.folder import client_table
from netsim.analysis.metrics import degree_distribution
from netsim.cli import main
from netsim.errors import ConfigError
from helpers import tiny


def test_oracle_and_precision_recall():
    cluster = np.array([0, 0, 1, 1])
    assert oracle_matrix(cluster).sum() == 4
    W = np.array([[1, .5, .2, 0], [.5, 1, 0, 0], [0, 0, 1, 0], [0, 0, .7, 1.]])
    p, r = edge_precision_recall(W, cluster, threshold=0.1)
    assert p == pytest.approx(3 / 4) and r == pytest.approx(3 / 4)
    g = collab_graph(W, 0.1)
    assert g.has_edge(1, 0) and g.has_edge(2, 0) and not g.has_edge(0, 2)
    assert g[2][3]["weight"] == pytest.approx(0.7)


def test_link_share_and_group_shares():
    W = np.array([[1, 1, 1, 0], [1, 1, 0, 0], [0, 0, 1, 1], [0, 0, 1, 1.]])
    benign = np.array([True, True, False, False])
    assert link_share(W, benign, ~benign) == pytest.approx(1 / 3)
    assert link_share(W, ~benign, benign) == 0.0
    s = group_shares(W, ["benign", "benign", "malicious", "malicious"])
    assert s == pytest.approx({"share_benign_uses_benign": 2 / 3,
                               "share_benign_uses_malicious": 1 / 3,
                               "share_malicious_uses_benign": 0.0,
                               "share_malicious_uses_malicious": 1.0})
    assert group_shares(W, ["", "", "", ""]) == {}


# --- graphs with known answers ------------------------------------------------------------------

def _cycle(n=4):                 # 0 -> 1 -> 2 -> 3 -> 0: W[i, i-1] = 1
    W = np.zeros((n, n))
    W[np.arange(n), (np.arange(n) - 1) % n] = 1
    return W


def _one_way():                  # 0 -> 1, 0 -> 2, 1 -> 2 and no reverse edge
    W = np.zeros((3, 3))
    W[1, 0] = W[2, 0] = W[2, 1] = 1
    return W


def _mixed():                    # 0 <-> 1 and 1 -> 2
    W = np.zeros((3, 3))
    W[0, 1] = W[1, 0] = W[2, 1] = 1
    return W


INF = math.inf
# graph: W, then n_edges, density, reciprocity, asymmetry %, in-degree histogram, out-degree
# histogram, strongly / weakly connected components, largest SCC, SLEM, spectral gap, mixing time
KNOWN = {
    # permutation matrix: eigenvalues are the 4th roots of unity, all of modulus 1
    "directed_cycle": (_cycle(), 4, 4 / 12, 0.0, 100.0, [0, 4, 0, 0], [0, 4, 0, 0], 1, 1, 4,
                       1.0, 0.0, INF),
    # W = J: P = J / 4 has eigenvalues 1, 0, 0, 0
    "complete": (np.ones((4, 4)), 12, 1.0, 1.0, 0.0, [0, 0, 0, 4], [0, 0, 0, 4], 1, 1, 4,
                 0.0, 1.0, 1.0),
    # W = J - I: P = (J - I) / 3 has eigenvalues 1 and -1/3 (three times)
    "complete_no_self": (np.ones((4, 4)) - np.eye(4), 12, 1.0, 1.0, 0.0, [0, 0, 0, 4],
                         [0, 0, 0, 4], 1, 1, 4, 1 / 3, 2 / 3, 1.5),
    # block-diagonal J3 (+) J3: eigenvalue 1 twice
    "two_cliques": (np.kron(np.eye(2), np.ones((3, 3))), 12, 12 / 30, 1.0, 0.0,
                    [0, 0, 6, 0, 0, 0], [0, 0, 6, 0, 0, 0], 2, 2, 3, 1.0, 0.0, INF),
    # P = [[1,0,0],[1,0,0],[.5,.5,0]] (node 0 keeps its own model): triangular, eigenvalues 1,0,0
    "one_way": (_one_way(), 3, 0.5, 0.0, 100.0, [1, 1, 1], [1, 1, 1], 3, 1, 1, 0.0, 1.0, 1.0),
    # 2 of 3 edges reciprocated; P = [[0,1,0],[1,0,0],[0,1,0]] has eigenvalues 1, -1, 0
    "mixed": (_mixed(), 3, 0.5, 2 / 3, 100 / 3, [0, 3, 0], [1, 1, 1], 2, 1, 2, 1.0, 0.0, INF),
}


@pytest.mark.parametrize("name", list(KNOWN))
def test_graph_metrics_on_known_graphs(name):
    W, m, dens, rec, asym, d_in, d_out, n_scc, n_wcc, big, slem, gap, mix = KNOWN[name]
    got = graph_metrics(W)
    assert got["n_edges"] == m
    assert got["density"] == pytest.approx(dens) and got["sparsity"] == pytest.approx(1 - dens)
    assert got["reciprocity"] == pytest.approx(rec) and got["asymmetry"] == pytest.approx(asym)
    assert degree_distribution(edges(W)) == {"in": d_in, "out": d_out}
    assert (got["n_strong"], got["n_weak"], got["largest_strong"]) == (n_scc, n_wcc, big)
    assert got["strongly_connected"] == float(n_scc == 1)
    assert got["slem"] == pytest.approx(slem, abs=1e-9)
    assert got["spectral_gap"] == pytest.approx(gap, abs=1e-9)
    assert got["mixing_time"] == pytest.approx(mix)


def test_empty_graph_and_threshold():
    got = graph_metrics(np.eye(3))
    assert got["n_edges"] == 0 and got["density"] == 0 and math.isnan(got["reciprocity"])
    assert got["n_strong"] == 3 and got["slem"] == 1.0
    W = np.array([[1, .05, .5], [.5, 1, .05], [.05, .5, 1]])
    assert graph_metrics(W, threshold=0.1)["n_edges"] == 3          # the directed 3-cycle
    np.testing.assert_allclose(mixing_matrix(W, 0.1), [[2 / 3, 0, 1 / 3], [1 / 3, 2 / 3, 0],
                                                       [0, 1 / 3, 2 / 3]])


def test_slem_of_weakly_coupled_cliques_is_the_contraction_rate():
    """Two 3-cliques coupled with weight eps: P has eigenvalues 1, (1 - eps) / (1 + eps) and 0
    (four times), so after one step ||P^t x - mean(x)|| shrinks exactly by the SLEM per step and
    the mixing time is (1 + eps) / (2 eps)."""
    eps = 0.05
    blocks = np.kron(np.eye(2), np.ones((3, 3)))
    W = blocks + eps * (1 - blocks)
    s = spectral(W)
    assert s["slem"] == pytest.approx((1 - eps) / (1 + eps))
    assert s["mixing_time"] == pytest.approx((1 + eps) / (2 * eps))
    P, x = mixing_matrix(W), np.random.default_rng(0).standard_normal(6)
    err = [np.linalg.norm(np.linalg.matrix_power(P, t) @ x - x.mean()) for t in (3, 4)]
    assert err[1] / err[0] == pytest.approx(s["slem"])


def test_communities_on_known_graphs():
    cliques = np.kron(np.eye(2), np.ones((3, 3)))
    for method in ("louvain", "greedy"):
        assert detect_communities(cliques, method=method).tolist() == [0, 0, 0, 1, 1, 1]
    res = community_analysis(cliques, np.array([1, 1, 1, 0, 0, 0]))
    assert res["ari"] == pytest.approx(1.0) and res["nmi"] == pytest.approx(1.0)
    assert res["n_communities"] == 2 and res["modularity"] == pytest.approx(0.5)
    # found {0,1,2}{3,4,5} vs truth {0,1}{2,3}{4,5}: contingency [[2,1,0],[0,1,2]]
    # ARI = (2 - 6*3/15) / ((6+3)/2 - 6*3/15) = 8/33; NMI = (2/3 ln 2) / ((ln 2 + ln 3) / 2)
    s = community_scores(np.array([0, 0, 0, 1, 1, 1]), np.array([0, 0, 1, 1, 2, 2]))
    assert s["ari"] == pytest.approx(8 / 33)
    assert s["nmi"] == pytest.approx(4 / 3 * np.log(2) / np.log(6))
    full = community_analysis(np.ones((4, 4)), np.array([0, 0, 1, 1]))
    assert full["n_communities"] == 1 and full["ari"] == 0.0 and full["nmi"] == pytest.approx(0)
    assert math.isnan(community_scores(np.zeros(3, int), np.full(3, -1))["ari"])


def test_edge_precision_recall_on_known_graphs():
    assert edge_precision_recall(np.kron(np.eye(2), np.ones((3, 3))),
                                 np.array([0, 0, 0, 1, 1, 1])) == (1.0, 1.0)
    p, r = edge_precision_recall(np.ones((4, 4)), np.array([0, 0, 1, 1]))
    assert p == pytest.approx(4 / 12) and r == 1.0


# --- graphs over time ---------------------------------------------------------------------------

def _rounds(*edge_lists, n=3):
    d = np.zeros((len(edge_lists), n, n), bool)
    for r, lst in enumerate(edge_lists):
        for src, dst in lst:
            d[r, dst, src] = True                        # receiver-major
    return d


def test_joint_connectivity_of_a_rotating_cycle():
    d = _rounds(*[[(0, 1)], [(1, 2)], [(2, 0)]] * 2)   # one edge of the 3-cycle per round
    assert rounds_to_connect(d) == 3 and joint_connectivity_window(d) == 3
    assert not union_connected(d, 0, 2) and union_connected(d, 1, 3)


def test_joint_connectivity_after_a_silent_start():
    full = [(i, j) for i in range(3) for j in range(3) if i != j]
    d = _rounds([], [], full, full, full)
    # rounds needed from s = 0..4: 3, 2, 1, 1, 1 -> every window of 3 rounds, not of 2
    assert rounds_to_connect(d) == 3 and joint_connectivity_window(d) == 3
    never = _rounds([(0, 1), (0, 2)], [(1, 2)])
    assert rounds_to_connect(never) is None and joint_connectivity_window(never) is None


def test_stability_and_stabilisation_round():
    a, b, c = (0, 1), (1, 0), (2, 1)

    def w(*es):
        m = np.eye(3)
        for i, j in es:
            m[i, j] = 0.5
        return m
    W = np.stack([w(a, b), w(a, b, c), w(a, c), w(a, c), w(a, c)])
    rounds = np.array([0, 10, 20, 30, 40])
    np.testing.assert_allclose(stability(W), [2 / 3, 2 / 3, 1, 1])
    assert stabilisation_round(W, rounds, tol=0.9) == 20
    assert stabilisation_round(W, rounds, tol=0.5) == 0
    assert stabilisation_round(W[:3], rounds[:3], tol=0.9) is None
    assert jaccard(np.zeros((2, 2), bool), np.zeros((2, 2), bool)) == 1.0


def test_mean_ci_is_the_student_t_interval():
    mean, lo, hi = mean_ci([1.0, 2.0, 3.0, np.nan])
    assert mean == 2.0 and hi - mean == pytest.approx(4.302652729749462 / np.sqrt(3))
    assert mean_ci([5.0]) == (5.0, 5.0, 5.0)


# --- a results folder ---------------------------------------------------------------------------

@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    out = tmp_path_factory.mktemp("analysis")
    sc = tiny(**{"algorithms": ["local", "fedavg", "sgp", "dpsgd", {"name": "dpfl", "budget": 2}],
                 "schedule.rounds": 6})
    return run(sc, seeds=[0, 1], out=out, quiet=True)


def test_ari_in_the_report_equals_a_recomputation_from_the_saved_W(folder):
    """DPFL's (and the baselines') ARI: Louvain (seeded with the run's seed) on the saved final
    W, symmetrised, against the clusters (label_permutation puts the same contiguous blocks in
    clusters for every seed); at threshold 0 it is the community ARI of W as learned."""
    report = analyze(folder.dir)
    clients = pd.read_csv(folder.dir / "clients.csv")
    cluster = clients[clients["seed"] == 1]["cluster"].to_numpy()
    assert (client_table(folder, 1)[0] == cluster).all()
    assert (cluster == clients[clients["seed"] == 0]["cluster"].to_numpy()).all()
    for alg in ("dpfl", "sgp", "dpsgd", "fedavg"):
        for seed in (0, 1):
            W = np.load(folder.dir / "collab" / f"{alg}_seed{seed}.npz")["W"][-1]
            g = nx.Graph()
            g.add_nodes_from(range(len(W)))
            for i in range(len(W)):
                for j in range(i + 1, len(W)):
                    if W[i, j] > 0 or W[j, i] > 0:
                        g.add_edge(i, j, weight=float(W[i, j] * (W[i, j] > 0)
                                                      + W[j, i] * (W[j, i] > 0)))
            labels = np.zeros(len(W), int)
            for k, part in enumerate(nx.community.louvain_communities(g, weight="weight",
                                                                      seed=seed)):
                labels[list(part)] = k
            vals = report["algorithms"][alg]["per_seed"][seed]
            assert vals["ari"] == vals["community_ari"] == pytest.approx(
                adjusted_rand_score(cluster, labels))
        per = [report["algorithms"][alg]["per_seed"][s]["ari"] for s in (0, 1)]
        assert report["algorithms"][alg]["mean"]["ari"] == pytest.approx(np.mean(per))


def test_time_to_target_and_costs_match_the_files(folder):
    m = pd.read_csv(folder.dir / "metrics.csv")
    test = m[(m["split"] == "test") & (m["algorithm"] == "sgp") & (m["seed"] == 1)]
    curve = test.groupby("round")[["accuracy", "sim_time"]].mean()
    target = float(curve["accuracy"].iloc[1:].min())
    first = curve[curve["accuracy"] >= target].index[0]
    report = analyze(folder.dir, target=target)
    sgp = report["algorithms"]["sgp"]["per_seed"][1]
    assert sgp["round_to_target"] == first
    assert sgp["time_to_target"] == pytest.approx(curve.loc[first, "sim_time"])
    unreached = float(curve["accuracy"].max()) + 1e-6                 # never reached: nan
    assert math.isnan(analyze(folder.dir, target=unreached)["algorithms"]["sgp"]["mean"]
                      ["time_to_target"])
    with pytest.raises(ConfigError, match=r"^target: got 2.0; allowed: a mean test accuracy"):
        analyze(folder.dir, target=2.0)
    net = pd.read_csv(folder.dir / "network.csv")
    for alg in ("fedavg", "sgp"):
        rows = net[(net["algorithm"] == alg) & (net["seed"] == 0)]
        a = report["algorithms"][alg]["per_seed"][0]
        acc = np.load(folder.dir / "accounting" / f"{alg}_seed0.npz")
        assert a["bytes_per_client"] == pytest.approx(acc["bytes_sent"][:, :8].sum() / 8)
        assert a["messages_per_client"] == pytest.approx(rows["messages_sent"].sum() / 8)
        # the engine's per-node accounting adds up to the per-round network totals
        assert 8 * a["bytes_per_client"] + a.get("server_bytes", 0.0) == pytest.approx(
            rows["bytes_sent"].sum(), rel=1e-5)
    assert report["algorithms"]["fedavg"]["mean"]["server_bytes"] > 0


def test_link_connectivity_matches_brute_force(folder):
    sgp = analyze(folder.dir)["algorithms"]["sgp"]["per_seed"][0]
    d = np.load(folder.dir / "links" / "sgp_seed0.npz")["delivered"]
    R = len(d)

    def sc(rs):
        g = nx.DiGraph()
        g.add_nodes_from(range(8))
        dst, src = np.nonzero(d[rs].any(0))
        g.add_edges_from(zip(src, dst))
        return nx.is_strongly_connected(g)
    first = next((t for t in range(1, R + 1) if sc(slice(0, t))), None)
    window = next((B for B in range(1, R + 1)
                   if all(sc(slice(s, s + B)) for s in range(R - B + 1))), None)
    for got, expected in ((sgp["rounds_to_connect"], first), (sgp["joint_window"], window)):
        assert math.isnan(got) if expected is None else got == expected
    assert sgp["link_density"] == pytest.approx(d.sum((1, 2)).mean() / 56)


def test_write_analysis_graphml_and_cli(folder, capsys):
    report = analyze(folder.dir)
    json_path, csv_path = write_analysis(folder.dir, report)
    back = json.loads(json_path.read_text())
    assert set(back["algorithms"]) == {"local", "fedavg", "sgp", "dpsgd", "dpfl"}
    table = pd.read_csv(csv_path)
    assert len(table) == 10 and {"algorithm", "seed", "ari", "asymmetry", "joint_window"} <= \
        set(table.columns)
    paths = export_graphml(folder.dir)
    g = nx.read_graphml(folder.dir / "graphs" / "sgp_seed0_collab.graphml", node_type=int)
    W = np.load(folder.dir / "collab" / "sgp_seed0.npz")["W"][-1]
    assert g.number_of_edges() == edges(W).sum()
    for j, i, data in g.edges(data=True):
        assert data["weight"] == pytest.approx(W[i, j])
    assert {g.nodes[i]["cluster"] for i in g.nodes} == {0, 1}
    assert len(paths) == sum(1 for kind in ("collab", "links")
                             for _ in (folder.dir / kind).glob("*.npz"))
    assert main(["analyze", str(folder.dir), "--target", "0", "--threshold", "0.01"]) == 0
    out = capsys.readouterr().out
    assert "asymmetry" in out and "time_to_target" in out and "analysis.json" in out


def test_cluster_recovery_is_relative_to_the_largest_off_diagonal_weight():
    from netsim.analysis.graphs import cluster_recovery, dominant_pairs, outer_analysis, relative

    cluster = np.array([0, 0, 1, 1])
    # the diagonal (0.9) is ignored: largest off-diagonal 0.6, threshold 0.3
    W = np.array([[.9, .6, .1, 0], [.4, .9, 0, .2], [.25, 0, .9, .35], [0, 0, .5, .9]])
    assert relative(W).max() == pytest.approx(.9 / .6)
    p, r = cluster_recovery(W, cluster)
    assert (p, r) == (1.0, 1.0)                     # edges .6, .4, .35, .5; not .25, .2, .1
    assert edge_precision_recall(relative(W), cluster, 0.5) == (p, r)
    assert cluster_recovery(W / 7, cluster) == (p, r)                  # scale-free
    assert cluster_recovery(np.eye(4), cluster)[1] == 0                # no edge: recall 0
    assert relative(np.stack([W, 2 * W])).shape == (2, 4, 4)
    weights = np.array([[[.5, .5], [.5, .5], [.5, .5], [.5, .5]],
                        [[.9, .1], [.8, .2], [.3, .7], [.9, .1]]])    # [S, N, K]
    assert dominant_pairs(weights[-1]).sum() == 3 * 3 + 1
    out = outer_analysis(weights, cluster)
    assert out["outer_precision"] == pytest.approx(2 / 6) and out["outer_recall"] == 0.5
    assert out["outer_max_weight"] == pytest.approx(np.mean([.9, .8, .7, .9]))
    assert out["outer_learners"] == 2


def test_analyze_relative_threshold_matches_the_run_summary(tmp_path, capsys):
    sc = tiny(**{"network.topology": "complete", "network.links": "always",
                 "algorithms": ["oracle", "fedavg", {"name": "cobo", "sampling": "all"}],
                 "schedule.rounds": 6})
    res = run(sc, seeds=[0, 1], out=tmp_path, quiet=True)
    report = analyze(res.dir, threshold=0.5, relative_to_max=True)
    assert report["relative"] is True
    for alg, entry in report["algorithms"].items():
        for seed, vals in entry["per_seed"].items():
            s = res.summary["algorithms"][alg]["per_seed"][str(seed)]
            assert vals["precision"] == pytest.approx(s["collab_precision"])
            assert vals["recall"] == pytest.approx(s["collab_recall"])
            for key in ("mass_precision", "community_ari"):     # as learned: no threshold
                assert vals[key] == pytest.approx(s[f"collab_{key}"])
    oracle = report["algorithms"]["oracle"]["mean"]
    assert oracle["precision"] == oracle["mass_precision"] == oracle["community_ari"] == 1.0
    assert main(["analyze", str(res.dir), "--threshold", "0.5", "--relative"]) == 0
    assert "threshold 0.5 x the largest off-diagonal weight" in capsys.readouterr().out


def test_paired_differences_per_seed_with_a_student_t_interval():
    from netsim.analysis.paired import format_paired, paired_difference
    seed = lambda acc: {"mean_accuracy": acc}                                  # noqa: E731
    summary = {"algorithms": {
        "a": {"per_seed": {"0": seed(0.8), "1": seed(0.7), "2": seed(0.9),
                           "3": {"diverged": {"seed": 3}}}},
        "b": {"per_seed": {"0": seed(0.7), "1": seed(0.65), "2": seed(0.8), "3": seed(0.5)}}}}
    r = paired_difference(summary, "a", "b")
    assert r["seeds"] == [0, 1, 2] and r["left_out"] == 1
    assert r["per_seed"] == pytest.approx([0.1, 0.05, 0.1])
    half = 4.302653 * np.std([0.1, 0.05, 0.1], ddof=1) / np.sqrt(3)        # t(0.975, 2)
    assert r["mean"] == pytest.approx(0.083333, abs=1e-6)
    assert (r["ci_low"], r["ci_high"]) == pytest.approx((0.083333 - half, 0.083333 + half),
                                                        abs=1e-5)
    assert "+0.0833 [+0.0116, +0.1550] over 3 seeds" in format_paired([r])
    assert format_paired([r]).endswith("A better")
    with pytest.raises(KeyError, match="'c' is not an algorithm"):
        paired_difference(summary, "a", "c")
