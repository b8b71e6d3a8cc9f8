"""One style for every figure: column-width sizes, readable fonts, the Okabe–Ito colour-blind-safe
palette, PNG plus vector PDF.

Figures are built on ``matplotlib.figure.Figure`` with the Agg canvas (no pyplot state), inside
:data:`RC` (see :func:`styled`).
"""
from __future__ import annotations

import functools
from pathlib import Path

import matplotlib
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

# Okabe & Ito (2008): distinguishable under the common colour-vision deficiencies
# (yellow last: the weakest on white)
OKABE_ITO = ("#E69F00", "#56B4E9", "#009E73", "#0072B2", "#D55E00", "#CC79A7", "#000000",
             "#F0E442")
LINESTYLES = ("-", "--", ":", "-.")
COLUMN = 3.4                     # inches: one column of a two-column paper
PAGE = 7.0                       # inches: full text width
DPI = 200

RC = {
    "font.size": 8, "axes.titlesize": 8, "axes.labelsize": 8, "xtick.labelsize": 7,
    "ytick.labelsize": 7, "legend.fontsize": 7, "legend.frameon": False,
    "axes.prop_cycle": matplotlib.cycler(color=OKABE_ITO),
    "axes.spines.top": False, "axes.spines.right": False, "axes.grid": True,
    "grid.alpha": 0.3, "grid.linewidth": 0.5, "lines.linewidth": 1.3, "lines.markersize": 4,
    "image.cmap": "viridis", "pdf.fonttype": 42, "ps.fonttype": 42, "savefig.dpi": DPI,
    "savefig.bbox": "tight", "savefig.pad_inches": 0.02,
}


def styled(fn):
    """Run a figure function inside the netsim style (rcParams are read as artists are made)."""
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        with matplotlib.rc_context(RC):
            return fn(*args, **kwargs)
    return wrapper


def new_figure(width: float = COLUMN, height: float = 2.4, nrows: int = 1, ncols: int = 1,
               **kw):
    """A constrained-layout Figure on the Agg canvas and its axes (``Figure.subplots`` keywords)."""
    fig = Figure(figsize=(width, height), layout="constrained")
    FigureCanvasAgg(fig)
    return fig, fig.subplots(nrows, ncols, **kw)


def colours(labels) -> dict[str, tuple[str, str]]:
    """A fixed (colour, line style) per label, in the given order: same algorithm, same look in
    every figure of a folder."""
    n = len(OKABE_ITO)
    return {lab: (OKABE_ITO[k % n], LINESTYLES[k // n % len(LINESTYLES)])
            for k, lab in enumerate(labels)}


def save(fig: Figure, path: str | Path, pdf: bool = False) -> list[Path]:
    """Write ``path`` (PNG) and, with ``pdf``, the same figure as vector PDF next to it."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path)
    out = [path]
    if pdf:
        fig.savefig(path.with_suffix(".pdf"))
        out.append(path.with_suffix(".pdf"))
    return out
