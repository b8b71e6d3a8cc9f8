"""Small multiples of curves over seeds: a figure of more than :data:`MAX_SERIES` series becomes
one panel per group of the run table (netsim.analysis.summary.TABLE_GROUPS: baselines, federated,
clustered, decentralised, learned graph, learned weights), each with Local and Oracle (where they
ran) as grey reference curves and its own legend; :func:`draw_panel` draws one panel (bands from
MIN_BAND_SEEDS seeds, a curve drawn on an equal one says so, zeros left out of a log axis;
artists named by gid ``series:<label>``, ``reference:<label>`` and ``band:<label>``)."""
from __future__ import annotations

from dataclasses import dataclass

import matplotlib
import numpy as np

from netsim.plot.style import MIN_BAND_SEEDS, PAGE, Look, new_figure

MAX_SERIES = 8                       # series per panel at most (references included)
REFERENCE_NAMES = ("local", "oracle")    # registered names drawn as references in every panel
REFERENCE_LOOKS = (("0.5", "--"), ("0.2", ":"))   # grey and dash per reference, no marker
SAME = 0.005                         # curves closer than this share of the y span: "equal"


@dataclass(frozen=True)
class Panel:
    """One panel: its ``title`` (a group of the run table; empty for a single panel), the
    ``series`` drawn in their looks and the ``references`` drawn in grey."""

    title: str
    series: tuple[str, ...]
    references: tuple[str, ...] = ()


@dataclass(frozen=True)
class Curve:
    """One series over seeds in plotting units: mean and 95% interval at each x, and the
    number of seeds (a band from MIN_BAND_SEEDS on)."""

    x: np.ndarray
    mean: np.ndarray
    lo: np.ndarray
    hi: np.ndarray
    seeds: int


def split(order: list[str], registered: dict[str, str] | None) -> list[Panel]:
    """The panels of the series ``order``: one when there are at most MAX_SERIES (or the
    registered names, label -> algorithm name, are unknown), else one per run-table group in
    the table's order (a group with too many series in several panels), with the labels of
    Local and Oracle as references of every other group's panels."""
    if registered is None or len(order) <= MAX_SERIES:
        return [Panel("", tuple(order))]
    from netsim.analysis.summary import TABLE_GROUPS, table_group

    refs = [a for a in order if registered.get(a) in REFERENCE_NAMES]
    groups: dict[str, list[str]] = {}
    for alg in order:
        groups.setdefault(table_group(registered.get(alg, alg)), []).append(alg)
    out = []
    for group in TABLE_GROUPS:
        members = groups.get(group, [])
        extra = tuple(r for r in refs if r not in members)
        room = MAX_SERIES - len(extra)
        chunks = [members[k:k + room] for k in range(0, len(members), room)]
        for k, chunk in enumerate(chunks):
            title = group if len(chunks) == 1 else f"{group} ({k + 1} of {len(chunks)})"
            out.append(Panel(title, tuple(chunk), extra))
    return out


def panel_grid(n: int, height: float = 1.55, ncols: int = 2):
    """A PAGE-wide figure of ``n`` panels in ``ncols`` columns sharing both axes (unused cells
    hidden; x tick labels on the lowest panel of each column). Returns the figure and the
    panels' axes."""
    nrows = -(-n // ncols)
    fig, axes = new_figure(PAGE, 0.45 + height * nrows, nrows, ncols, sharex=True, sharey=True,
                           squeeze=False)
    for k, ax in enumerate(axes.flat):
        if k >= n:
            ax.set_visible(False)
        elif k + ncols >= n:                      # nothing drawn below it
            ax.xaxis.set_tick_params(labelbottom=True)
    return fig, list(axes.flat[:n])


def shared_labels(fig, axes) -> None:
    """One x and one y label (the first panel's) for panels that share their axes."""
    size = matplotlib.rcParams["axes.labelsize"]
    fig.supxlabel(axes[0].get_xlabel(), fontsize=size)
    fig.supylabel(axes[0].get_ylabel(), fontsize=size)
    for ax in axes:
        ax.set_xlabel("")
        ax.set_ylabel("")


def split_text(panels: list[Panel]) -> str:
    """The caption's words for the panels of :func:`split` (none for a single panel)."""
    if len(panels) == 1:
        return ""
    refs = list(dict.fromkeys(r for p in panels for r in p.references))
    return (f"; a panel per group of the run table ({', '.join(p.title for p in panels)})"
            + (f", {' and '.join(refs)} as grey reference curves in the others" if refs else ""))


def panel_legend(ax) -> None:
    """The panel's own legend, right of it."""
    ax.legend(loc="upper left", bbox_to_anchor=(1.02, 1.0), fontsize=6, handlelength=2.6,
              borderaxespad=0.0)


def band(ax, x, lo, hi, colour: str, limits: tuple[float, float] | None,
         alpha: float = 0.2):
    """A confidence band from ``lo`` to ``hi``, clipped to the metric's ``limits``."""
    if limits is not None:
        lo, hi = np.clip(lo, *limits), np.clip(hi, *limits)
    return ax.fill_between(x, lo, hi, color=colour, alpha=alpha, lw=0)


def _equal(a: Curve, b: Curve, tol: float) -> bool:
    """Whether ``a`` lies on ``b``: the same x (within 2%) and means within ``tol`` (or both
    undefined) at every point."""
    return (len(a.x) == len(b.x) and np.allclose(a.x, b.x, rtol=0.02)
            and bool(np.all((np.abs(a.mean - b.mean) <= tol)
                            | (np.isnan(a.mean) & np.isnan(b.mean)))))


def draw_panel(ax, curves: dict[str, Curve], panel: Panel, look: dict[str, Look],
               names: dict[str, str], limits: tuple[float, float] | None,
               log_x: bool = False, band_alpha: float = 0.2) -> list[str]:
    """Draw ``panel``: its references in grey, then its series in their looks with bands from
    MIN_BAND_SEEDS seeds (``names``: legend labels), markers staggered from series to series.
    A series equal to one drawn before (within SAME of the y span) is labelled
    ``name (= other)``; on a log x axis (``log_x``) points at x <= 0 are left out, and a series
    with none left is drawn as a level line at its last mean. Returns notes for the caption."""
    shown = [a for a in (*panel.references, *panel.series) if a in curves]
    values = np.concatenate([curves[a].mean for a in shown]) if shown else np.zeros(1)
    tol = SAME * ((limits[1] - limits[0]) if limits else float(np.nanmax(values) -
                                                                 np.nanmin(values)) or 1.0)
    notes, drawn = [], {}
    for k, alg in enumerate(a for a in panel.references if a in curves):
        colour, dash = REFERENCE_LOOKS[k % len(REFERENCE_LOOKS)]
        notes += _line(ax, curves[alg], log_x, label=names.get(alg, alg), color=colour, ls=dash,
                       lw=0.9, zorder=1.5, gid=f"reference:{alg}")
    for alg in (a for a in panel.series if a in curves):
        c = curves[alg]
        on = next((b for b, d in drawn.items() if _equal(c, d, tol)), None)
        name = names.get(alg, alg)
        if on is not None:
            other = names.get(on, on)
            name = f"{name} (= {other})"
            notes.append(f"{names.get(alg, alg)} is drawn on {other}: their means differ by at "
                         f"most {tol:.2g} (in the y axis' unit) at every point")
        notes += _line(ax, c, log_x, label=name, gid=f"series:{alg}",
                       **look[alg].line(len(c.x), len(drawn)))
        if c.seeds >= MIN_BAND_SEEDS:
            keep = c.x > 0 if log_x else np.ones(len(c.x), bool)
            band(ax, c.x[keep], c.lo[keep], c.hi[keep], look[alg].colour, limits,
                 band_alpha).set_gid(f"band:{alg}")
        drawn[alg] = c
    return notes


def _line(ax, c: Curve, log_x: bool, label: str, **kw) -> list[str]:
    """One curve (its points at x > 0 on a log axis; a level line at its last mean when none
    is); returns the note of a level line."""
    keep = c.x > 0 if log_x else np.ones(len(c.x), bool)
    if keep.any():
        ax.plot(c.x[keep], c.mean[keep], label=label, **kw)
        return []
    kw = {k: v for k, v in kw.items() if k not in ("marker", "markevery")}
    ax.axhline(c.mean[-1], label=f"{label} (last value)", **kw)
    return [f"{label} has no point above 0 on the log axis: its last value is drawn as a "
            "level line"]
