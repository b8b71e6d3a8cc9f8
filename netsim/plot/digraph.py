"""A learned directed collaboration graph drawn with networkx (DiPLe's A = [alpha_ij]).

Clients sit on a circle in the given order (e.g. sorted by class set, so that groups are
neighbours); every ``alpha_ij > threshold`` (i != j) is an arrow ``j -> i`` whose width is
proportional to the weight. Arrows are arcs, so ``j -> i`` and ``i -> j`` are drawn apart and an
asymmetric pair (``alpha_ij != alpha_ji``) shows as two arcs of different widths; with few clients
each arc carries its weight. Node area is proportional to the self-weight ``alpha_ii``.
"""
from __future__ import annotations

from pathlib import Path
from typing import Iterable

import networkx as nx
import numpy as np
from matplotlib.collections import LineCollection, PolyCollection
from matplotlib.lines import Line2D

from netsim.analysis.graphs import collab_graph
from netsim.plot.style import COLUMN, looks, new_figure, save, styled

MAX_WIDTH = 4.0          # points: the heaviest arc
LABEL_MAX_NODES = 6      # weights are written on the arcs up to this many clients
RAD = 0.15               # arc bend (matplotlib's arc3 connection style)
SHRINK, HEAD = 0.09, 0.07    # data units on the unit circle: gap at a node, arrowhead length


def bezier(p0: np.ndarray, c: np.ndarray, p2: np.ndarray, t: np.ndarray) -> np.ndarray:
    """Points of the quadratic Bezier curves ``p0 -> p2`` with control ``c`` (each ``[E, 2]``) at
    the parameters ``t`` ``[E, K]``: ``(1-t)^2 p0 + 2(1-t)t c + t^2 p2``, ``[E, K, 2]``."""
    t = t[..., None]
    return (1 - t) ** 2 * p0[:, None] + 2 * (1 - t) * t * c[:, None] + t ** 2 * p2[:, None]


def draw_arcs(ax, start: np.ndarray, end: np.ndarray, widths: np.ndarray) -> list:
    """Arcs ``start -> end`` (``[E, 2]``, arc3's control point ``mid + RAD (dy, -dx)``), kept
    SHRINK off the nodes, with arrowheads: one line collection and one polygon collection (a
    patch per edge, as networkx draws them, took 15 s for the quickstart's graph figures), which
    it returns."""
    d = end - start
    c = (start + end) / 2 + RAD * np.stack([d[:, 1], -d[:, 0]], 1)
    length = np.maximum(np.linalg.norm(d, axis=1), 1e-9)[:, None]
    t0, tip = SHRINK / length, 1 - SHRINK / length
    t = t0 + (tip - HEAD / length - t0) * np.linspace(0, 1, 16)[None, :]
    lines = ax.add_collection(LineCollection(bezier(start, c, end, t), linewidths=widths,
                                             colors="0.3", alpha=0.75, capstyle="butt"))
    at = bezier(start, c, end, tip)[:, 0]
    tangent = 2 * (1 - tip) * (c - start) + 2 * tip * (end - c)
    u = tangent / np.maximum(np.linalg.norm(tangent, axis=1, keepdims=True), 1e-9)
    side = np.stack([-u[:, 1], u[:, 0]], 1) * HEAD * 0.4
    base = at - HEAD * u
    heads = ax.add_collection(PolyCollection(np.stack([at, base + side, base - side], 1),
                                             facecolors="0.3", edgecolors="none", alpha=0.75))
    return [lines, heads]


def circle_figure(order: np.ndarray, groups: list[str], labels: list[str] | None = None):
    """A figure of clients on a circle in ``order``, coloured and shaped by ``groups`` (one per
    client), named by ``labels`` (default the client index), with a legend of the groups.
    Returns the figure, its axes, the clients' positions and ``(node collection, clients)`` per
    group."""
    n = len(order)
    names = list(dict.fromkeys(groups[i] for i in order))
    look = looks(names)
    angle = 2 * np.pi * np.arange(n) / n
    pos = {int(c): (np.cos(a), np.sin(a)) for c, a in zip(order, angle)}
    fig, ax = new_figure(COLUMN, 0.8 * COLUMN)
    g = nx.empty_graph(n, create_using=nx.DiGraph)
    nodes = []
    for name in names:
        members = [i for i in range(n) if groups[i] == name]
        nodes.append((nx.draw_networkx_nodes(g, pos, ax=ax, nodelist=members, node_size=40,
                                             node_color=look[name].colour,
                                             node_shape=look[name].marker, edgecolors="black",
                                             linewidths=0.6), members))
        nodes[-1][0].set_zorder(2.5)        # above the arcs drawn later (a LineCollection: 2)
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
    return fig, ax, pos, nodes


def draw_weights(ax, W: np.ndarray, pos: dict, nodes: list, threshold: float = 0.0
                 ) -> tuple[list, int]:
    """The weights of ``W`` on a :func:`circle_figure`: arcs (with their weights written up to
    LABEL_MAX_NODES clients) and node areas. Returns the artists drawn and the number of
    edges."""
    n = W.shape[0]
    g = collab_graph(W, threshold)
    edges = list(g.edges(data="weight"))
    drawn = []
    if edges:
        top = max(w for *_, w in edges)
        drawn += draw_arcs(ax, np.array([pos[u] for u, _, _ in edges]),
                           np.array([pos[v] for _, v, _ in edges]),
                           np.array([MAX_WIDTH * w / top for *_, w in edges]))
        if n <= LABEL_MAX_NODES:
            drawn += nx.draw_networkx_edge_labels(
                g, pos, ax=ax, font_size=6, label_pos=0.3, connectionstyle="arc3,rad=0.15",
                edge_labels={(u, v): f"{w:.2f}" for u, v, w in edges}).values()
    self_w = np.clip(np.diag(W), 0, 1)
    for collection, members in nodes:
        collection.set_sizes(40 + 250 * self_w[members])
    return drawn, len(edges)


@styled
def plot_digraphs(runs: Iterable[tuple[np.ndarray, np.ndarray | None, list[str] | None, str,
                                       str | Path]],
                  labels: list[str] | None = None, threshold: float = 0.0,
                  pdf: bool = False) -> list[Path]:
    """:func:`plot_digraph` of each run ``(W, order, groups, title, path)``. A run with the
    clients of the one before (same order and groups) redraws the arcs, node areas and title on
    its figure, laid out once. Returns the paths written."""
    out, clients, drawn = [], None, []
    for W, order, groups, title, path in runs:
        W = np.asarray(W, float)
        n = W.shape[0]
        order = np.arange(n) if order is None else np.asarray(order)
        groups = [""] * n if groups is None else list(groups)
        if (order.tolist(), groups) != clients:
            clients, drawn = (order.tolist(), groups), []
            fig, ax, pos, nodes = circle_figure(order, groups, labels)
        for artist in drawn:
            artist.remove()
        drawn, n_edges = draw_weights(ax, W, pos, nodes, threshold)
        ax.set_title(title or f"{n_edges} directed edges (width = weight, "
                     "node area = self-weight)", fontsize=8)
        out += save(fig, path, pdf)
    return out


def plot_digraph(W: np.ndarray, path: str | Path, order: np.ndarray | None = None,
                 groups: list[str] | None = None, labels: list[str] | None = None,
                 threshold: float = 0.0, title: str = "", pdf: bool = False) -> list[Path]:
    """Draw the directed graph of ``W`` (row i = weights client i gives, diagonal = self-weight)
    with clients on a circle in ``order``, coloured and shaped by ``groups`` (the series look of
    every figure) and named by ``labels`` (one per client; default the client index); writes
    ``path`` (PNG) and, with ``pdf``, a PDF next to it. Returns the paths written."""
    return plot_digraphs([(W, order, groups, title, path)], labels, threshold, pdf)
