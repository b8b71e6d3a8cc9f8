"""A learned directed collaboration graph drawn with networkx (DiPLe's A = [alpha_ij]).

Clients sit on a circle in the given order (e.g. sorted by class set, so that groups are
neighbours); every ``alpha_ij > threshold`` (i != j) is an arrow ``j -> i`` whose width is
proportional to the weight. Arrows are arcs, so ``j -> i`` and ``i -> j`` are drawn apart and an
asymmetric pair (``alpha_ij != alpha_ji``) shows as two arcs of different widths; with few clients
each arc carries its weight. Node area is proportional to the self-weight ``alpha_ii``.
"""
from __future__ import annotations

from pathlib import Path

import networkx as nx
import numpy as np
from matplotlib.lines import Line2D

from netsim.analysis.graphs import collab_graph
from netsim.plot.style import COLUMN, looks, new_figure, save, styled

MAX_WIDTH = 4.0          # points: the heaviest arc
LABEL_MAX_NODES = 6      # weights are written on the arcs up to this many clients


@styled
def plot_digraph(W: np.ndarray, path: str | Path, order: np.ndarray | None = None,
                 groups: list[str] | None = None, labels: list[str] | None = None,
                 threshold: float = 0.0, title: str = "", pdf: bool = False) -> list[Path]:
    """Draw the directed graph of ``W`` (row i = weights client i gives, diagonal = self-weight)
    with clients on a circle in ``order``, coloured and shaped by ``groups`` (the series look of
    every figure) and named by ``labels`` (one per client; default the client index); writes ``path`` (PNG) and, with ``pdf``, a PDF next
    to it. Returns the paths written."""
    W = np.asarray(W, float)
    n = W.shape[0]
    order = np.arange(n) if order is None else np.asarray(order)
    groups = [""] * n if groups is None else list(groups)
    names = list(dict.fromkeys(groups[i] for i in order))
    look = looks(names)

    g = collab_graph(W, threshold)
    angle = 2 * np.pi * np.arange(n) / n
    pos = {int(c): (np.cos(a), np.sin(a)) for c, a in zip(order, angle)}
    fig, ax = new_figure(COLUMN, 0.8 * COLUMN)
    edges = list(g.edges(data="weight"))
    if edges:
        top = max(w for *_, w in edges)
        nx.draw_networkx_edges(g, pos, ax=ax, edgelist=[(u, v) for u, v, _ in edges],
                               width=[MAX_WIDTH * w / top for *_, w in edges], edge_color="0.3",
                               alpha=0.75, arrowsize=8, node_size=200,
                               connectionstyle="arc3,rad=0.15")
        if n <= LABEL_MAX_NODES:
            nx.draw_networkx_edge_labels(g, pos, ax=ax, font_size=6, label_pos=0.3,
                                         connectionstyle="arc3,rad=0.15",
                                         edge_labels={(u, v): f"{w:.2f}" for u, v, w in edges})
    self_w = np.clip(np.diag(W), 0, 1)
    for name in names:
        members = [i for i in range(n) if groups[i] == name]
        nx.draw_networkx_nodes(g, pos, ax=ax, nodelist=members,
                               node_size=40 + 250 * self_w[members],
                               node_color=look[name].colour, node_shape=look[name].marker,
                               edgecolors="black", linewidths=0.6)
    nx.draw_networkx_labels(g, pos, ax=ax, font_size=6, labels=None if labels is None else
                            dict(enumerate(labels)))
    if any(names):
        ax.legend(handles=[Line2D([], [], ls="", marker=look[k].marker, color=look[k].colour,
                                  mec="black", label=k) for k in names],
                  loc="upper left", bbox_to_anchor=(1.0, 1.0), fontsize=6, frameon=False)
    ax.set_xlim(-1.25, 1.25)
    ax.set_ylim(-1.25, 1.25)
    ax.set_aspect("equal")
    ax.set_axis_off()
    ax.set_title(title or f"{g.number_of_edges()} directed edges (width = weight, "
                 "node area = self-weight)", fontsize=8)
    return save(fig, path, pdf)
