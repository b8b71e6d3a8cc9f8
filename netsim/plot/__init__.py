"""Figure functions (one per figure kind) and the set written for a results folder.

Kinds written by :func:`write_run_figures` (``netsim figures RESULTS --only KIND``):

- ``accuracy``: accuracy vs rounds, vs simulated time and vs bytes sent (log axes where they
  span more than two decades), 95% CI bands over seeds
- ``collab``: collaboration matrices at up to four evaluations, diagonal masked, and the oracle
- ``graph``: the final collaboration graph drawn with networkx (``netsim.plot.digraph``)
- ``scatter``: mean accuracy vs variance across clients, one point per algorithm
- ``asymmetry``: asymmetry and sparsity of the collaboration graph over rounds
- ``groups``: share of links between client groups over rounds (when clients.csv has groups)
- ``timeline``: per-node events of one round (when traces were recorded)
- ``links``: which directed links delivered in every round (the first algorithm and seed that
  communicated peer to peer)
- ``partition``: training samples per class and client
- ``staleness``: histogram of the ages of the models and messages merged (event-driven runs:
  ``staleness/`` arrays)

(``collab``, ``graph`` and ``timeline``: each algorithm's first seed; ``timeline``: round-based
runs only.) Beyond 8 algorithms the
accuracy, scatter, asymmetry and groups figures have a panel per group of the run table
(netsim.plot.panels); every figure has a caption sidecar ``NAME.txt`` (netsim.plot.caption).

``plot_robustness`` (a metric vs a network parameter over several runs) draws from a sweep's
table instead of one folder.
"""
from __future__ import annotations

import functools
from pathlib import Path
from typing import Callable, Iterable

import numpy as np

from netsim.analysis.folder import client_rows, client_table, has_arrays, rebuild_data, runs
from netsim.analysis.series import accuracy_curves, series_by_algorithm
from netsim.plot.curves import (draw_accuracy, final_client_stats, plot_accuracy, plot_scatter,
                                plot_series)
from netsim.plot.digraph import plot_digraph, plot_digraphs
from netsim.plot.links import plot_links
from netsim.plot.matrices import (plot_collaboration, plot_collaboration_grid,
                                  plot_collaborations)
from netsim.plot.partition import draw_partition, plot_partition
from netsim.plot.robustness import plot_robustness
from netsim.plot.staleness import plot_staleness
from netsim.plot.timeline import plot_timeline
from netsim.results import Results
from netsim.sim.trace import read_trace

__all__ = ["KINDS", "draw_accuracy", "draw_partition", "legend_names", "node_labels",
           "plot_accuracy", "plot_collaboration", "plot_collaboration_grid",
           "plot_collaborations", "plot_digraph", "plot_digraphs",
           "plot_links", "plot_partition", "plot_robustness", "plot_scatter", "plot_series",
           "plot_staleness", "plot_timeline", "write_run_figures"]


def _order(res: Results) -> list[str]:
    return list(dict.fromkeys(alg for alg, _ in runs(res)))


def _first_seeds(res: Results, kind: str) -> list[tuple[str, int]]:
    """(algorithm, first seed) of every algorithm that has ``kind`` arrays."""
    out: dict[str, int] = {}
    for alg, seed in runs(res):
        if alg not in out and has_arrays(res, kind, alg, seed):
            out[alg] = seed
    return list(out.items())


def _registered(res: Results) -> dict[str, str]:
    """Each algorithm label of a folder -> its registered name (its group in the run table)."""
    return {a["label"]: a["name"] for a in res.config.get("algorithms", [])}


def legend_names(res: Results) -> dict[str, str]:
    """Legend label per algorithm: ``name (diverged)`` for one with a diverged seed."""
    summary = res.summary["algorithms"] if (res.dir / "summary.json").is_file() else {}
    return {alg: f"{alg} (diverged)" if s.get("diverged") else alg for alg, s in summary.items()}


def _accuracy(res: Results, fig_dir: Path, pdf: bool, data) -> list[Path]:
    curves, order, names = accuracy_curves(res), _order(res), legend_names(res)
    out = []
    for x, name in (("round", "rounds"), ("sim_time", "time"), ("bytes", "bytes")):
        out += plot_accuracy(curves, fig_dir / f"accuracy_vs_{name}.png", x, pdf, order, names,
                             _registered(res))
    return out


def _collab(res: Results, fig_dir: Path, pdf: bool, data) -> list[Path]:
    def run(alg: str, seed: int) -> tuple:
        c = res.arrays("collab", alg, seed)
        return (c["W"], c["rounds"], client_table(res, seed)[0], f"{alg} (seed {seed})",
                fig_dir / f"collab_{alg}_seed{seed}.png")
    return plot_collaborations((run(alg, seed) for alg, seed in _first_seeds(res, "collab")),
                               pdf=pdf)


def node_labels(cluster: np.ndarray, group) -> list[str]:
    """A colour label per client: its ground-truth cluster where known (with its group when all
    the cluster's clients share one, e.g. ``cluster 1 (malicious)``), else its group."""
    cluster = np.asarray(cluster)
    group = np.asarray(group, object)
    if not (cluster >= 0).any():
        return [str(g) for g in group]
    names = {}
    for c in np.unique(cluster):
        groups = set(group[cluster == c].tolist())
        g = groups.pop() if len(groups) == 1 else ""
        names[c] = (f"cluster {c}" if c >= 0 else "no cluster") + (f" ({g})" if g else "")
    return [names[c] for c in cluster]


def _graph(res: Results, fig_dir: Path, pdf: bool, data) -> list[Path]:
    """The final collaboration graph of each algorithm's first seed (netsim.plot.digraph),
    clients on a circle sorted by cluster."""
    def run(alg: str, seed: int) -> tuple:
        c, (cluster, group) = res.arrays("collab", alg, seed), client_table(res, seed)
        return (c["W"][-1], np.argsort(cluster, kind="stable"), node_labels(cluster, group),
                f"{alg}, round {int(c['rounds'][-1])} (seed {seed})",
                fig_dir / f"graph_{alg}_seed{seed}.png")
    return plot_digraphs((run(alg, seed) for alg, seed in _first_seeds(res, "collab")), pdf=pdf)


def _scatter(res: Results, fig_dir: Path, pdf: bool, data) -> list[Path]:
    return plot_scatter(final_client_stats(res.metrics), fig_dir / "accuracy_vs_variance.png",
                        pdf, _order(res), _registered(res))


@functools.lru_cache(maxsize=1)
def _graph_series(res: Results) -> dict:
    """:func:`series_by_algorithm` of a folder, computed once for the asymmetry and groups
    figures of one :func:`write_run_figures` (its Results object)."""
    return series_by_algorithm(res)


def _asymmetry(res: Results, fig_dir: Path, pdf: bool, data) -> list[Path]:
    series = _graph_series(res)
    if not series:
        return []
    return plot_series(series, ["asymmetry", "sparsity"], fig_dir / "asymmetry_sparsity.png", pdf,
                       _registered(res))


def _groups(res: Results, fig_dir: Path, pdf: bool, data) -> list[Path]:
    series = _graph_series(res)
    cols = sorted({c for frames in series.values() for c in frames[0].columns
                   if c.startswith("share_") and len(set(c[6:].split("_uses_"))) == 2})
    if not cols:
        return []
    return plot_series(series, cols, fig_dir / "group_shares.png", pdf, _registered(res))


def _timeline(res: Results, fig_dir: Path, pdf: bool, data) -> list[Path]:
    """Round 1 (round 0 if it is the only one) of each algorithm's first traced seed (none for
    an event-driven run: its trace is of events, not rounds)."""
    from algorithms.async_base import event_driven

    out, done = [], set()
    if event_driven(res.config):
        return out
    for alg, seed in runs(res):
        f = res.dir / "trace" / f"{alg}_seed{seed}.csv"
        if alg in done or not f.is_file():
            continue
        done.add(alg)
        events = read_trace(f)
        rnd = 1 if (events[:, 5] == 1).any() else 0
        out += plot_timeline(events, rnd, fig_dir / f"timeline_{f.stem}.png", pdf,
                             f"{alg}, seed {seed}")
    return out


def _links(res: Results, fig_dir: Path, pdf: bool, data) -> list[Path]:
    """The link raster of the first (algorithm, seed) with ``links`` arrays."""
    first = _first_seeds(res, "links")[:1]
    return [p for alg, seed in first
            for p in plot_links(res.arrays("links", alg, seed)["delivered"],
                                fig_dir / f"links_{alg}_seed{seed}.png", client_table(res, seed)[0],
                                f"{alg} (seed {seed}): delivered messages per link", pdf)]


def _partition(res: Results, fig_dir: Path, pdf: bool, data) -> list[Path]:
    """The first seed's partition: from ``data`` (ClientData), else rebuilt from config.yaml,
    else the clients' training-set sizes in clients.csv."""
    path, seed = fig_dir / "partition.png", runs(res)[0][1]
    data = rebuild_data(res, seed) if data is None else data
    run = f"the partition of seed {seed}"
    if data is not None:
        return [plot_partition(data, path, pdf, run)] + ([path.with_suffix(".pdf")] if pdf else [])
    cluster, group = client_table(res, seed)
    sizes = client_rows(res, seed)["n_train"].to_numpy()[:, None]
    return draw_partition(sizes, cluster, group, path, False, pdf, run)


def _staleness(res: Results, fig_dir: Path, pdf: bool, data) -> list[Path]:
    """The ages of what each event-driven algorithm merged, its seeds pooled."""
    ages: dict[str, list[np.ndarray]] = {}
    for alg, seed in runs(res):
        if has_arrays(res, "staleness", alg, seed):
            ages.setdefault(alg, []).append(res.arrays("staleness", alg, seed)["age"])
    return plot_staleness(ages, fig_dir / "staleness.png", pdf) if ages else []


FIGURES: dict[str, Callable[[Results, Path, bool, object], list[Path]]] = {
    "accuracy": _accuracy, "collab": _collab, "graph": _graph, "scatter": _scatter,
    "asymmetry": _asymmetry, "groups": _groups, "timeline": _timeline, "links": _links,
    "partition": _partition, "staleness": _staleness}
KINDS = tuple(FIGURES)


def write_run_figures(run_dir: str | Path, data=None, pdf: bool = False,
                      only: str | Iterable[str] | None = None) -> list[Path]:
    """Write every figure kind that applies to a results folder into ``RESULTS/figures/``
    (PNG, and PDF with ``pdf``); ``only`` limits it to one kind or a list of kinds; ``data``
    (the run's ClientData, optional) gives the partition figure its class counts. Returns the
    paths written."""
    res = Results(run_dir)
    kinds = list(KINDS) if only is None else [only] if isinstance(only, str) else list(only)
    bad = [k for k in kinds if k not in FIGURES]
    if bad:
        raise ValueError(f"figure kind {bad[0]!r}; allowed: {', '.join(KINDS)}")
    fig_dir = res.dir / "figures"
    return [p for k in kinds for p in FIGURES[k](res, fig_dir, pdf, data)]
