"""Caption sidecars: ``NAME.txt`` next to every figure ``NAME.png``, saying what is plotted, over
which seeds, with which interval, and the command that made it."""
from __future__ import annotations

import shlex
import sys
from dataclasses import dataclass, field
from pathlib import Path

from netsim.plot.style import MIN_BAND_SEEDS

#: how every band and error bar over seeds is computed (and when one is drawn)
INTERVAL = (f"95% Student-t confidence interval of the mean over seeds, drawn for the series "
            f"with at least {MIN_BAND_SEEDS} seeds (never from 2: its half-width would be "
            "12.7 standard errors)")


def command_line(argv: list[str] | None = None) -> str:
    """This process's command as typed: ``netsim figures R``, ``python script.py A``,
    ``python -m pkg ...``."""
    argv = list(sys.argv if argv is None else argv) or ["python"]
    head = Path(argv[0])
    if head.name == "__main__.py":
        package = head.resolve().parent
        names = [package.name]
        while (package.parent / "__init__.py").is_file():      # a subpackage: python -m a.b
            package = package.parent
            names.insert(0, package.name)
        words = ["python", "-m", ".".join(names)]
    elif head.suffix == ".py":
        words = ["python", argv[0]]
    else:
        words = [head.name]
    return shlex.join(words + argv[1:])


def seed_counts(counts: dict[str, int], ids=()) -> str:
    """The seeds of a figure's series: ``0, 1, 2: 3 per series`` or ``3 per series (sgp: 2)``
    (``ids``: the seeds, when known), and where one has fewer than MIN_BAND_SEEDS, that it has
    no band."""
    if not counts:
        return "none"
    common = max(set(counts.values()), key=list(counts.values()).count)
    odd = {k: n for k, n in counts.items() if n != common}
    text = (", ".join(map(str, sorted(ids))) + ": " if len(ids) else "") + f"{common} per series"
    text += " (" + ", ".join(f"{k}: {n}" for k, n in odd.items()) + ")" if odd else ""
    few = [k for k, n in counts.items() if n < MIN_BAND_SEEDS]
    if few and len(few) == len(counts):
        return text + f"; no band or error bar (fewer than {MIN_BAND_SEEDS} seeds)"
    return text + (f"; no band for {', '.join(few)} (fewer than {MIN_BAND_SEEDS} seeds)"
                   if few else "")


@dataclass
class Caption:
    """A figure's caption: ``what`` is plotted, its ``seeds`` and ``interval``, and ``notes``
    (overlapping curves, left-out points)."""

    what: str
    seeds: str
    interval: str = INTERVAL
    notes: list[str] = field(default_factory=list)

    def text(self, figure: str) -> str:
        """The sidecar's text for the figure file named ``figure``, with this process's
        command."""
        lines = [f"{figure}: {self.what}", f"Seeds: {self.seeds}.", f"Interval: {self.interval}."]
        lines += [f"Note: {n}." for n in dict.fromkeys(self.notes)]
        return "\n".join(lines + [f"Command: {command_line()}", ""])
