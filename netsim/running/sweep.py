"""Robustness studies: a scenario, a grid of overrides and seeds, run as independent cells.

A sweep file names a base scenario and a grid (cartesian product of override values) and/or a
list of cases; ``netsim sweep FILE`` expands it into runs of one algorithm and one seed each, every
run in ``OUT/<sweep>/runs/<id>/`` where ``id`` hashes the run's resolved config. Runs execute in a
local process pool (default) or through submitit (SLURM, or its local/debug executors); finished
runs are skipped on re-launch, a failed run is recorded with its error and does not stop the
others. The aggregate is a tidy ``table.csv`` (one row per run), ``cells.csv`` (mean and 95%
confidence interval over seeds per cell) and robustness curves in ``figures/``. One sweep at a
time writes a sweep folder (netsim.results.folder_lock).

Each run is exactly ``netsim run OUT/<sweep>/runs/<id>/config.yaml``: same config, same seed,
same numbers.
"""
from __future__ import annotations

import copy
import hashlib
import itertools
import json
import os
import time
import traceback
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

import numpy as np
import yaml

from netsim.analysis.stats import mean_ci
from netsim.analysis.summary import ACCURACY_KEYS
from netsim.analysis.sweep_table import panel_name
from netsim.errors import ConfigError
from netsim.results import Results, _csv_text, atomic_write, make_folder, open_folder, write_own
from netsim.results.folder_lock import FolderLock
from netsim.scenario.config import Scenario, parse_override, read_yaml
from netsim.schema import Field, check_section
from netsim.sim.accounting import METRIC_NAMES
from netsim.util.parent_watch import exit_with_parent
from netsim.util.pool import pool_context
from netsim.util.threads import capped, cores as machine_cores

#: the summary.json values of a run in table.csv and cells.csv: its accuracy statistics, the
#: total of every network metric (netsim.sim.accounting) and its times
TABLE_METRICS = (*ACCURACY_KEYS, *METRIC_NAMES, "sim_time", "wall_time")

SWEEP_FIELDS = {
    "name": Field("name", None, "sweep name (default: the file name)", nullable=True),
    "scenario": Field("str", doc="base scenario YAML, relative to the sweep file"),
    "overrides": Field("dict", {}, "overrides applied to every run"),
    "grid": Field("dict", {}, "dotted path -> list of values; the cartesian product is swept"),
    "cases": Field("list", [], "a list of override mappings, crossed with the grid"),
    "seeds": Field("list", [0], "seeds of every cell", item="int", lo=0),
    "x": Field("str", None, "dotted path of the resolved config used as the curves' x axis "
               "(default: the first grid key)", nullable=True),
    "metrics": Field("list", ["mean_accuracy", "bottom10_accuracy"], "metrics of the curves",
                     item="str", choices=TABLE_METRICS),
    "executor": Field("dict", {}, "how runs execute"),
}

EXECUTOR_FIELDS = {
    "name": Field("str", "local", "local process pool, serial, or submitit",
                  choices=("local", "serial", "submitit")),
    "workers": Field("int", None, "parallel runs (default: the machine's cores)", lo=1,
                     nullable=True),
    "threads": Field("int", None, "torch threads per run (default: cores // workers)", lo=1,
                     nullable=True),
    "cluster": Field("str", None, "submitit cluster: slurm, local or debug (default: auto)",
                     choices=("slurm", "local", "debug"), nullable=True),
    "folder": Field("str", "submitit_logs", "submitit log folder, relative to the sweep output"),
    "slurm": Field("dict", {}, "submitit parameters, e.g. {slurm_partition: gpu, timeout_min: 60, "
                   "gpus_per_node: 1}"),
}
DONE = "DONE"
_MISSING = object()


@dataclass
class Cell:
    """One run of the sweep: a resolved config of one algorithm and one seed."""

    id: str
    point: dict          # the grid/case overrides that make this cell
    algorithm: str
    seed: int
    config: dict


def _lookup(cfg: dict, path: str, missing: Any = None) -> Any:
    """The value at dotted ``path`` (list items by index, label or name); ``missing`` if none."""
    node: Any = cfg
    for part in path.split("."):
        if isinstance(node, list):
            hit = [a for a in node if isinstance(a, dict) and part in (a.get("label"), a.get("name"))]
            if hit:
                node = hit[0]
            elif part.isdigit() and int(part) < len(node):
                node = node[int(part)]
            else:
                return missing
        elif isinstance(node, dict) and part in node:
            node = node[part]
        else:
            return missing
    return node


def run_id(cfg: dict) -> str:
    """Hash of a resolved config (its name and output settings excluded)."""
    body = {k: v for k, v in cfg.items() if k not in ("name", "outputs", "threads")}
    return hashlib.sha1(yaml.safe_dump(body, sort_keys=True).encode()).hexdigest()[:12]


class Sweep:
    """A validated sweep file and its expansion into cells."""

    def __init__(self, raw: dict, path: Path | None = None):
        where = path.parent if path else Path.cwd()
        self.spec = check_section("sweep", raw, SWEEP_FIELDS)
        self.spec["executor"] = check_section("sweep.executor", self.spec["executor"],
                                              EXECUTOR_FIELDS)
        for key, values in self.spec["grid"].items():
            if not isinstance(values, list) or not values:
                raise ConfigError(f"sweep.grid.{key}", values, "a non-empty list of values")
        if not self.spec["seeds"]:
            raise ConfigError("sweep.seeds", [], "a non-empty list of ints >= 0")
        self.name = Field("name").check("sweep.name", self.spec["name"]
                                        or (path.stem if path else "sweep"))
        scen = Path(self.spec["scenario"])
        self.base = Scenario.load(scen if scen.is_absolute() else where / scen)
        self.x = self.spec["x"] or next(iter(self.spec["grid"]), None)

    @classmethod
    def load(cls, path: str | Path, seeds: list[int] | None = None,
             overrides: list[str] = ()) -> "Sweep":
        """Read a sweep file; ``seeds`` replace its seeds, ``overrides`` (``path=value``, as
        ``--set``) are added to its overrides of every run."""
        path = Path(path)
        raw = read_yaml(path, "sweep")
        if seeds is not None:
            raw["seeds"] = list(seeds)
        if overrides:
            base = raw.get("overrides") or {}
            if not isinstance(base, dict):
                raise ConfigError("sweep.overrides", base, "a mapping of dotted paths to values")
            raw["overrides"] = {**base, **dict(map(parse_override, overrides))}
        return cls(raw, path)

    def points(self) -> list[dict]:
        """Every combination of grid values crossed with the cases, as override mappings."""
        keys = list(self.spec["grid"])
        grid = [dict(zip(keys, combo))
                for combo in itertools.product(*(self.spec["grid"][k] for k in keys))]
        cases = self.spec["cases"] or [{}]
        return [{**g, **c} for g in grid for c in cases]

    def cells(self) -> list[Cell]:
        """Expand into runs (validated before anything runs)."""
        out = []
        base = self.base.with_overrides(self.spec["overrides"])
        for point in self.points():
            cfg = base.with_overrides(point).resolve()
            for spec in cfg["algorithms"]:
                for seed in self.spec["seeds"]:
                    one = copy.deepcopy(cfg)
                    one.update(algorithms=[spec], seed=seed)
                    one["outputs"].update(progress=False, figures=False)
                    rid = run_id(one)
                    one["name"] = rid
                    out.append(Cell(rid, point, spec["label"], seed, one))
        if self.x and all(_lookup(c.config, self.x, _MISSING) is _MISSING for c in out):
            raise ConfigError("sweep.x", self.x, "a dotted path of the resolved config, e.g. "
                              + (next(iter(self.spec["grid"]), None) or "network.links.p"))
        return out


def run_cell(config: dict, runs_dir: str, threads: int) -> tuple[str, str, str]:
    """Run one cell (in a worker) and mark it DONE or write its error.txt, holding its folder's
    lock throughout; returns (id, status, error). Never raises."""
    from netsim.running.runner import run

    rid, folder = config["name"], Path(runs_dir) / config["name"]
    try:
        lock = FolderLock(open_folder(folder, "results folder"))
    except ConfigError as exc:                  # a symlink, or another process is writing it
        return rid, "failed", str(exc)
    with lock:
        try:
            run(Scenario(config), seeds=[config["seed"]], out=runs_dir, quiet=True,
                threads=threads)
            write_own(folder, DONE, "")
            return rid, "done", ""
        except Exception as exc:                          # noqa: BLE001 — reported, not lost
            write_own(folder, "error.txt", "".join(traceback.format_exception(exc)))
            return rid, "failed", f"{type(exc).__name__}: {exc}"


def pool_size(ex: dict, runs: int) -> tuple[int, int]:
    """(parallel runs, torch threads of each) for ``runs`` runs of a resolved executor: its
    ``workers`` (default one per core, at most one per run) and ``threads`` (default the cores
    split among the workers). On this machine (not submitit) the threads are capped at that
    share, with a warning: together the runs use at most the cores."""
    cores = machine_cores()
    workers = min(ex["workers"] or cores, max(runs, 1))
    share = max(1, cores // workers)
    if ex["threads"] is None:
        return workers, share
    if ex["name"] == "submitit":
        return workers, ex["threads"]
    return workers, capped(ex["threads"], share, "sweep.executor.threads",
                           f"the {cores} cores of this machine split among {workers} parallel runs")


def _execute(todo: list[Cell], runs_dir: Path, ex: dict, out: Path,
             report: Callable[[Cell, str, str], None]) -> None:
    workers, threads = pool_size(ex, len(todo))
    by_id = {c.id: c for c in todo}
    if ex["name"] == "serial" or (ex["name"] == "local" and workers == 1):
        for c in todo:
            report(c, *run_cell(c.config, str(runs_dir), threads)[1:])
    elif ex["name"] == "local":
        with ProcessPoolExecutor(workers, mp_context=pool_context(),
                                 initializer=exit_with_parent, initargs=(os.getpid(),)) as pool:
            futures = [pool.submit(run_cell, c.config, str(runs_dir), threads) for c in todo]
            for f in as_completed(futures):
                rid, status, err = f.result()
                report(by_id[rid], status, err)
    else:
        import submitit

        executor = submitit.AutoExecutor(folder=out / ex["folder"], cluster=ex["cluster"])
        executor.update_parameters(**ex["slurm"])
        jobs = [executor.submit(run_cell, c.config, str(runs_dir), threads) for c in todo]
        for job in jobs:
            rid, status, err = job.result()
            report(by_id[rid], status, err)


def _scalar(v: Any) -> Any:
    return v if isinstance(v, (int, float, str, bool)) or v is None else json.dumps(v, sort_keys=True)


def run_sweep(sweep: Sweep | str | Path, out: str | Path = "results",
              log: Callable[[str], None] = print) -> Path:
    """Run (or resume) a sweep; write index, table, cells and figures; return its folder. The
    sweep holds its folder's lock throughout (a second sweep there is refused), each run its own
    folder's under ``runs/``."""
    if not isinstance(sweep, Sweep):
        sweep = Sweep.load(sweep)
    cells = sweep.cells()
    root = Path(out) / sweep.name
    with FolderLock(open_folder(root, "sweep folder"), "sweep folder") as lock:
        if lock.stale:
            log(f"sweep {sweep.name}: {lock.stale}")
        runs_dir = make_folder(root / "runs", "--out")
        status = {c.id: ("done" if (runs_dir / c.id / DONE).is_file() else "pending", "")
                  for c in cells}
        todo = [c for c in cells if status[c.id][0] != "done"]
        log(f"sweep {sweep.name}: {len(cells)} runs, {len(cells) - len(todo)} already done, "
            f"{len(todo)} to run")
        start = time.perf_counter()

        def report(cell: Cell, state: str, err: str) -> None:
            status[cell.id] = (state, err)
            _write_index(root, cells, status)
            n_done = sum(s == "done" for s, _ in status.values())
            log(f"[{n_done}/{len(cells)}] {cell.algorithm} seed {cell.seed} "
                f"{json.dumps(cell.point, default=str)}: {state}" + (f" ({err})" if err else ""))

        _write_index(root, cells, status)
        _execute(todo, runs_dir, sweep.spec["executor"], root, report)
        log(f"sweep {sweep.name}: ran {len(todo)} in {time.perf_counter() - start:.1f} s")
        aggregate(root, sweep, cells)
    return root


def _write_index(root: Path, cells: list[Cell], status: dict) -> None:
    rows = [(c.id, c.algorithm, c.seed, json.dumps(c.point, sort_keys=True, default=str),
             status[c.id][0], status[c.id][1], f"runs/{c.id}") for c in cells]
    atomic_write(root / "index.csv", _csv_text(
        ("id", "algorithm", "seed", "point", "status", "error", "folder"), rows))


def _final_test_accuracy(folder: Path) -> np.ndarray:
    """Each client's test accuracy at the last evaluation of a one-algorithm, one-seed run (the
    clients with a score: test samples)."""
    m = Results(folder).metrics
    m = m[m["split"] == "test"]
    last = m[m["round"] == m["round"].max()].sort_values("client")
    return last["accuracy"][last["loss"].notna()].to_numpy()


def _improved_over_local(root: Path, done: list[Cell]) -> dict[str, float]:
    """Share of clients beating the ``local`` run of the same grid point and seed (a plain run
    with both algorithms reports the same number in its summary); {} without local runs."""
    key = lambda c: (json.dumps(c.point, sort_keys=True, default=str), c.seed)  # noqa: E731
    local = {key(c): _final_test_accuracy(root / "runs" / c.id)
             for c in done if c.config["algorithms"][0]["name"] == "local"}
    return {c.id: float(np.mean(_final_test_accuracy(root / "runs" / c.id) > local[key(c)]))
            for c in done if key(c) in local}


def aggregate(root: Path, sweep: Sweep, cells: list[Cell]):
    """table.csv (one row per finished run), cells.csv (mean and 95% CI) and robustness curves."""
    import pandas as pd

    done = [c for c in cells if (root / "runs" / c.id / DONE).is_file()]
    improved = _improved_over_local(root, done)
    rows = []
    for c in done:
        s = json.loads((root / "runs" / c.id / "summary.json").read_text())["algorithms"][c.algorithm]
        row = {"id": c.id, **{k: _scalar(v) for k, v in c.point.items()},
               "x": _scalar(_lookup(c.config, sweep.x)) if sweep.x else None,
               "algorithm": c.algorithm, "seed": c.seed}
        row.update({m: s.get(m) for m in TABLE_METRICS})
        row["improved_over_local"] = improved.get(c.id, row["improved_over_local"])
        row["diverged"] = bool(s.get("diverged"))
        rows.append(row)
    table = pd.DataFrame(rows)
    if table.empty:
        atomic_write(root / "table.csv", "")
        return table
    others = [k for k in sweep.spec["grid"] if k != sweep.x]
    table["panel"] = [panel_name({k: table.at[i, k] for k in others}) for i in table.index]
    atomic_write(root / "table.csv", table.to_csv(index=False))
    keys = [k for k in table.columns if k not in ("id", "seed", "diverged", *TABLE_METRICS)]
    out = []
    for key, g in table.groupby(keys, sort=False, dropna=False):
        row = dict(zip(keys, key if isinstance(key, tuple) else (key,)))
        row["n_seeds"] = len(g)
        row["diverged"] = int(g["diverged"].sum())   # accuracy statistics of such a cell: nan
        for m in TABLE_METRICS:
            vals = pd.to_numeric(g[m], errors="coerce").to_numpy()
            if row["diverged"] and m in ACCURACY_KEYS:
                vals = vals[:0]
            mean, lo, hi = mean_ci(vals)
            row.update({m: mean, f"{m}_ci_low": lo, f"{m}_ci_high": hi})
        out.append(row)
    cells_df = pd.DataFrame(out)
    atomic_write(root / "cells.csv", cells_df.to_csv(index=False))
    if sweep.x and cells_df["x"].notna().any():
        from netsim.plot import plot_robustness

        for m in sweep.spec["metrics"]:
            curve = pd.DataFrame({sweep.x: cells_df["x"], "algorithm": cells_df["algorithm"],
                                  "panel": cells_df["panel"], "diverged": cells_df["diverged"],
                                  "mean": cells_df[m], "ci_low": cells_df[f"{m}_ci_low"],
                                  "ci_high": cells_df[f"{m}_ci_high"],
                                  "n_seeds": cells_df["n_seeds"]})
            plot_robustness(curve, sweep.x, m, root / "figures" / f"robustness_{m}.png", pdf=True,
                            panel="panel" if others else None,
                            registered={c.algorithm: c.config["algorithms"][0]["name"]
                                        for c in done})
    return table
