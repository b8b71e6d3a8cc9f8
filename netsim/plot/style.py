"""One style for every figure: column-width sizes, readable fonts, the Okabe–Ito colour-blind-safe
palette with a marker and a dash per series, one unit per metric, PNG plus vector PDF.

Figures are built on ``matplotlib.figure.Figure`` with the Agg canvas (no pyplot state), inside
:data:`RC` (see :func:`styled`).
"""
from __future__ import annotations

import functools
from dataclasses import dataclass
from pathlib import Path

import matplotlib
import numpy as np
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.transforms import Bbox

from netsim.results.manifest import record_figures
from netsim.util.atomic import atomic_write

# Okabe & Ito (2008): distinguishable under the common colour-vision deficiencies
# (yellow last: the weakest on white)
OKABE_ITO = ("#E69F00", "#56B4E9", "#009E73", "#0072B2", "#D55E00", "#CC79A7", "#000000",
             "#F0E442")
MARKERS = ("o", "s", "^", "D", "v", "P", "X")    # 7 markers: coprime with the 8 colours
LINESTYLES = ("-", "--", ":", "-.")
COLUMN = 3.4                     # inches: one column of a two-column paper (IEEE, ACM, Elsevier)
PAGE = 7.0                       # inches: full text width
MARKS_PER_LINE = 10              # at most this many markers along one curve
DPI = 200
#: a 95% band (or error bar) over seeds from this many seeds on: from 2 seeds Student-t's
#: half-width is 12.7 standard errors, a band over most of the axis that says nothing
MIN_BAND_SEEDS = 3
LOG_SPAN = 100.0                 # an axis of bytes or time spanning more than this ratio: log

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


@dataclass(frozen=True)
class Look:
    """How one series is drawn: colour, marker and dash."""

    colour: str
    marker: str
    dash: str

    def line(self, points: int = 1, phase: int = 0) -> dict:
        """``Axes.plot`` keywords, with at most MARKS_PER_LINE markers over ``points`` points,
        the first at point ``phase`` (modulo the step: a curve drawn on another one shows its
        markers between the other's)."""
        step = max(1, -(-points // MARKS_PER_LINE))
        return {"color": self.colour, "marker": self.marker, "ls": self.dash,
                "markevery": (phase % step, step)}


def looks(labels) -> dict[str, Look]:
    """A fixed look per label, in the given order (same algorithm, same look in every figure of
    a folder): label k gets colour k mod 8, marker k mod 7 and dash k div 8, so no two of the
    first 56 labels share colour and marker, and neighbours differ in both."""
    n = len(OKABE_ITO)
    return {lab: Look(OKABE_ITO[k % n], MARKERS[k % len(MARKERS)],
                      LINESTYLES[k // n % len(LINESTYLES)]) for k, lab in enumerate(labels)}


#: (scale, axis label) of summary.json's metrics that are no percentage, units in the label
METRIC_UNITS = {"bytes_sent": (1e-6, "bytes sent by all nodes [MB]"),
                "sim_time": (1.0, "simulated time [s]"), "wall_time": (1.0, "wall-clock time [s]"),
                "mean_latency": (1.0, "mean latency [s]"),
                "max_staleness": (1.0, "largest staleness [rounds]"),
                "client_variance": (1e4, "variance of the accuracy across clients [%²]")}


def metric_axis(metric: str) -> tuple[float, str, tuple[float, float] | None]:
    """(scale, axis label, limits) of a metric: accuracies and shares of clients in percent within
    [0, 100] (the one unit for accuracy in every figure), others in their units
    (:data:`METRIC_UNITS`), counts as they are."""
    if metric in METRIC_UNITS:
        return (*METRIC_UNITS[metric], None)
    if metric.endswith("accuracy"):
        words = metric.replace("_", " ").replace("bottom10", "bottom-10%")
        return 100.0, f"{words} [%]", (0.0, 100.0)
    if metric == "improved_over_local":
        return 100.0, "clients beating Local [%]", (0.0, 100.0)
    return 1.0, metric.replace("_", " "), None


def log_scale(values) -> bool:
    """Whether an axis of ``values`` (bytes, times, counts) needs a log scale: its positive
    values span more than :data:`LOG_SPAN` (zeros cannot be shown on it and are left out)."""
    v = np.asarray(values, float)
    v = v[np.isfinite(v) & (v > 0)]
    return v.size > 1 and v.max() > LOG_SPAN * v.min()


def clamp(ax, limits: tuple[float, float] | None) -> None:
    """Keep the y axis of ``ax`` within ``limits`` (autoscaling margins would pass them)."""
    if limits is not None:
        lo, hi = ax.get_ylim()
        ax.set_ylim(max(lo, limits[0]), min(hi, limits[1]))


def freeze_layout(fig: Figure) -> Bbox | None:
    """Lay ``fig`` out once at the output resolution (:rc:`savefig.dpi`) and fix it (the layout
    engine is removed: later saves keep the axes where they are); returns the box to save with
    :rc:`savefig.bbox` ``tight`` (padded by :rc:`savefig.pad_inches`), else None. ``savefig``
    with a layout engine and ``bbox_inches="tight"`` lays out and draws a figure twice per
    file."""
    dpi = matplotlib.rcParams["savefig.dpi"]
    fig.set_dpi(fig.dpi if dpi == "figure" else dpi)
    engine = fig.get_layout_engine()
    if engine is not None:
        engine.execute(fig)
        fig.set_layout_engine(None)          # not "none": savefig lays out its placeholder
    if matplotlib.rcParams["savefig.bbox"] != "tight":
        return None
    return fig.get_tightbbox(fig.canvas.get_renderer()).padded(
        matplotlib.rcParams["savefig.pad_inches"])


def save(fig: Figure, path: str | Path, pdf: bool = False, caption=None) -> list[Path]:
    """Write ``path`` (PNG) and, with ``pdf``, the same figure as vector PDF next to it: laid out
    once (:func:`freeze_layout`), the PNG drawn once; with a ``caption``
    (netsim.plot.caption.Caption) its text in ``path`` with suffix ``.txt``. In a results
    folder's ``figures/`` these are netsim's own files (netsim.results.manifest.record_figures).
    Returns the figure files."""
    path = Path(path)
    paths = [path, path.with_suffix(".pdf")] if pdf else [path]
    sidecar = [path.with_suffix(".txt")] if caption is not None else []
    path.parent.mkdir(parents=True, exist_ok=True)
    record_figures(paths + sidecar)
    for txt in sidecar:
        atomic_write(txt, caption.text(path.name + (" (and .pdf)" if pdf else "")))
    fig.savefig(path, bbox_inches=freeze_layout(fig))
    if pdf:
        fig.savefig(paths[1])                 # its own tight box: PDF text is a little wider
    return paths
