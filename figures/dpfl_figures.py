"""DPFL figures from a results folder (the paper's Figures 1, 2, 4, 14 and 16 at netsim scale).

    python figures/dpfl_figures.py [RESULTS_DIR] [--out DIR] [--pdf]     # default results/dpfl

For every algorithm with a ``graph/<label>_seed<k>.npz`` (dpfl, dpfl_random):
``graph_<label>.png`` — the collaboration graph as an adjacency matrix after preprocessing (Ω_k) and
at the middle and last rounds (orange: aggregated that round, blue: in Ω_k, not chosen), clients
ordered by group / cluster; ``asymmetry.png`` — share of directed links without their reverse
over rounds (Fig. 16); ``flipped_links.png`` when the partition has a ``malicious`` group — the
share of benign clients' links that go to flipped clients over rounds (Fig. 14);
``accuracy_variance.png`` — mean test accuracy against the variance across clients for every
algorithm (Fig. 1). A table of the final values is printed.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

from netsim import Results
from netsim.analysis.folder import client_table
from netsim.analysis.graphs import link_share
from netsim.analysis.metrics import asymmetry
from netsim.plot.curves import final_client_stats, plot_scatter
from netsim.plot.style import COLUMN, PAGE, looks, new_figure, save, styled


def graph_runs(res: Results) -> dict[str, dict[int, dict[str, np.ndarray]]]:
    """``{label: {seed: graph arrays}}`` for every algorithm that wrote a collaboration graph."""
    out: dict[str, dict[int, dict]] = {}
    for f in sorted((res.dir / "graph").glob("*_seed*.npz")):
        label, seed = f.stem.rsplit("_seed", 1)
        out.setdefault(label, {})[int(seed)] = res.arrays("graph", label, int(seed))
    return out


def flipped_share(edges: np.ndarray, malicious: np.ndarray) -> float:
    """Of all links benign clients aggregate, the share that come from flipped clients (in %)."""
    return 100.0 * link_share(np.asarray(edges, float), ~malicious, malicious)


def per_round(res: Results, runs: dict[int, dict], fn) -> tuple[np.ndarray, np.ndarray]:
    """``fn(used[t], group)`` for each logged round, mean over seeds (nan-aware), with each seed's
    own client groups (a label_flip partition differs per seed): ``(rounds, values)``."""
    rows = []
    for seed, g in runs.items():
        group = client_table(res, seed)[1]
        rows.append([fn(g["used"][i], group) for i in range(len(g["rounds"]))])
    with np.errstate(all="ignore"):
        return next(iter(runs.values()))["rounds"], np.nanmean(np.array(rows), axis=0)


@styled
def plot_graph(g: dict[str, np.ndarray], order: np.ndarray, title: str, path: Path,
               pdf: bool) -> list[Path]:
    """Ω after preprocessing (black), then chosen (red) vs in-Ω-but-unused (blue) links."""
    omega, used, rounds = g["omega"], g["used"], g["rounds"]
    picks = sorted({0, len(rounds) // 2, len(rounds) - 1})
    fig, axes = new_figure(PAGE, 2.5, ncols=len(picks), squeeze=False)
    ix = np.ix_(order, order)
    for ax, i in zip(axes[0], picks):
        img = np.ones(omega.shape + (3,))
        img[np.eye(len(order), dtype=bool)] = (0.6, 0.6, 0.6)
        if i == 0:
            img[omega[ix]] = (0.1, 0.1, 0.1)
            ax.set_title(f"Ω after preprocessing (round {rounds[i]})")
        else:
            img[omega[ix] & ~used[i][ix]] = (0.34, 0.71, 0.91)
            img[used[i][ix]] = (0.84, 0.37, 0.0)
            ax.set_title(f"round {rounds[i]}")
        ax.imshow(img, interpolation="nearest")
        ax.grid(False)
        ax.set_xlabel("sender j")
        ax.set_ylabel("receiver i")
    fig.suptitle(f"{title}: chosen links orange, unused links of Ω blue")
    return save(fig, path, pdf)


@styled
def plot_lines(curves: dict[str, tuple[np.ndarray, np.ndarray]], ylabel: str, path: Path,
               pdf: bool) -> list[Path]:
    look = looks(list(curves))
    fig, ax = new_figure(COLUMN, 2.4)
    for label, (x, y) in curves.items():
        ax.plot(x, y, label=label, **look[label].line(len(x)))
    ax.set_xlabel("round")
    ax.set_ylabel(ylabel)
    ax.legend()
    return save(fig, path, pdf)


def make_figures(run_dir: str | Path, out: str | Path | None = None, pdf: bool = False,
                 stream=sys.stdout) -> list[Path]:
    """Write every DPFL figure for ``run_dir`` into ``out`` (default RUN_DIR/figures)."""
    res = Results(run_dir)
    out = Path(out) if out else res.dir / "figures"
    runs = graph_runs(res)
    if not runs:
        sys.exit(f"{res.dir}: no graph/ arrays (run dpfl or dpfl_random first)")
    n = len(client_table(res)[0])                     # the same number in every seed
    paths = plot_scatter(final_client_stats(res.metrics), out / "accuracy_variance.png", pdf)
    for label, seeds in runs.items():
        seed = min(seeds)
        cluster, group = client_table(res, seed)
        order = np.lexsort((np.arange(n), group == "malicious", cluster))
        paths += plot_graph(seeds[seed], order, f"{label} (seed {seed})",
                            out / f"graph_{label}.png", pdf)
    asym = {lab: per_round(res, s, lambda e, g: asymmetry(e)) for lab, s in runs.items()}
    paths += plot_lines(asym, "asymmetric links [%]", out / "asymmetry.png", pdf)
    flips = {}
    if (client_table(res)[1] == "malicious").any():
        flips = {lab: per_round(res, s, lambda e, g: flipped_share(e, g == "malicious"))
                 for lab, s in runs.items()}
        paths += plot_lines(flips, "benign clients' links to flipped [%]",
                            out / "flipped_links.png", pdf)
    print(f"{'algorithm':<16}{'asym first':>11}{'asym last':>10}{'sparsity':>10}"
          + (f"{'flip first':>11}{'flip last':>10}" if flips else ""), file=stream)
    for label, seeds in runs.items():
        a = asym[label][1]
        sparsity = np.mean([1 - g["used"][-1].sum() / (n * (n - 1)) for g in seeds.values()])
        line = f"{label:<16}{a[0]:>10.1f}%{a[-1]:>9.1f}%{100 * sparsity:>9.1f}%"
        if flips:
            line += f"{flips[label][1][0]:>10.1f}%{flips[label][1][-1]:>9.1f}%"
        print(line, file=stream)
    return paths


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("run_dir", nargs="?", default="results/dpfl",
                    help="results folder of a DPFL scenario (default: results/dpfl)")
    ap.add_argument("--out", default=None)
    ap.add_argument("--pdf", action="store_true")
    args = ap.parse_args(argv)
    for p in make_figures(args.run_dir, args.out, args.pdf):
        print(p)


if __name__ == "__main__":
    main()
