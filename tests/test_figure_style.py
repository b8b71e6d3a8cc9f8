"""Every figure of a tiny run and of a tiny sweep (what ``netsim figures`` and ``netsim sweep``
write): one style (fonts, widths), no overlapping text, at most 8 series per panel and no two
with the same colour, marker and dash, accuracy axes in percent within [0, 100], bands for every
series of 3 seeds (never of 2), log axes for bytes and times spanning more than 100x, a caption
sidecar per figure, sweep panels named by their parameter."""
from __future__ import annotations

from typing import NamedTuple

import matplotlib
import numpy as np
import pandas as pd
import pytest
from matplotlib.collections import PathCollection
from matplotlib.colors import to_rgba
from matplotlib.container import ErrorbarContainer
from matplotlib.figure import Figure
from matplotlib.text import Annotation, Text

import netsim
from netsim.plot import plot_accuracy, plot_robustness, write_run_figures
from netsim.plot.panels import MAX_SERIES
from netsim.plot.style import PAGE, log_scale, looks
from netsim.results.manifest import recorded
from helpers import tiny

# 9 algorithms: more series than the 8 colours of the palette, and than a panel holds
ALGS = ["local", "fedavg", "fedprox", "oracle", "sgp", "dpsgd", "apfl", "ditto", "ifca"]
SHORT = {"schedule.rounds": 2, "schedule.eval_every": 1}


class Saved(NamedTuple):
    """One savefig: the file, the figure, the font size in force and, for a PNG, every text
    drawn (its string and its box in pixels)."""

    path: str
    fig: Figure
    font: float
    texts: list | None


def many_algorithms() -> pd.DataFrame:
    """A sweep's cells of 10 algorithms of every group over latencies spanning 3 decades, two
    panels of message loss, 3 seeds each."""
    algs = ["local", "oracle", "fedavg", "fedprox", "ifca", "sgp", "dpsgd", "diple", "cobo",
            "pdbo_mtl"]
    rng = np.random.default_rng(0)
    return pd.DataFrame([{"network.latency.base": x, "algorithm": alg, "panel": panel,
                          "mean": m, "ci_low": m - 0.05, "ci_high": m + 0.05, "n_seeds": 3}
                         for alg in algs for panel in ("message loss p = 0", "message loss p = 0.2")
                         for x in (0.001, 0.01, 0.1, 1.0) for m in [rng.uniform(0.3, 0.9)]])


@pytest.fixture(scope="module")
def figures(tmp_path_factory):
    """Every savefig of a run's figures (9 algorithms, 3 seeds), of a sweep's (two parameters,
    3 seeds) and of robustness curves of 10 algorithms (a row per group), and the run's and the
    sweep's folders."""
    out = tmp_path_factory.mktemp("style")
    seen, drawing = [], []
    save, draw = Figure.savefig, Text.draw

    def record(fig, path, *args, **kwargs):
        drawing.append([] if str(path).endswith(".png") else None)
        try:
            return save(fig, path, *args, **kwargs)
        finally:
            seen.append(Saved(str(path), fig, matplotlib.rcParams["font.size"], drawing.pop()))

    def text(artist, renderer):
        draw(artist, renderer)
        if drawing and drawing[-1] is not None and artist.get_visible() \
                and artist.get_text().strip():
            drawing[-1].append((artist.get_text(), Text.get_window_extent(artist, renderer)))

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(Figure, "savefig", record)
        mp.setattr(Text, "draw", text)
        res = netsim.run(tiny(algorithms=ALGS, **{"outputs.trace": True, **SHORT}),
                         seeds=[0, 1, 2], out=out, quiet=True)
        write_run_figures(res.dir, pdf=False)
        sweep = netsim.run_sweep(tiny(algorithms=["sgp", "local"], **SHORT),
                                 {"network.links.p": [0.3, 0.9], "network.loss.p": [0.0, 0.2]},
                                 seeds=[0, 1, 2], metrics=["mean_accuracy", "bytes_sent"],
                                 executor={"name": "serial"}, out=out, quiet=True)
        cells = many_algorithms()
        plot_robustness(cells, "network.latency.base", "mean_accuracy",
                        out / "many" / "robustness_many.png", panel="panel",
                        registered={a: a for a in cells["algorithm"]})
    return seen, res.dir, sweep.dir


def series_looks(ax) -> list[tuple]:
    """(colour, marker, dash) of each series of ``ax`` (its artists with a label)."""
    handles, _ = ax.get_legend_handles_labels()
    out = []
    for h in handles:
        line = h.lines[0] if isinstance(h, ErrorbarContainer) else h
        if hasattr(line, "get_marker"):
            out.append((to_rgba(line.get_color()), line.get_marker(), str(line.get_linestyle())))
    return out


def overlaps(texts: list, tol: float = 0.5) -> list[tuple[str, str]]:
    """Pairs of texts whose boxes overlap by more than ``tol`` pixels both ways."""
    out = []
    for k, (a, box) in enumerate(texts):
        for b, other in texts[k + 1:]:
            if min(box.x1, other.x1) - max(box.x0, other.x0) > tol \
                    and min(box.y1, other.y1) - max(box.y0, other.y0) > tol:
                out.append((a, b))
    return out


def test_every_kind_was_drawn(figures):
    names = {s.path.rsplit("/", 1)[1].split("_seed")[0].removesuffix(".png")
             for s in figures[0]}
    for kind in ("accuracy_vs_rounds", "accuracy_vs_variance", "asymmetry_sparsity", "partition",
                 "timeline_sgp", "links_sgp", "graph_sgp", "collab_sgp",
                 "robustness_mean_accuracy", "robustness_bytes_sent"):
        assert kind in names, kind


def test_one_style(figures):
    for path, fig, font, _ in figures[0]:
        assert font == 8, path                           # drawn inside the netsim style
        assert fig.get_figwidth() <= PAGE, path
        sizes = [t.get_fontsize() for t in fig.findobj(matplotlib.text.Text) if t.get_text()]
        assert min(sizes) >= 5, path


def test_no_overlapping_text(figures):
    checked = 0
    for s in figures[0]:
        if s.texts is not None:
            assert not overlaps(s.texts), (s.path, overlaps(s.texts))
            checked += len(s.texts) > 10
    assert checked >= 20
    boxes = [("a", matplotlib.transforms.Bbox.from_bounds(0, 0, 10, 5)),
             ("b", matplotlib.transforms.Bbox.from_bounds(8, 3, 2, 5)),
             ("c", matplotlib.transforms.Bbox.from_bounds(10.2, 0, 5, 5))]
    assert overlaps(boxes) == [("a", "b")]               # the check itself


def test_series_per_panel_distinct_and_at_most_8(figures):
    split = 0
    for path, fig, _, _ in figures[0]:
        for ax in fig.axes:
            seen = series_looks(ax)
            assert len(seen) == len(set(seen)), path
            assert len(seen) <= MAX_SERIES, (path, len(seen))
        titles = {ax.get_title().split(",")[0] for ax in fig.axes}
        split += {"baselines", "federated", "decentralised"} <= titles
    assert split >= 6       # accuracy (3), scatter, asymmetry, robustness: a panel per group


def test_bands_for_every_series_of_three_seeds(figures):
    checked = 0
    for path, fig, _, _ in figures[0]:
        for ax in fig.axes:
            gids = [a.get_gid() or "" for a in ax.get_children()]
            series = {g.split(":", 1)[1] for g in gids if g.startswith("series:")}
            assert series <= {g.split(":", 1)[1] for g in gids if g.startswith("band:")}, path
            checked += len(series)
    assert checked >= 30


def test_bands_never_from_two_seeds_and_equal_curves_say_so(tmp_path):
    curves = pd.DataFrame([{"algorithm": alg, "seed": seed, "round": r, "sim_time": 2.0 ** r,
                            "bytes": 10.0 ** (r + 3),
                            "value": 0.1 * r + 0.01 * seed + 0.05 * (alg == "two")}
                           for alg, seeds in (("three", 3), ("two", 2), ("same", 3))
                           for seed in range(seeds) for r in range(5)])
    captured = []
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(Figure, "savefig", lambda fig, *a, **k: captured.append(fig))
        plot_accuracy(curves, tmp_path / "a.png", "bytes")
    ax = captured[0].axes[0]
    assert [c.get_gid() for c in ax.collections] == ["band:three", "band:same"]
    assert ax.get_xscale() == "log"                      # 10 kB .. 10 MB: 4 decades
    assert ax.get_legend_handles_labels()[1] == ["three", "two", "same (= three)"]
    caption = (tmp_path / "a.txt").read_text()
    for text in ("no band for two (fewer than 3 seeds)", "log axis", "same is drawn on three"):
        assert text in caption


def test_log_axes_where_bytes_and_times_span_100x(figures):
    checked = 0
    for path, fig, _, _ in figures[0]:
        axis = "y" if "robustness_bytes" in path else "x"
        if axis == "x" and not any(k in path for k in ("accuracy_vs_time", "accuracy_vs_bytes",
                                                        "robustness_many")):
            continue
        data = [np.asarray(getattr(line, f"get_{axis}data")(), float) for ax in fig.axes
                for line in ax.get_lines() if line.get_transform() == ax.transData]
        scales = {getattr(ax, f"get_{axis}scale")() for ax in fig.axes if ax.get_visible()}
        # zeros are left out of a log axis: the span of the positive values decides
        assert scales == {"log" if log_scale(np.concatenate(data)) else "linear"}, path
        checked += 1
    assert checked >= 4


def test_every_figure_has_a_caption_in_the_manifest(figures):
    _, run_dir, sweep_dir = figures
    for folder in (run_dir / "figures", sweep_dir / "figures"):
        pngs = sorted(folder.glob("*.png"))
        assert pngs
        for png in pngs:
            text = png.with_suffix(".txt").read_text()
            for key in ("Seeds: ", "Interval: ", "Command: "):
                assert key in text, (png, key)
    own = recorded(run_dir)
    assert {f"figures/{p.name}" for p in (run_dir / "figures").glob("*.txt")} <= own
    caption = (run_dir / "figures" / "accuracy_vs_rounds.txt").read_text()
    assert "0, 1, 2: 3 per series" in caption and "a panel per group" in caption


def test_sweep_panels_name_their_parameter(figures):
    robustness = [s for s in figures[0] if "robustness_mean_accuracy.png" in s.path]
    titles = {ax.get_title() for ax in robustness[0].fig.axes}
    assert titles == {"message loss p = 0.0", "message loss p = 0.2"}
    assert robustness[0].fig.axes[0].get_xlabel() == "link probability p"


def test_graph_names_clear_of_their_nodes(figures):
    checked = 0
    for s in figures[0]:
        if "/graph_" not in s.path or s.texts is None:
            continue
        ax = s.fig.axes[0]
        r = ax.figure.dpi / 72.0
        discs = [(ax.transData.transform(xy), np.sqrt(size) / 2 * r)
                 for c in ax.collections if isinstance(c, PathCollection)
                 for xy, size in zip(c.get_offsets(), np.broadcast_to(c.get_sizes(),
                                                                      len(c.get_offsets())))]
        for name in (a for a in ax.texts if isinstance(a, Annotation)):
            box = Text.get_window_extent(name)
            for (u, v), radius in discs:
                du = max(box.x0 - u, 0, u - box.x1)
                dv = max(box.y0 - v, 0, v - box.y1)
                assert du * du + dv * dv >= radius * radius, (s.path, name.get_text())
            checked += 1
    assert checked >= 8


def test_accuracy_axes_in_percent_within_0_100(figures):
    checked = 0
    for path, fig, _, _ in figures[0]:
        for ax in fig.axes:         # panels sharing their axes: the figure's labels
            for label, lim in ((ax.get_ylabel() or fig.get_supylabel(), ax.get_ylim()),
                               (ax.get_xlabel() or fig.get_supxlabel(), ax.get_xlim())):
                if "accuracy" in label:
                    assert "[%]" in label, (path, label)
                    assert 0 <= min(lim) and max(lim) <= 100, (path, label, lim)
                    checked += 1
    assert checked >= 5


def test_the_looks_of_20_series_differ_in_colour_and_marker():
    styles = looks([f"s{k}" for k in range(20)])
    assert len({(s.colour, s.marker) for s in styles.values()}) == 20


def test_bands_are_clipped_and_diverged_algorithms_say_so(tmp_path):
    table = pd.DataFrame({"p": [0.1, 0.5, 0.1, 0.5], "algorithm": ["a", "a", "b", "b"],
                          "mean": [0.95, 0.99, 0.2, float("nan")],
                          "ci_low": [0.7, 0.9, 0.0, float("nan")],
                          "ci_high": [1.2, 1.1, 0.5, float("nan")], "diverged": [0, 0, 0, 1]})
    captured = []
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(Figure, "savefig", lambda fig, *a, **k: captured.append(fig))
        plot_robustness(table, "p", "mean_accuracy", tmp_path / "r.png")
    ax = captured[0].axes[0]
    tops = [path.vertices[:, 1].max() for c in ax.collections for path in c.get_paths()]
    assert tops and max(tops) == pytest.approx(100)      # a's band: 120 % and 110 % clipped
    assert ax.get_ylim()[1] <= 100
    labels = [t.get_text() for t in captured[0].legends[0].get_texts()]
    assert labels == ["a", "b (diverged)"]
