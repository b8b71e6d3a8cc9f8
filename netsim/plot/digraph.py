"""A learned directed collaboration graph drawn with networkx (DiPLe's A = [alpha_ij]).

Clients sit on a circle in the given order (e.g. sorted by cluster or class set), a gap between
groups, each named outside its node; every ``alpha_ij > threshold`` (i != j; default SHOW times
the largest off-diagonal weight, stated in the title) is an arrow ``j -> i`` whose width is
proportional to the weight. Arrows are arcs, so ``j -> i`` and ``i -> j`` are drawn apart and an
asymmetric pair (``alpha_ij != alpha_ji``) shows as two arcs of different widths; with few arcs
each carries its weight. Node area grows with the self-weight ``alpha_ii``; a legend keys the
groups (colour and shape), node areas and arc widths.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Iterable

import networkx as nx
import numpy as np
from matplotlib.collections import LineCollection, PolyCollection
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.lines import Line2D

from netsim.analysis.graphs import collab_graph
from netsim.plot.caption import Caption
from netsim.plot.placement import place_labels
from netsim.plot.style import COLUMN, freeze_layout, looks, new_figure, save, styled

MAX_WIDTH = 4.0          # points: the heaviest arc
LABEL_MAX_ARCS = 8       # weights are written on the arcs up to this many arcs
SHOW = 0.1               # default threshold: arcs above this share of the largest weight
NODE_AREA = (16.0, 144.0)    # points^2: node area = base + scale * self-weight (<= 20 clients)
CROWD = 20               # beyond this many clients node areas shrink in proportion
NAMED = 40               # every client is named up to this many, else every k-th
DENSE = 60               # arcs beyond this many are drawn thinner and fainter
RAD = 0.15               # arc bend (matplotlib's arc3 connection style)
SHRINK, HEAD = 0.09, 0.07    # data units on the unit circle: gap at a node, arrowhead length


def bezier(p0: np.ndarray, c: np.ndarray, p2: np.ndarray, t: np.ndarray) -> np.ndarray:
    """Points of the quadratic Bezier curves ``p0 -> p2`` with control ``c`` (each ``[E, 2]``) at
    the parameters ``t`` ``[E, K]``: ``(1-t)^2 p0 + 2(1-t)t c + t^2 p2``, ``[E, K, 2]``."""
    t = t[..., None]
    return (1 - t) ** 2 * p0[:, None] + 2 * (1 - t) * t * c[:, None] + t ** 2 * p2[:, None]


def control(start: np.ndarray, end: np.ndarray) -> np.ndarray:
    """The control points of the arcs ``start -> end`` (``[E, 2]``): arc3's ``mid + RAD (dy,
    -dx)``."""
    d = end - start
    return (start + end) / 2 + RAD * np.stack([d[:, 1], -d[:, 0]], 1)


def draw_arcs(ax, start: np.ndarray, end: np.ndarray, widths: np.ndarray,
              alpha: float = 0.75) -> list:
    """Arcs ``start -> end`` (``[E, 2]``, arc3's control point ``mid + RAD (dy, -dx)``), kept
    SHRINK off the nodes, with arrowheads: one line collection and one polygon collection (a
    patch per edge, as networkx draws them, took 15 s for the quickstart's graph figures), which
    it returns."""
    c = control(start, end)
    length = np.maximum(np.linalg.norm(end - start, axis=1), 1e-9)[:, None]
    t0, tip = SHRINK / length, 1 - SHRINK / length
    t = t0 + (tip - HEAD / length - t0) * np.linspace(0, 1, 16)[None, :]
    lines = ax.add_collection(LineCollection(bezier(start, c, end, t), linewidths=widths,
                                             colors="0.3", alpha=alpha, capstyle="butt"))
    at = bezier(start, c, end, tip)[:, 0]
    tangent = 2 * (1 - tip) * (c - start) + 2 * tip * (end - c)
    u = tangent / np.maximum(np.linalg.norm(tangent, axis=1, keepdims=True), 1e-9)
    side = np.stack([-u[:, 1], u[:, 0]], 1) * HEAD * 0.4
    base = at - HEAD * u
    heads = ax.add_collection(PolyCollection(np.stack([at, base + side, base - side], 1),
                                             facecolors="0.3", edgecolors="none", alpha=alpha))
    return [lines, heads]


def circle_positions(order: np.ndarray, groups: list[str]) -> dict[int, np.ndarray]:
    """Clients on the unit circle in ``order``, an empty slot between neighbours of different
    groups (clusters laid out apart)."""
    order = [int(c) for c in order]
    apart = [groups[a] != groups[b] for a, b in zip(order, order[1:] + order[:1])]
    slots = np.arange(len(order)) + np.cumsum([0] + apart[:-1])
    angle = 2 * np.pi * slots / (len(order) + sum(apart) * (len(set(groups)) > 1))
    return {c: np.array([np.cos(a), np.sin(a)]) for c, a in zip(order, angle)}


@dataclass
class Circle:
    """A :func:`circle_figure`: the figure, its axes, each client's position, ``(node
    collection, clients)`` per group and the groups' legend handles (none without names)."""

    fig: Figure
    ax: Axes
    pos: dict
    nodes: list
    groups: list


def circle_figure(order: np.ndarray, groups: list[str]) -> Circle:
    """A figure of clients on a circle in ``order`` (:func:`circle_positions`), coloured and
    shaped by ``groups`` (one per client)."""
    n = len(order)
    names = list(dict.fromkeys(groups[i] for i in order))
    look = looks(names)
    pos = circle_positions(order, groups)
    fig, ax = new_figure(COLUMN, 0.8 * COLUMN)
    g = nx.empty_graph(n, create_using=nx.DiGraph)
    nodes = []
    for name in names:
        members = [i for i in range(n) if groups[i] == name]
        nodes.append((nx.draw_networkx_nodes(g, pos, ax=ax, nodelist=members,
                                             node_size=node_areas(np.zeros(1), n)[0],
                                             node_color=look[name].colour,
                                             node_shape=look[name].marker, edgecolors="black",
                                             linewidths=0.6), members))
        nodes[-1][0].set_zorder(2.5)        # above the arcs drawn later (a LineCollection: 2)
    ax.set_xlim(-1.3, 1.3)
    ax.set_ylim(-1.3, 1.3)
    ax.set_aspect("equal")
    ax.set_axis_off()
    handles = [Line2D([], [], ls="", marker=look[k].marker, color=look[k].colour, mec="black",
                      label=k) for k in names if k]
    return Circle(fig, ax, pos, nodes, handles)


def name_nodes(ax, pos: dict, areas: np.ndarray, labels: list[str] | None) -> list:
    """Each client's name (``labels``, default its index; every k-th beyond NAMED clients)
    just outside its node (``areas`` in points^2), away from the circle's centre. Returns the
    texts."""
    n = len(pos)
    step = -(-n // NAMED)
    out = []
    for c, (x, y) in pos.items():
        if c % step:
            continue
        gap = np.sqrt(areas[c]) / 2 + 2.0                  # points: node radius and a margin
        out.append(ax.annotate(str(c) if labels is None else labels[c], (x, y),
                               xytext=(gap * x, gap * y), textcoords="offset points",
                               fontsize=6, ha="left" if x > 0.3 else "right" if x < -0.3
                               else "center", va="bottom" if y > 0.3 else "top" if y < -0.3
                               else "center"))
    return out


def node_areas(self_weight: np.ndarray, n: int) -> np.ndarray:
    """Node areas (points^2) of self-weights (clipped to [0, 1]) among ``n`` clients."""
    return (NODE_AREA[0] + NODE_AREA[1] * np.clip(self_weight, 0, 1)) * min(1.0, CROWD / n)


def key(ax, groups: list, top: float, n: int, width: float) -> None:
    """The legend right of the graph: the ``groups``' handles, node areas (of ``n`` clients)
    for three self-weights and arc widths for three weights (up to ``top``, the heaviest arc,
    ``width`` points wide)."""
    sizes = [Line2D([], [], ls="", marker="o", mfc="white", mec="0.3",
                    markersize=float(np.sqrt(node_areas(np.array(w), n))),
                    label=f"self-weight {w:g}") for w in (0.0, 0.5, 1.0)]
    widths = [Line2D([], [], color="0.3", lw=width * f, label=f"weight {f * top:.2g}")
              for f in (1.0, 0.5, 0.1)] if top > 0 else []
    ax.legend(handles=groups + sizes + widths, loc="upper left", bbox_to_anchor=(1.0, 1.0),
              fontsize=6, frameon=False, labelspacing=0.9, borderaxespad=0.0)


def draw_weights(circle: Circle, W: np.ndarray, threshold: float | None = None,
                 labels: list[str] | None = None, title: str = "") -> tuple[list, float]:
    """The weights of ``W`` on a :func:`circle_figure`: arcs above ``threshold`` (default SHOW
    times the largest off-diagonal weight; thinner and fainter beyond DENSE arcs), node areas,
    client names, the legend and the ``title`` with the number of arcs and the threshold; up to
    LABEL_MAX_ARCS arcs, each arc's weight placed clear of the others (netsim.plot.placement,
    in the figure laid out). Returns the artists drawn and the threshold."""
    ax, pos, n = circle.ax, circle.pos, W.shape[0]
    off = W[~np.eye(n, dtype=bool)]
    top = float(off.max()) if off.size else 0.0
    cut_share = threshold is None
    threshold = SHOW * max(top, 0.0) if cut_share else threshold
    g = collab_graph(W, threshold)
    edges = list(g.edges(data="weight"))
    drawn = []
    thin = min(1.0, np.sqrt(DENSE / max(len(edges), 1)))
    start = np.array([pos[u] for u, _, _ in edges]).reshape(-1, 2)
    end = np.array([pos[v] for _, v, _ in edges]).reshape(-1, 2)
    if edges:
        drawn += draw_arcs(ax, start, end, np.array([thin * MAX_WIDTH * w / top
                                                     for *_, w in edges]), 0.75 * thin)
    areas = node_areas(np.diag(W), n)
    for collection, members in circle.nodes:
        collection.set_sizes(areas[members])
    key(ax, circle.groups, top, n, thin * MAX_WIDTH)
    arcs = f"{len(edges)} arcs of weight > {threshold:.2g}" + (
        f" ({SHOW:.0%} of the largest)" if cut_share else "")
    ax.set_title(f"{title}\n{arcs}" if title else arcs, fontsize=8)
    drawn += name_nodes(ax, pos, areas, labels)
    if 0 < len(edges) <= LABEL_MAX_ARCS:
        freeze_layout(circle.fig)
        mid = bezier(start, control(start, end), end, np.full((len(edges), 1), 0.5))[:, 0]
        drawn += place_labels(ax, mid, [f"{w:.2f}" for *_, w in edges], ["0.2"] * len(edges),
                              avoid=list(pos.values()))
    return drawn, threshold


@styled
def plot_digraphs(runs: Iterable[tuple[np.ndarray, np.ndarray | None, list[str] | None, str,
                                       str | Path]],
                  labels: list[str] | None = None, threshold: float | None = None,
                  pdf: bool = False) -> list[Path]:
    """:func:`plot_digraph` of each run ``(W, order, groups, title, path)``. A run with the
    clients of the one before (same order and groups) redraws the arcs, node areas, names,
    legend and title on its figure, laid out once. Returns the paths written."""
    out, clients, drawn = [], None, []
    for W, order, groups, title, path in runs:
        W = np.asarray(W, float)
        n = W.shape[0]
        order = np.arange(n) if order is None else np.asarray(order)
        groups = [""] * n if groups is None else list(groups)
        if (order.tolist(), groups) != clients:
            clients, drawn = (order.tolist(), groups), []
            circle = circle_figure(order, groups)
        for artist in drawn:
            artist.remove()
        drawn, cut = draw_weights(circle, W, threshold, labels, title)
        what = (f"the collaboration graph of {title or 'W'}: an arc j → i for each weight "
                f"W_ij above {cut:.3g}" + (f" ({SHOW:.0%} of the largest off-diagonal weight)"
                                           if threshold is None else "")
                + ", its width proportional to the weight; node area grows with the "
                "self-weight W_ii, colour and shape: the client's group (legend); clients on a "
                "circle, a gap between groups, each named outside its node")
        out += save(circle.fig, path, pdf, Caption(what, "one run (named in the title)",
                                                   "none (one run)"))
    return out


def plot_digraph(W: np.ndarray, path: str | Path, order: np.ndarray | None = None,
                 groups: list[str] | None = None, labels: list[str] | None = None,
                 threshold: float | None = None, title: str = "",
                 pdf: bool = False) -> list[Path]:
    """Draw the directed graph of ``W`` (row i = weights client i gives, diagonal = self-weight)
    with clients on a circle in ``order``, coloured and shaped by ``groups`` (the series look of
    every figure) and named by ``labels`` (one per client; default the client index), arcs above
    ``threshold`` (default SHOW times the largest off-diagonal weight); writes ``path`` (PNG),
    its caption and, with ``pdf``, a PDF next to it. Returns the paths written."""
    return plot_digraphs([(W, order, groups, title, path)], labels, threshold, pdf)
