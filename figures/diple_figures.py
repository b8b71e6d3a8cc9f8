"""DiPLe figures and graph statistics from a results folder (docs/papers/diple.md).

    python figures/diple_figures.py RESULTS/<scenario> [--seed K] [--pdf]

writes into ``RESULTS/<scenario>/figures/``, for every DiPLe run (algorithm ``diple``, any label)
at seed K (default: the first seed):

- ``diple_heatmap_<label>_seed<K>.png``: the final learned A (row i = weights client i gives,
  diagonal = self-weight), clients sorted by class set, lines between class sets;
  ``diple_heatmap_mean_<label>_seed<K>.png``: A averaged over the evaluations after round 0;
- ``diple_digraph_<label>_seed<K>.png``: the same graph drawn with networkx (netsim.plot.digraph),
  each client named with its number of training samples;
- ``diple_accuracy_vs_rounds.png``: mean client test accuracy vs round, every algorithm, mean and
  min/max over seeds;

and ``RESULTS/<scenario>/diple_graph.json`` with, per DiPLe label and seed, the graph measured
against the clients' known class sets (rebuilt from the saved config and seed): mean alpha_ij
over pairs that share a class and over pairs that do not, edge precision (share of edges
alpha_ij > 0 between class-sharing clients) and recall, all at the last round and averaged over
the rounds after the first bisection; the mean asymmetry |alpha_ij - alpha_ji|; and, for the
clients with the most and the fewest training samples, alpha(small <- big) and alpha(big <- small)
averaged over rounds. The table is printed too.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from netsim import Results
from netsim.data import build_client_data
from netsim.plot.digraph import plot_digraph
from netsim.plot.style import save as _save
from netsim.util.rng import Streams


def class_sets(cfg: dict, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Per client: the classes it holds ``[N, C]`` (bool) and its training-set size ``[N]``."""
    data = build_client_data(cfg["data"], cfg["clients"],
                             Streams(seed, cfg["stream_seeds"]).numpy("data"))
    return data.class_counts("train") > 0, data.n["train"].numpy()


def graph_stats(W: np.ndarray, held: np.ndarray, n_train: np.ndarray) -> dict[str, float]:
    """Graph ``W [E, N, N]`` (evaluations) against the class sets; see the module doc."""
    n = W.shape[1]
    off = ~np.eye(n, dtype=bool)
    share = (held.astype(int) @ held.T.astype(int) > 0) & off
    other = off & ~share
    learned = W[1:] if len(W) > 1 else W

    def at(A: np.ndarray) -> dict[str, float]:
        e = (A > 0) & off
        return {"alpha_shared": float(A[share].mean()) if share.any() else float("nan"),
                "alpha_not_shared": float(A[other].mean()) if other.any() else float("nan"),
                "edge_precision": float((e & share).sum() / e.sum()) if e.any() else float("nan"),
                "edge_recall": float((e & share).sum() / share.sum()) if share.any()
                else float("nan"),
                "asymmetry": float(np.abs(A - A.T)[off].mean())}

    final = at(W[-1])
    mean = {k: nanmean([at(A)[k] for A in learned]) for k in final}
    big, small = int(np.argmax(n_train)), int(np.argmin(n_train))
    sized = n_train[big] > n_train[small]
    return {**{f"final_{k}": v for k, v in final.items()},
            **{f"mean_{k}": v for k, v in mean.items()},
            "big": big, "small": small, "n_big": int(n_train[big]), "n_small": int(n_train[small]),
            "alpha_small_from_big": float(learned[:, small, big].mean()) if sized else float("nan"),
            "alpha_big_from_small": float(learned[:, big, small].mean()) if sized else float("nan")}


def nanmean(values) -> float:
    """Mean of the non-nan values (nan when there are none)."""
    v = np.asarray(values, float)
    v = v[~np.isnan(v)]
    return float(v.mean()) if v.size else float("nan")


def plot_heatmap(W: np.ndarray, order: np.ndarray, groups: list[str], path: Path, title: str,
                 pdf: bool) -> list[Path]:
    """Heat map of the learned A in ``order`` with lines between the class-set groups."""
    fig = Figure(figsize=(4.0, 3.4), layout="constrained")
    FigureCanvasAgg(fig)
    ax = fig.subplots()
    im = ax.imshow(W[np.ix_(order, order)], cmap="viridis", vmin=0, vmax=1,
                   interpolation="nearest")
    g = np.asarray(groups, object)[order]
    for b in np.flatnonzero(g[1:] != g[:-1]) + 0.5:
        ax.axhline(b, color="white", lw=0.6)
        ax.axvline(b, color="white", lw=0.6)
    ticks = np.arange(len(order))
    ax.set_xticks(ticks, [str(c) for c in order], fontsize=5)
    ax.set_yticks(ticks, [str(c) for c in order], fontsize=5)
    ax.set_xlabel("client j (sorted by class set)", fontsize=7)
    ax.set_ylabel("client i", fontsize=7)
    ax.set_title(title, fontsize=8)
    fig.colorbar(im, ax=ax, fraction=0.046).set_label("alpha_ij", fontsize=7)
    return _save(fig, path, pdf)


def plot_accuracy_rounds(metrics, path: Path, pdf: bool) -> list[Path]:
    """Mean client test accuracy vs round per algorithm: mean over seeds, band = min/max."""
    test = metrics[metrics["split"] == "test"]
    per_seed = test.groupby(["algorithm", "seed", "round"], sort=False)["accuracy"].mean()
    fig = Figure(figsize=(4.6, 3.2), layout="constrained")
    FigureCanvasAgg(fig)
    ax = fig.subplots()
    for alg in dict.fromkeys(test["algorithm"]):
        curve = per_seed.loc[alg].groupby("round").agg(["mean", "min", "max"])
        ax.plot(curve.index, 100 * curve["mean"], label=alg)
        ax.fill_between(curve.index, 100 * curve["min"], 100 * curve["max"], alpha=0.15, lw=0)
    ax.set_xlabel("round")
    ax.set_ylabel("mean test accuracy [%]")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7, frameon=False)
    return _save(fig, path, pdf)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("results", type=Path, help="a results folder (OUT/<scenario>)")
    ap.add_argument("--seed", type=int, default=None, help="seed of the graph figures")
    ap.add_argument("--pdf", action="store_true", help="also write PDF figures")
    args = ap.parse_args(argv)
    res = Results(args.results)
    cfg = res.config
    fig_dir = res.dir / "figures"
    labels = [a["label"] for a in cfg["algorithms"] if a["name"] == "diple"]
    seeds = sorted(int(s) for s in res.metrics["seed"].unique())
    fig_seed = seeds[0] if args.seed is None else args.seed
    written = plot_accuracy_rounds(res.metrics, fig_dir / "diple_accuracy_vs_rounds.png", args.pdf)
    stats: dict[str, dict[str, dict]] = {lab: {} for lab in labels}
    for seed in seeds:
        held, n_train = class_sets(cfg, seed)
        groups = ["classes " + ",".join(map(str, np.flatnonzero(h))) for h in held]
        order = np.array(sorted(range(len(groups)), key=lambda i: (groups[i], i)))
        for lab in labels:
            W = res.arrays("collab", lab, seed)["W"]
            stats[lab][str(seed)] = graph_stats(W, held, n_train)
            if seed == fig_seed:
                title = f"{lab}: learned A, last round (seed {seed})"
                written += plot_heatmap(W[-1], order, groups,
                                        fig_dir / f"diple_heatmap_{lab}_seed{seed}.png", title,
                                        args.pdf)
                written += plot_heatmap(W[1:].mean(0) if len(W) > 1 else W[0], order, groups,
                                        fig_dir / f"diple_heatmap_mean_{lab}_seed{seed}.png",
                                        f"{lab}: A averaged over the rounds (seed {seed})",
                                        args.pdf)
                written += plot_digraph(W[-1], fig_dir / f"diple_digraph_{lab}_seed{seed}.png",
                                        order, groups, [f"{i}\nn={k}" for i, k in
                                                        enumerate(n_train)],
                                        title=title, pdf=args.pdf)
    (res.dir / "diple_graph.json").write_text(json.dumps(stats, indent=1))
    keys = ("mean_alpha_shared", "mean_alpha_not_shared", "mean_edge_precision",
            "mean_edge_recall", "final_asymmetry", "alpha_small_from_big", "alpha_big_from_small")
    print(f"{'algorithm':<16}" + "".join(f"{k.replace('mean_', ''):>22}" for k in keys))
    for lab, per_seed in stats.items():
        vals = [nanmean([s[k] for s in per_seed.values()]) for k in keys]
        print(f"{lab:<16}" + "".join(f"{v:>22.3f}" for v in vals))
    for p in written:
        print(p)
    return 0


if __name__ == "__main__":
    sys.exit(main())
