"""Every figure of a tiny run and of a tiny sweep: one style (fonts, widths), no two series of
one axes with the same colour and marker, accuracy axes in percent within [0, 100]."""
from __future__ import annotations

import matplotlib
import pandas as pd
import pytest
from matplotlib.colors import to_rgba
from matplotlib.container import ErrorbarContainer
from matplotlib.figure import Figure

import netsim
from netsim.plot import plot_robustness, write_run_figures
from netsim.plot.style import PAGE, looks
from helpers import tiny

# 9 algorithms: more series than the 8 colours of the palette
ALGS = ["local", "fedavg", "fedprox", "oracle", "sgp", "dpsgd", "apfl", "ditto", "ifca"]


@pytest.fixture(scope="module")
def figures(tmp_path_factory):
    """(name, Figure, font size in force) of every figure the run and the sweep write."""
    out = tmp_path_factory.mktemp("style")
    seen = []
    original = Figure.savefig

    def record(fig, path, *args, **kwargs):
        seen.append((str(path), fig, matplotlib.rcParams["font.size"]))
        return original(fig, path, *args, **kwargs)

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(Figure, "savefig", record)
        res = netsim.run(tiny(algorithms=ALGS, **{"outputs.trace": True}), seeds=[0, 1],
                         out=out, quiet=True)
        write_run_figures(res.dir, pdf=False)
        netsim.run_sweep(tiny(algorithms=["sgp", "dpsgd", "local"]),
                         {"network.links.p": [0.3, 0.9]}, seeds=[0, 1],
                         executor={"name": "serial"}, out=out, quiet=True)
    return seen


def series_looks(ax) -> list[tuple]:
    handles, _ = ax.get_legend_handles_labels()
    out = []
    for h in handles:
        line = h.lines[0] if isinstance(h, ErrorbarContainer) else h
        if hasattr(line, "get_marker"):
            out.append((to_rgba(line.get_color()), line.get_marker()))
    return out


def test_every_kind_was_drawn(figures):
    names = {path.rsplit("/", 1)[1].split("_seed")[0].removesuffix(".png")
             for path, _, _ in figures}
    for kind in ("accuracy_vs_rounds", "accuracy_vs_variance", "asymmetry_sparsity", "partition",
                 "timeline_sgp", "links_sgp", "graph_sgp", "collab_sgp",
                 "robustness_mean_accuracy", "robustness_bottom10_accuracy"):
        assert kind in names, kind


def test_one_style(figures):
    for path, fig, font in figures:
        assert font == 8, path                           # drawn inside the netsim style
        assert fig.get_figwidth() <= PAGE, path
        sizes = [t.get_fontsize() for t in fig.findobj(matplotlib.text.Text) if t.get_text()]
        assert min(sizes) >= 5, path


def test_no_two_series_share_colour_and_marker(figures):
    crowded = 0
    for path, fig, _ in figures:
        for ax in fig.axes:
            seen = series_looks(ax)
            assert len(seen) == len(set(seen)), path
            crowded += len(seen) > 8
    assert crowded >= 2                                  # the 9-series figures were checked


def test_accuracy_axes_in_percent_within_0_100(figures):
    checked = 0
    for path, fig, _ in figures:
        for ax in fig.axes:
            for label, lim in ((ax.get_ylabel(), ax.get_ylim()), (ax.get_xlabel(), ax.get_xlim())):
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
