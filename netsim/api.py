"""Python entry points beside ``netsim.run``: a sweep built in code and read back as pandas, and
registering a link model or an algorithm from a script (docs/python_api.md).

``run_sweep(scenario, grid={...}, seeds=[...])`` writes the base scenario and the sweep file into
``OUT/<name>/`` and runs it exactly as ``netsim sweep OUT/<name>/sweep.yaml`` would (same run
ids, resumable), so a study made in a script can be re-run from the command line.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any, Callable, Mapping

import yaml

from netsim.results import Results, atomic_write, open_folder
from netsim.results.folder_lock import FolderLock
from netsim.scenario.config import Scenario


class SweepResults:
    """A sweep folder read back: ``table`` (one row per run), ``cells`` (mean and 95% CI over
    seeds per grid point and algorithm), ``index`` (status of every run) as pandas DataFrames,
    ``figures`` (the robustness curves), ``run(id)`` one run's :class:`~netsim.Results`."""

    def __init__(self, path: str | Path):
        self.dir = Path(path)
        if not (self.dir / "index.csv").is_file():
            raise FileNotFoundError(f"{self.dir} is not a netsim sweep folder (no index.csv)")

    def _csv(self, name: str):
        import pandas as pd
        path = self.dir / f"{name}.csv"
        return pd.read_csv(path) if path.is_file() and path.stat().st_size else pd.DataFrame()

    @property
    def table(self):
        return self._csv("table")

    @property
    def cells(self):
        return self._csv("cells")

    @property
    def index(self):
        return self._csv("index")

    @property
    def figures(self) -> list[Path]:
        return sorted((self.dir / "figures").glob("*.png"))

    def run(self, run_id: str) -> Results:
        """The results folder of one run (its id: a row of ``table`` or ``index``)."""
        return Results(self.dir / "runs" / run_id)

    def __repr__(self) -> str:
        status = self.index["status"].value_counts().to_dict()
        counts = ", ".join(f"{v} {k}" for k, v in sorted(status.items()))
        return f"SweepResults('{self.dir}': {sum(status.values())} runs: {counts})"


def run_sweep(sweep: Any, grid: Mapping[str, list] | None = None, *,
              seeds: list[int] | None = None, cases: list[dict] | None = None,
              overrides: Mapping[str, Any] | None = None, x: str | None = None,
              metrics: list[str] | None = None, executor: Mapping[str, Any] | None = None,
              name: str | None = None, out: str | Path = "results",
              quiet: bool = False) -> SweepResults:
    """Run (or resume) a robustness study and return its results.

    ``sweep`` is a sweep YAML file (or a ``netsim.running.sweep.Sweep``), as ``netsim sweep FILE``;
    with ``grid`` or ``cases`` it is the base scenario instead (a :class:`~netsim.Scenario` or
    a scenario YAML path) and the keywords are the sweep file's keys (``seeds`` default [0],
    ``name`` default the scenario's name + ``_sweep``). ``quiet``: no line per finished run.
    """
    from netsim.running.sweep import Sweep, run_sweep as run_file

    log: Callable[[str], None] = (lambda text: None) if quiet else print
    if grid is None and cases is None:
        return SweepResults(run_file(sweep if isinstance(sweep, Sweep) else Sweep.load(sweep),
                                     out=out, log=log))
    base = sweep if isinstance(sweep, Scenario) else Scenario.load(sweep)
    name = name or f"{base.name}_sweep"
    folder = Path(out) / name
    with FolderLock(open_folder(folder, "sweep folder"), "sweep folder"):   # the sweep's too
        atomic_write(folder / "scenario.yaml", yaml.safe_dump(base.raw, sort_keys=False))
        spec = {"name": name, "scenario": "scenario.yaml", "grid": dict(grid or {}),
                "cases": list(cases or []), "seeds": list(seeds or [0]),
                "overrides": dict(overrides or {}), "x": x, "executor": dict(executor or {})}
        if metrics is not None:
            spec["metrics"] = list(metrics)
        atomic_write(folder / "sweep.yaml", yaml.safe_dump(spec, sort_keys=False))
        return SweepResults(run_file(Sweep.load(folder / "sweep.yaml"), out=out, log=log))


def register_algorithm(name: str):
    """Class decorator: register an ``algorithms.base.Algorithm`` subclass under ``name`` (its
    ``fields`` are validated with the scenario), e.g. from a script before ``netsim.run``."""
    from algorithms import register
    from algorithms.base import Algorithm

    def deco(cls):
        if not (isinstance(cls, type) and issubclass(cls, Algorithm)):
            raise TypeError(f"register_algorithm({name!r}): {cls!r} is not an Algorithm subclass")
        return register(name)(cls)
    return deco


def register_link_model(name: str, fields: Mapping | None = None):
    """Class decorator: register a ``netsim.links.LinkModel`` subclass under ``name`` with its
    parameters ``fields`` ({param: netsim.schema.Field}); it is built as
    ``cls(adjacency, rng, **params)`` and its ``up(t)`` says which directed links are up."""
    from netsim.links.models import LINKS, LinkModel

    def deco(cls):
        if not (isinstance(cls, type) and issubclass(cls, LinkModel)):
            raise TypeError(f"register_link_model({name!r}): {cls!r} is not a LinkModel subclass")
        return LINKS.register(name, fields)(cls)
    return deco
