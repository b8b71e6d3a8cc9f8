"""Interface layer: the ``netsim`` command: run, validate, list, sweep, figures, analyze, reference.

Each action is one documented function call (``netsim.run``, ``Scenario.resolve``,
``netsim.running.sweep.run_sweep``, ``netsim.plot.write_run_figures``, ``netsim.analysis.analyze``),
so scripts can do the same from Python.
"""
from __future__ import annotations

import argparse
import gc
import sys
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

from netsim.cli.report import on_stop, report
from netsim.errors import ConfigError, command_line

DEFAULT_SCENARIO = Path(__file__).resolve().parents[2] / "scenarios" / "quickstart.yaml"

LISTABLE = ("algorithms", "topologies", "datasets", "partitions", "models", "links")


def _registry(kind: str):
    if kind == "algorithms":
        from algorithms import ALGORITHMS as reg
    elif kind == "topologies":
        from topologies import TOPOLOGIES as reg
    elif kind == "datasets":
        from netsim.data import DATASETS as reg
    elif kind == "partitions":
        from netsim.data import PARTITIONS as reg
    elif kind == "models":
        from netsim.models import MODELS as reg
    else:
        from netsim.links.models import LINKS as reg
    return reg


def _scenario(args):
    from netsim.scenario.config import Scenario

    scenario = Scenario.load(args.scenario or DEFAULT_SCENARIO)
    return scenario.with_overrides(args.set or [])


def _out(value: str | None) -> str | None:
    """``--out``: a path, not an empty string (that would fall back to the default)."""
    if value == "":
        raise ConfigError("--out", value, "a path (not empty)")
    return value


#: whether this process is the ``netsim`` command's own (:func:`entry`), not a caller of main()
_OWN_PROCESS = False


@contextmanager
def _loading() -> Iterator[None]:
    """The imports of a long command. In the command's own process (:func:`entry`) the cyclic
    garbage collector is off while they load, and then everything alive is put out of its reach
    (``gc.freeze``): the modules, torch's alone about 190,000 objects, which its full collections
    would otherwise scan during the imports (three of 12-65 ms each with torch) and again during
    the run. A caller of :func:`main` in its own process keeps its collector as it was."""
    if not _OWN_PROCESS:
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.freeze()
        gc.enable()


def cmd_run(args) -> int:
    with _loading():
        import networkx  # noqa: F401  (every topology is built with it)

        from netsim.running.runner import run
        from netsim.util.threads import choose, warn_if_busy

    scenario = _scenario(args)
    cfg = scenario.resolve()                # fail before anything runs
    out = _out(args.out)
    threads = choose(cfg["threads"] if args.threads is None else args.threads)
    warn_if_busy(threads)
    on_stop(f"what the run wrote is kept in {Path(out or cfg['outputs']['dir']) / cfg['name']} "
            "with its last checkpoint: run the same command with --resume to go on")
    run(scenario, seeds=args.seeds, out=out, quiet=args.quiet, verbose=args.verbose,
        overwrite=args.overwrite, threads=threads, resume=args.resume)
    return 0


def cmd_validate(args) -> int:
    import yaml

    from netsim.runtime import resolve_device
    from netsim.scenario import memory
    from netsim.util.free_memory import human

    cfg = _scenario(args).resolve()
    device = resolve_device(cfg["device"])
    memory.check(cfg, device)                      # the N x N part first: no data loaded for it
    need = sum(memory.check(cfg, device, *memory.dataset_estimate(cfg)).values())
    if args.show:
        print(yaml.safe_dump(cfg, sort_keys=False))
    print(f"{args.scenario or DEFAULT_SCENARIO}: valid ({len(cfg['algorithms'])} algorithms, "
          f"{cfg['clients']} clients, at least {human(need)} of memory)")
    return 0


def _results(path: str) -> Path:
    """A results folder given on the command line, checked (netsim.results.readable); warns (stderr)
    when its run is incomplete."""
    from netsim.results import INCOMPLETE, Results
    from netsim.results.readable import check_results

    res = Results(check_results(path))
    if res.incomplete:
        print(f"netsim: warning: {path} holds an incomplete run ({INCOMPLETE} marker: it was "
              "interrupted or is still running); what follows covers only what it finished",
              file=sys.stderr)
    return res.dir


def cmd_list(args) -> int:
    from netsim.schema import describe

    reg = _registry(args.kind)
    for comp in reg.items():
        print(f"{comp.name:<22}{comp.doc}")
        if args.verbose:
            for line in describe(comp.fields):
                print(f"{'':<4}{line}")
    return 0


def cmd_figures(args) -> int:
    from netsim.plot import write_run_figures

    folder = _results(args.results)
    on_stop(f"the figures written so far are in {folder / 'figures'}: run the same command "
            "again to write them all")
    try:
        paths = write_run_figures(folder, pdf=args.pdf, only=args.only)
    except ValueError as exc:                       # an unknown --only kind
        print(f"netsim: error: {exc}", file=sys.stderr)
        return 2
    for path in paths:
        print(path)
    return 0


def cmd_sweep(args) -> int:
    out = _out(args.out)
    if not args.dry_run:                    # the pool's imports overlap this process's
        from netsim.util.pool import start_early
        start_early(args.sweep, args.workers)
    with _loading():
        from netsim.running.sweep import EXECUTOR_FIELDS, Sweep, pool_size, run_sweep
        from netsim.util.threads import warn_if_busy

    sweep = Sweep.load(args.sweep, seeds=args.seeds, overrides=args.set or [])
    for key in ("workers", "threads"):
        if getattr(args, key) is not None:
            sweep.spec["executor"][key] = EXECUTOR_FIELDS[key].check(f"--{key}", getattr(args, key))
    cells = sweep.cells()                   # validates every run before anything runs
    workers, threads = pool_size(sweep.spec["executor"], len(cells))
    if args.dry_run:
        print(f"{sweep.name}: {len(cells)} runs")
        return 0
    if sweep.spec["executor"]["name"] != "submitit":
        warn_if_busy(threads, workers)
    on_stop(f"the finished runs are kept in {Path(out) / sweep.name}: run the same command "
            "again to go on (they are skipped)")
    root = run_sweep(sweep, out=out)
    print(f"results: {root}")
    return 0


def _paired(results: str, pairs: list[str]) -> list[dict]:
    """``--paired A:B ...``: the paired differences of a results folder (checked before any
    analysis runs)."""
    import json

    from netsim.analysis.paired import paired_difference
    summary = json.loads((Path(results) / "summary.json").read_text()) if pairs else {}
    rows = []
    for pair in pairs:
        a, sep, b = pair.partition(":")
        if not sep or not a or not b:
            raise ConfigError("--paired", pair, "A:B, two algorithm labels of the run")
        try:
            rows.append(paired_difference(summary, a, b))
        except KeyError as err:
            raise ConfigError("--paired", pair, "A:B, two algorithm labels of the run",
                              err.args[0]) from None
    return rows


def cmd_analyze(args) -> int:
    from netsim.analysis import analyze, export_graphml, format_table, write_analysis
    from netsim.schema import Field

    _results(args.results)
    threshold = Field("float", lo=0, hi=1 if args.relative else None).check("--threshold",
                                                                           args.threshold)
    target = Field("float", None, lo=0).check("--target", args.target)
    paired = _paired(args.results, args.paired)
    analysis = analyze(args.results, threshold=threshold, target=target,
                       relative_to_max=args.relative)
    written = write_analysis(args.results, analysis)          # before stdout, which may close
    graphs = export_graphml(args.results, threshold=threshold, relative_to_max=args.relative)
    print(format_table(analysis, width=None if args.wide else 100))
    if paired:
        from netsim.analysis.paired import format_paired
        print(format_paired(paired))
    for path in written:
        print(path)
    if graphs:
        print(f"{len(graphs)} GraphML files in {graphs[0].parent}")
    return 0


def cmd_standin(args) -> int:
    from netsim.data.standins import check_standin, write_standin
    from netsim.results import make_folder

    check_standin(args.dataset, args.samples, args.writers, args.split)
    make_folder(args.folder, "folder")
    try:
        root = write_standin(args.dataset, args.folder, samples_per_class=args.samples,
                             writers=args.writers, seed=args.seed, split=args.split)
    except OSError as exc:
        raise ConfigError("folder", args.folder, "a writable folder",
                          exc.strerror or type(exc).__name__) from None
    print(f"{args.dataset} stand-in written to {root} (random data in the public format; "
          f"use it as data.root to smoke-test a scenario)")
    return 0


def cmd_reference(args) -> int:
    from netsim.cli.reference import write

    try:
        path = write(_out(args.out))
    except OSError as exc:
        raise ConfigError("--out", args.out, "a file path that can be written",
                          exc.strerror or type(exc).__name__) from None
    print(f"reference written to {path}")
    return 0


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="netsim", description=__doc__.splitlines()[0])
    sub = p.add_subparsers(dest="command", required=True)

    def scenario_args(sp):
        sp.add_argument("scenario", nargs="?", help="scenario YAML (default: the quickstart)")
        sp.add_argument("--set", action="append", metavar="PATH=VALUE",
                        help="override a scenario value, e.g. network.links.p=0.5 (repeatable)")

    def threads_arg(sp):
        sp.add_argument("--threads", type=int, help="torch CPU threads per run (default: the "
                        "scenario's threads, else one per core; capped at the cores, a sweep's "
                        "at its share of them; on a CPU shared with busy processes --threads 1 "
                        "can be much faster)")

    r = sub.add_parser("run", help="run a scenario (default: scenarios/quickstart.yaml)")
    scenario_args(r)
    r.add_argument("--seeds", type=int, nargs="+", help="run these seeds (default: the scenario's)")
    r.add_argument("--out", help="results root (default: outputs.dir); results go to OUT/<name>/")
    r.add_argument("--overwrite", action="store_true",
                   help="replace the results of another run in OUT/<name>/ (netsim's own files "
                   "are removed first; files netsim did not write are kept)")
    r.add_argument("--resume", action="store_true",
                   help="continue the interrupted run in OUT/<name>/ from its checkpoint (the "
                        "same command line plus --resume); results equal an uninterrupted run's")
    threads_arg(r)
    loud = r.add_mutually_exclusive_group()
    loud.add_argument("-q", "--quiet", action="store_true",
                      help="print nothing but warnings and errors")
    loud.add_argument("-v", "--verbose", action="store_true",
                      help="also a line per finished algorithm and seed")
    r.set_defaults(func=cmd_run)

    v = sub.add_parser("validate", help="check a scenario; nothing is run")
    scenario_args(v)
    v.add_argument("--show", action="store_true", help="print the resolved config")
    v.set_defaults(func=cmd_validate)

    li = sub.add_parser("list", help="list registered components")
    li.add_argument("kind", choices=LISTABLE)
    li.add_argument("-v", "--verbose", action="store_true", help="show each component's parameters")
    li.set_defaults(func=cmd_list)

    f = sub.add_parser("figures", help="(re)write the figures of a results folder")
    f.add_argument("results")
    f.add_argument("--pdf", action="store_true", help="also write vector PDF files")
    f.add_argument("--only", metavar="KIND", help="write one figure kind only: accuracy, collab, "
                   "graph, scatter, asymmetry, groups, timeline, links, partition or "
                   "staleness")
    f.set_defaults(func=cmd_figures)

    sw = sub.add_parser("sweep", help="run (or resume) a robustness study: a grid of runs")
    sw.add_argument("sweep", help="sweep YAML (see scenarios/robustness_*.yaml)")
    sw.add_argument("--out", default="results", help="results root; the sweep goes to OUT/<name>/")
    sw.add_argument("--workers", type=int, help="parallel runs (default: the sweep's executor)")
    sw.add_argument("--seeds", type=int, nargs="+", help="seeds of every cell (default: the "
                    "sweep's)")
    sw.add_argument("--set", action="append", metavar="PATH=VALUE",
                    help="override a value of every run, e.g. schedule.rounds=5 (repeatable)")
    threads_arg(sw)
    sw.add_argument("--dry-run", action="store_true", help="validate and count the runs only")
    sw.set_defaults(func=cmd_sweep)

    st = sub.add_parser("standin", help="write a tiny random dataset in a local-file dataset's "
                        "public format, to smoke-test a paper-scale scenario without the data")
    st.add_argument("dataset", help="cifar10, cifar100, mnist_files, emnist, femnist, "
                    "shakespeare or cinic10")
    st.add_argument("folder")
    st.add_argument("--samples", type=int, default=4, help="samples per class (LEAF: per writer)")
    st.add_argument("--writers", type=int, default=8, help="LEAF datasets: number of writers")
    st.add_argument("--split", default="balanced", help="EMNIST split to write")
    st.add_argument("--seed", type=int, default=0)
    st.set_defaults(func=cmd_standin)

    rf = sub.add_parser("reference", help="regenerate docs/reference.md (every component and "
                        "scenario section with its parameters) from the registries")
    rf.add_argument("--out", help="write here instead of docs/reference.md")
    rf.set_defaults(func=cmd_reference)

    a = sub.add_parser("analyze", help="graph analyses of a results folder: a table, "
                       "analysis.json, analysis.csv and GraphML files")
    a.add_argument("results")
    a.add_argument("--threshold", type=float, default=0.0,
                   help="collaboration edge j -> i where W[i, j] > T (default 0)")
    a.add_argument("--relative", action="store_true",
                   help="T is a fraction of each collaboration matrix's largest off-diagonal "
                   "weight (--threshold 0.5 --relative: the cluster recovery of the run table)")
    a.add_argument("--target", type=float,
                   help="report the simulated time to this mean test accuracy (e.g. 0.8)")
    a.add_argument("--paired", nargs="+", metavar="A:B", default=[],
                   help="paired differences A - B of the mean test accuracy per seed, with "
                   "their mean and 95%% interval (e.g. --paired diple:apfl dpfl:dpfl_random)")
    a.add_argument("--wide", action="store_true",
                   help="one table row per metric with every algorithm (default: blocks that "
                   "fit 100 columns)")
    a.set_defaults(func=cmd_analyze)
    return p


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    with command_line():
        return report(lambda: args.func(args))


def entry() -> None:
    """The ``netsim`` console script: :func:`main` in a process of its own. Before the exit every
    object still alive is frozen too, so that the interpreter's final collection does not scan
    them (about 0.3 s with torch imported)."""
    global _OWN_PROCESS
    _OWN_PROCESS = True
    code = main()
    gc.freeze()
    sys.exit(code)
