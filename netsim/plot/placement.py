"""Text labels next to points that overlap no other label: each label takes the first of a ring
of candidate offsets, nearest first, whose box (measured with the figure's renderer) meets no
label placed before and no point and stays inside the axes; a label set farther off than
LEADER gets a leader line to its point. Place labels once the figure is laid out
(netsim.plot.style.freeze_layout) and the axes limits are final."""
from __future__ import annotations

import colorsys
import math

import numpy as np
from matplotlib.colors import to_hex, to_rgb
from matplotlib.transforms import Bbox

DIRECTIONS = ((1, 1), (1, -1), (-1, 1), (-1, -1), (1, 0), (-1, 0), (0, 1), (0, -1))
DISTANCES = (3.0, 8.0, 14.0, 21.0, 30.0, 42.0)   # points from the point to the label's corner
LEADER = 6.0                                    # points: a label set farther off gets a line
POINT = 3.5                                     # points: half the box kept free at each point
LIGHTNESS = 0.4                                 # HLS lightness of a label's colour at most


def _cost(box: Bbox, taken: list[Bbox], frame: Bbox) -> float:
    """Area of ``box`` over the ``taken`` boxes plus its area outside ``frame``."""
    inside = Bbox.intersection(box, frame)
    outside = box.width * box.height - (inside.width * inside.height if inside else 0.0)
    return outside + sum(b.width * b.height for t in taken
                         if (b := Bbox.intersection(box, t)) is not None)


def readable(colour: str) -> str:
    """``colour`` darkened to at most LIGHTNESS (e.g. Okabe-Ito's yellow): text on white."""
    h, lightness, s = colorsys.rgb_to_hls(*to_rgb(colour))
    return to_hex(colorsys.hls_to_rgb(h, min(lightness, LIGHTNESS), s))


def _label(ax, text: str, xy, d: float, direction, colour: str, fontsize: float, leader: bool):
    dx, dy = direction
    norm = math.hypot(dx, dy)
    return ax.annotate(text, xy, xytext=(d * dx / norm, d * dy / norm), textcoords="offset points",
                       fontsize=fontsize, color=colour,
                       ha={1: "left", -1: "right", 0: "center"}[dx],
                       va={1: "bottom", -1: "top", 0: "center"}[dy],
                       arrowprops=dict(arrowstyle="-", color=colour, lw=0.4, shrinkA=0,
                                       shrinkB=POINT) if leader else None)


def place_labels(ax, xy, texts: list[str], colours: list[str], fontsize: float = 6,
                 avoid=()) -> list:
    """Annotate each point ``xy[k]`` (data coordinates) with ``texts[k]`` in ``colours[k]``
    (darkened where light: :func:`readable`) at the first free candidate offset (else the least
    covered one), clear of the points ``avoid`` too. Returns the annotations."""
    renderer = ax.figure.canvas.get_renderer()
    frame = ax.get_window_extent(renderer)
    r = POINT * ax.figure.dpi / 72.0
    taken = [Bbox.from_extents(u - r, v - r, u + r, v + r)
             for u, v in ax.transData.transform(np.asarray([*xy, *avoid], float).reshape(-1, 2))]
    out = []
    for point, text, colour in zip(xy, texts, map(readable, colours)):
        best = None
        for d, direction in ((d, k) for d in DISTANCES for k in DIRECTIONS):
            ann = _label(ax, text, point, d, direction, colour, fontsize, False)
            box = ann.get_window_extent(renderer)
            ann.remove()
            cost = _cost(box, taken, frame)
            if best is None or cost < best[0]:
                best = (cost, d, direction, box)
            if cost == 0.0:
                break
        _, d, direction, box = best
        taken.append(box)
        out.append(_label(ax, text, point, d, direction, colour, fontsize, d > LEADER))
    return out
