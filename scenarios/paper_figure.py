"""A multi-panel figure for a paper from two results folders, in netsim's style: (a) and (b)
mean test accuracy vs rounds of each folder with one shared legend (an algorithm has the same
look in both; 95% bands where an algorithm has 3 seeds or more), (c) the last collaboration
matrix of one algorithm of the first folder; a caption sidecar FILE.txt says so.

    python scenarios/paper_figure.py [FOLDER_A FOLDER_B] [--algorithm diple] [--out FILE]

Default folders: results/trace_replay and results/region_outages, made first by
scenarios/trace_replay.py and scenarios/custom_link_model.py when missing (--short: on their
short schedules). Writes FILE.png and FILE.pdf (default results/paper_figure), 7 inches wide.
"""
from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np

import netsim
from netsim.analysis.folder import client_table
from netsim.analysis.series import accuracy_curves
from netsim.plot import draw_accuracy, legend_names
from netsim.plot.caption import Caption, seed_counts
from netsim.plot.matrices import draw_collaboration
from netsim.plot.style import PAGE, new_figure, save, styled

HERE = Path(__file__).resolve().parent


@styled
def paper_figure(a: netsim.Results, b: netsim.Results, algorithm: str, path: Path) -> list[Path]:
    """The three panels of the module docstring; returns the PNG and PDF paths."""
    order = list(dict.fromkeys([*a.summary["algorithms"], *b.summary["algorithms"]]))
    names = {**legend_names(a), **legend_names(b)}
    fig, axes = new_figure(PAGE, 2.5, 1, 3, gridspec_kw={"width_ratios": [1, 1, 0.8]})
    axes[1].sharey(axes[0])
    for ax, res, letter in zip(axes, (a, b), "ab"):
        draw_accuracy(ax, accuracy_curves(res), "round", order, names)
        ax.set_title(f"({letter}) {res.config['name']}")
    axes[1].set_ylabel("")
    seed = a.summary["seeds"][0]
    W = a.arrays("collab", algorithm, seed)
    cluster, _ = client_table(a, seed)
    im = draw_collaboration(axes[2], W["W"][-1], order=np.argsort(cluster, kind="stable"),
                            cluster=cluster)
    axes[2].set_title(f"(c) {algorithm}, round {int(W['rounds'][-1])}")
    fig.colorbar(im, ax=axes[2], shrink=0.8, label="weight $W_{ij}$")
    handles, labels = axes[0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="outside lower center", ncol=len(labels))
    what = (f"(a), (b): mean test accuracy over clients [%] vs round of {a.config['name']} and "
            f"{b.config['name']}, the mean over seeds; (c): the collaboration matrix W of "
            f"{algorithm} in {a.config['name']} at its last evaluation (seed {seed}), clients "
            "sorted by cluster, diagonal masked")
    seeds = "; ".join(f"{res.config['name']}: " + seed_counts(
        {alg: len(s["seeds"]) for alg, s in res.summary["algorithms"].items()})
        for res in (a, b))
    return save(fig, path.with_suffix(".png"), pdf=True, caption=Caption(what, seeds))


def main(argv: list[str] | None = None) -> list[Path]:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("folders", nargs="*", help="two results folders (default: see above)")
    ap.add_argument("--algorithm", default="diple", help="panel (c)'s algorithm")
    ap.add_argument("--out", default="results/paper_figure", help="output file (no suffix)")
    ap.add_argument("--short", action="store_true", help="make missing default folders on the "
                    "scripts' short schedules")
    args = ap.parse_args(argv)
    if args.folders and len(args.folders) != 2:
        ap.error("give two results folders, or none for the defaults")
    folders = [Path(f) for f in args.folders] or [Path("results/trace_replay"),
                                                  Path("results/region_outages")]
    if not args.folders:
        import custom_link_model
        import trace_replay
        for folder, script in zip(folders, (trace_replay, custom_link_model)):
            if not (folder / "summary.json").is_file():
                script.main(["--out", str(folder.parent)] + ["--short"] * args.short)
    paths = paper_figure(*(netsim.Results(f) for f in folders), args.algorithm, Path(args.out))
    for path in paths:
        print(path)
    return paths


if __name__ == "__main__":
    import sys
    sys.path.insert(0, str(HERE))            # the two scripts that make the default folders
    main()
