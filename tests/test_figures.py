"""Every figure kind renders from a small results folder (PNG and PDF); the collaboration matrix
image shows W's values; the partition figure works from the results files alone."""
import shutil

import numpy as np
import pandas as pd
import pytest
import yaml
from matplotlib import colormaps
from matplotlib.colors import to_rgb

from netsim import run
from netsim.analysis import edges, oracle_matrix
from netsim.analysis.folder import client_rows, client_table, rebuild_data
from netsim.analysis.series import accuracy_curves
from netsim.analysis.sweep_table import robustness_table
from netsim.cli import main
from netsim.plot import KINDS, plot_robustness, write_run_figures
from netsim.plot.matrices import MASK_COLOUR, draw_collaboration
from netsim.plot.outer import draw_outer_weights, plot_outer_weights
from netsim.plot.style import new_figure
from netsim.results import Results, ResultsWriter
from helpers import tiny

ALGS = ["local", "oracle", "sgp"]


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    out = tmp_path_factory.mktemp("figures")
    sc = tiny(**{"algorithms": ALGS, "data.partition": {"name": "label_flip", "share": 0.5},
                 "outputs.trace": True})
    return run(sc, seeds=[0, 1], out=out, quiet=True).dir


@pytest.fixture(scope="module")
def written(folder):
    return write_run_figures(folder)


def test_every_kind_renders(folder, written):
    names = {p.name for p in written}
    expected = {"accuracy_vs_rounds", "accuracy_vs_time", "accuracy_vs_bytes",
                "accuracy_vs_variance", "asymmetry_sparsity", "group_shares", "partition",
                *(f"collab_{a}_seed0" for a in ALGS), *(f"graph_{a}_seed0" for a in ALGS),
                *(f"timeline_{a}_seed0" for a in ALGS), "links_sgp_seed0"}
    assert names == {f"{stem}.png" for stem in expected}
    for p in written:
        assert p.parent == folder / "figures"
        assert p.read_bytes()[:4] == b"\x89PNG" and p.stat().st_size > 3000


def test_collaboration_image_pixels_follow_W():
    n = 6
    W = np.random.default_rng(0).permutation(n * n).reshape(n, n) / (n * n)
    order = np.array([3, 4, 5, 0, 1, 2])
    fig, ax = new_figure(3.0, 3.0)
    draw_collaboration(ax, W, order=order)
    fig.canvas.draw()
    img = np.asarray(fig.canvas.buffer_rgba())[..., :3] / 255.0
    lut = colormaps["viridis"](np.linspace(0, 1, 256))[:, :3]
    off = ~np.eye(n, dtype=bool)
    vmax = W[off].max()
    shown = np.full((n, n), np.nan)
    for r in range(n):
        for c in range(n):
            x, y = ax.transData.transform((c, r))          # centre of the cell in row r, col c
            px = img[int(round(img.shape[0] - y)), int(round(x))]
            if r == c:
                np.testing.assert_allclose(px, to_rgb(MASK_COLOUR), atol=0.01)
            else:
                shown[r, c] = np.argmin(((lut - px) ** 2).sum(1)) / 255
    expected = W[np.ix_(order, order)] / vmax
    np.testing.assert_allclose(shown[off], expected[off], atol=2 / 255)
    assert (np.argsort(shown[off]) == np.argsort(expected[off])).all()


def test_outer_weights_rows_are_the_agents_sorted_by_cluster(tmp_path):
    weights = np.array([[0.1, 0.2, 0.7], [0.9, 0.05, 0.05], [0.3, 0.3, 0.4], [0.0, 1.0, 0.0]])
    cluster = np.array([1, 0, 1, 0])
    fig, ax = new_figure(3.0, 3.0)
    draw_outer_weights(ax, weights, cluster)
    fig.canvas.draw()
    img = np.asarray(fig.canvas.buffer_rgba())[..., :3] / 255.0
    lut = colormaps["viridis"](np.linspace(0, 1, 256))[:, :3]
    for r, agent in enumerate([1, 3, 0, 2]):                 # cluster 0 first, stable order
        for c in range(3):
            x, y = ax.transData.transform((c, r))
            px = img[int(round(img.shape[0] - y)), int(round(x))]
            assert np.argmin(((lut - px) ** 2).sum(1)) / 255 == pytest.approx(weights[agent, c],
                                                                             abs=2 / 255)
    path, = plot_outer_weights(weights, cluster, tmp_path / "w.png")
    assert path.read_bytes()[:4] == b"\x89PNG"


def test_worst_decile_curve_ends_at_the_summary_bottom10(folder):
    res = Results(folder)
    curves = accuracy_curves(res, worst=0.1)
    assert curves.attrs["stat"] == "worst 10%"
    last = curves[curves["round"] == curves["round"].max()]
    assert len(last) == len(ALGS) * 2
    for row in last.itertuples():
        per_seed = res.summary["algorithms"][row.algorithm]["per_seed"][str(row.seed)]
        assert row.value == pytest.approx(per_seed["bottom10_accuracy"], abs=1e-5)  # csv: 6 digits
        assert row.value <= per_seed["mean_accuracy"]


def test_each_seed_has_its_own_ground_truth(folder):
    """label_flip draws the malicious clients from the seed's data stream: clients.csv holds a
    block of rows per seed, each the partition its seed's run used (as rebuilt from config.yaml),
    and Oracle's W of seed 1 is exactly seed 1's block matrix."""
    res = Results(folder)
    clients = pd.read_csv(folder / "clients.csv")
    assert list(clients["seed"]) == [0] * 8 + [1] * 8
    first, second = client_table(res), client_table(res, 1)
    for seed, truth in ((0, first), (1, second)):
        np.testing.assert_array_equal(truth[0], clients[clients["seed"] == seed]["cluster"])
        np.testing.assert_array_equal(truth[0], rebuild_data(res, seed).cluster)
    assert (first[0] != second[0]).any()
    assert set(second[1]) == {"benign", "malicious"}
    assert ((second[1] == "malicious") == (second[0] == 1)).all()
    W = res.arrays("collab", "oracle", 1)["W"][-1]
    np.testing.assert_array_equal(edges(W), oracle_matrix(second[0]))


def test_partition_from_the_rebuilt_data_or_the_sizes(folder, tmp_path):
    for name in ("config.yaml", "clients.csv", "metrics.csv"):
        shutil.copy(folder / name, tmp_path / name)
    data = rebuild_data(Results(tmp_path))
    clients = client_rows(Results(folder), 0)
    np.testing.assert_array_equal(data.n["train"].numpy(), clients["n_train"])
    np.testing.assert_array_equal(data.cluster, clients["cluster"])
    assert data.class_counts("train").sum(1).tolist() == clients["n_train"].tolist()
    classes = write_run_figures(tmp_path, only="partition")
    assert [p.name for p in classes] == ["partition.png"]
    stacked = classes[0].stat().st_size
    cfg = yaml.safe_load((tmp_path / "config.yaml").read_text())
    cfg["data"]["dataset"] = {"name": "not_on_this_machine"}
    (tmp_path / "config.yaml").write_text(yaml.safe_dump(cfg))
    assert rebuild_data(Results(tmp_path)) is None
    sizes = write_run_figures(tmp_path, only="partition")        # bars of n_train per client
    assert sizes == classes and sizes[0].stat().st_size != stacked


def test_robustness_curves_from_several_results_folders(tmp_path):
    folders = []
    for p in (0.3, 0.7):
        w = ResultsWriter(tmp_path / str(p), {"name": "links",
                                              "network": {"links": {"name": "bernoulli", "p": p}}})
        w.write_summary({"algorithms": {
            "sgp": {"per_seed": {"0": {"mean_accuracy": 0.5 + p / 2},
                                 "1": {"mean_accuracy": 0.6 + p / 2}}},
            "local": {"per_seed": {"0": {"mean_accuracy": 0.7}}}}})
        folders.append(w.dir)
    table = robustness_table(folders, "network.links.p")
    sgp = table[table["algorithm"] == "sgp"]
    assert list(sgp["network.links.p"]) == [0.3, 0.7]
    np.testing.assert_allclose(sgp["mean"], [0.7, 0.9])
    # two seeds 0.1 apart: half-width t_{0.975, 1} * (0.1 / sqrt 2) / sqrt 2
    np.testing.assert_allclose(sgp["ci_high"] - sgp["mean"], 12.706204736174698 * 0.05)
    local = table[table["algorithm"] == "local"]
    assert (local["ci_low"] == local["mean"]).all() and (local["n_seeds"] == 1).all()
    out = plot_robustness(table, "network.links.p", "mean_accuracy",
                          tmp_path / "robustness.png", pdf=True)
    assert [p.suffix for p in out] == [".png", ".pdf"] and all(p.stat().st_size > 3000
                                                              for p in out)


def test_cli_figures_pdf_only_and_bad_kind(folder, capsys):
    assert set(KINDS) == {"accuracy", "collab", "graph", "scatter", "asymmetry", "groups",
                          "timeline", "links", "partition", "staleness"}
    assert main(["figures", str(folder), "--pdf", "--only", "scatter"]) == 0
    out = [folder / "figures" / p.rsplit("/", 1)[1] for p in capsys.readouterr().out.split()]
    assert [p.name for p in out] == ["accuracy_vs_variance.png", "accuracy_vs_variance.pdf"]
    for p in out:
        assert p.read_bytes()[:4] == (b"\x89PNG" if p.suffix == ".png" else b"%PDF")
    assert main(["figures", str(folder), "--only", "nonsense"]) == 2
    assert "allowed: accuracy" in capsys.readouterr().err
