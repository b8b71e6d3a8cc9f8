"""Run a scenario: for each seed build the clients' data once, then run every algorithm on it.

``run(scenario, seeds=None, out=None) -> Results`` is the one call behind ``netsim run``: a
short driver. Results are written while the run goes (netsim.results; each (algorithm, seed)
run's rows by netsim.running.recorder), checkpoints by netsim.running.checkpoint, summary.json and
the table printed at the end by netsim.analysis.summary.
"""
from __future__ import annotations

import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

import numpy as np
import torch

from netsim._version import environment
from netsim.analysis.clocks import clock_stats, time_to_accuracy
from netsim.analysis.summary import learned, learned_from_peers, print_table, summarise
from netsim.data import ClientData, build_client_data
from netsim.data.client_data import check_test_samples
from netsim.errors import ConfigError
from netsim.models import BatchedModel, build_model
from netsim.results import Results, ResultsWriter, finished_run
from netsim.running.callbacks import Callback, Diverged
from netsim.running.checkpoint import RunCheckpoint
from netsim.running.loop import HealthCheck, make_algorithm, run_loop
from netsim.running.recorder import Recorder
from netsim.runtime import resolve_device
from netsim.scenario import memory
from netsim.scenario.config import Scenario
from netsim.schema import Field
from netsim.sim.accounting import run_totals
from netsim.util.allocator import tune_malloc
from netsim.util.progress import NoProgress, Progress
from netsim.util.rng import Streams
from netsim.util.threads import use_threads


@dataclass
class _Session:
    """What the (algorithm, seed) runs of one :func:`run` share."""

    cfg: dict
    writer: ResultsWriter
    checkpoint: RunCheckpoint
    progress: Progress | NoProgress
    callbacks: Sequence[Callback]
    device: torch.device
    quiet: bool
    verbose: bool


def _resolve(scenario: Scenario | str | Path, seeds: list[int] | None,
             out: str | Path | None) -> tuple[dict, list[int]]:
    """The resolved config and the seeds to run (default the scenario's); refused
    (ConfigError): seeds that are not a list of non-negative integers, an empty ``out``."""
    if not isinstance(scenario, Scenario):
        scenario = Scenario.load(scenario)
    cfg = scenario.resolve()
    seeds = [cfg["seed"]] if not seeds else Field("list", item="int", lo=0).check("seeds", seeds)
    if isinstance(out, str) and not out.strip():         # "" would fall back to outputs.dir
        raise ConfigError("out", out, "a path (not empty), or None for outputs.dir")
    return cfg, seeds


def _progress(cfg: dict, seeds: list[int], quiet: bool) -> Progress | NoProgress:
    """The run's progress display on stderr (none when ``quiet`` or ``outputs.progress`` off)."""
    if quiet or not cfg["outputs"]["progress"]:
        return NoProgress()
    return Progress(cfg["name"], [a["label"] for a in cfg["algorithms"]], seeds,
                    cfg["schedule"]["rounds"])


def _run_seed(s: _Session, seed: int, first: bool) -> tuple[ClientData, BatchedModel]:
    """Every algorithm of the scenario (those not finished before a ``--resume``) on the data
    and model of ``seed``, built once; the memory is checked again with the model's size on the
    ``first`` seed (its data loaded, so out of the free memory). Returns the data and model."""
    cfg = s.cfg
    streams = Streams(seed, cfg["stream_seeds"])
    data = build_client_data(cfg["data"], cfg["clients"], streams.numpy("data"), s.device)
    check_test_samples(data, cfg["data"]["test_fraction"])
    s.writer.write_clients(seed, np.asarray(data.cluster),
                           {split: data.n[split].cpu().numpy() for split in data.n}, data.group)
    model = build_model(cfg["model"], data.input_shape, data.num_classes, data.task,
                        device=s.device)
    if first:
        memory.check(cfg, s.device, model.num_params)
    for spec in cfg["algorithms"]:
        s.progress.start(spec["label"], seed)
        if seed in s.checkpoint.per_run[spec["label"]]:
            s.progress.skip()
            continue
        _keep(s, spec["label"], seed, _run_algorithm(s, spec, seed, streams, data, model))
    return data, model


def _run_algorithm(s: _Session, spec: dict, seed: int, streams: Streams, data: ClientData,
                   model: BatchedModel) -> dict:
    """One (algorithm, seed) run, resumed where its checkpoint left it: its entry of
    ``per_run`` (the final test accuracies or where it diverged, the cluster recovery of what it
    learned, the network totals and its times)."""
    label, schedule = spec["label"], s.cfg["schedule"]
    rec = Recorder(s.writer, label, seed, data, s.progress)
    start = time.perf_counter()
    alg = make_algorithm(s.cfg, spec, seed, streams, data, model, s.device)
    first = s.checkpoint.resume(label, seed, alg, rec)
    callbacks = [HealthCheck(), rec, s.checkpoint.callback(label, seed, rec), *s.callbacks]
    try:
        run_loop(alg, schedule["rounds"], schedule["eval_every"], callbacks, first=first)
        outcome = {"test": rec.final["test"]}
    except Diverged as err:
        outcome = {"diverged": err.record(seed)}
        s.progress.skip()
        s.progress.note(f"{label} seed {seed}: {err}; its results so far are kept, the run goes "
                        "on with the next algorithm")
    wall = time.perf_counter() - start
    rec.finish(alg)
    outcome.update(_clocks(rec, s.cfg["outputs"]["targets"]))
    if "test" in outcome and learned_from_peers(s.cfg, spec, seed, alg.net.history):
        outcome["learned"] = learned(rec.collab, rec.extras, data.cluster, seed)
    if s.verbose and "test" in outcome:
        s.progress.note(f"{label} seed {seed}: mean test {np.nanmean(outcome['test']):.4f}, "
                        f"{alg.net.now:.2f} simulated s, {wall:.1f} s")
    return {**outcome, "net": {**run_totals(alg.net.history), "sim_time": float(alg.net.now),
                               "wall_time": wall, "engine_share": alg.net.engine_wall_time / wall}}


def _clocks(rec: Recorder, targets: list[float]) -> dict:
    """A run's results over simulated time for ``per_run``: ``clocks`` (an event-driven run's
    staleness and idle statistics) and ``time_to_accuracy`` (with ``outputs.targets``)."""
    out: dict = {}
    clocks = clock_stats(rec.extras)
    if clocks:
        out["clocks"] = clocks
    if targets:
        times, acc = np.asarray(rec.curve).reshape(-1, 2).T
        out["time_to_accuracy"] = time_to_accuracy(times, acc, targets)
    return out


def _keep(s: _Session, label: str, seed: int, entry: dict) -> None:
    """Keep a finished (algorithm, seed) run's entry: summary.json so far and the checkpoint."""
    s.checkpoint.per_run[label][seed] = entry
    s.writer.write_summary(summarise({k: v for k, v in s.checkpoint.per_run.items() if v}, s.cfg))
    s.checkpoint.save()


def _finish(s: _Session, seeds: list[int], threads: int, data: ClientData,
            model: BatchedModel) -> dict:
    """After the last run: summary.json (returned), the figures, the checkpoint removed (unless
    kept) and the folder marked finished."""
    summary = {**summarise(s.checkpoint.per_run, s.cfg), "seeds": seeds,
               "backend": model.backend, "device": str(s.device), "threads": threads,
               "environment": environment()}
    s.writer.write_summary(summary)
    if s.cfg["outputs"]["figures"]:
        from netsim.plot import write_run_figures

        if not s.quiet:
            s.progress.note(f"writing figures to {s.writer.dir / 'figures'} ...")
        start = time.perf_counter()
        paths = write_run_figures(s.writer.dir, data, pdf=s.cfg["outputs"]["pdf"])
        if not s.quiet:
            s.progress.note(f"{len(paths)} figures written in {time.perf_counter() - start:.1f} s")
    if not s.cfg["outputs"]["keep_checkpoints"]:
        s.checkpoint.remove()
    s.writer.finish()
    return summary


def _report(summary: dict, cfg: dict, folder: Path) -> None:
    """The end-of-run table and where the results are, on stdout."""
    print_table(summary, names={a["label"]: a["name"] for a in cfg["algorithms"]})
    print(f"results: {folder}")


def _finished(folder: Path, cfg: dict, quiet: bool) -> Results:
    """``--resume`` of a run that has finished: nothing runs; its table is printed again."""
    res = Results(folder)
    if not quiet:
        print(f"{folder}: this run has finished; nothing to resume", file=sys.stderr)
        _report(res.summary, cfg, folder)
    return res


def run(scenario: Scenario | str | Path, seeds: list[int] | None = None,
        out: str | Path | None = None, quiet: bool = False, verbose: bool = False,
        overwrite: bool = False, threads: int | None = None,
        callbacks: Sequence[Callback] = (), resume: bool = False) -> Results:
    """Validate and run a scenario for each seed; return the results folder read back.

    ``OUT/<name>/`` must be new, empty, or hold this same run (then it starts afresh); another
    run's folder is refused unless ``overwrite`` (netsim.results.claim_folder), and either way
    only netsim's own files are removed. The run holds the folder's lock
    (netsim.results.folder_lock): a second writer is refused while it runs. ``threads``: torch CPU
    threads (default: the scenario's ``threads``, else one per core: netsim.util.threads); the
    number is recorded in summary.json.
    A memory estimate is checked before anything is allocated (netsim.scenario.memory).

    Progress (netsim.util.progress) and notes go to stderr, the summary table to stdout; ``quiet``
    prints neither (warnings only), ``verbose`` adds a line per finished (algorithm, seed).
    ``callbacks``: extra :class:`netsim.running.callbacks.Callback` objects for every (algorithm,
    seed) run. ``resume``: continue the unfinished run in ``OUT/<name>/`` from its checkpoint
    (netsim.running.checkpoint): finished (algorithm, seed) runs are kept, the interrupted one goes
    on from its last checkpoint, and the results equal an uninterrupted run's; the analyses and
    figures of the partial run (netsim.results.DERIVED) are removed."""
    cfg, seeds = _resolve(scenario, seeds, out)
    n_threads = use_threads(cfg["threads"] if threads is None else threads)
    tune_malloc()
    root = out or cfg["outputs"]["dir"]
    if resume and finished_run(Path(root) / cfg["name"], cfg, seeds):    # every run is done
        return _finished(Path(root) / cfg["name"], cfg, quiet)
    device = resolve_device(cfg["device"])
    memory.check(cfg, device)
    with ResultsWriter(root, cfg, seeds, overwrite=overwrite, resume=resume) as writer:
        if writer.lock.stale and not quiet:
            print(f"netsim: note: {writer.lock.stale}", file=sys.stderr)
        s = _Session(cfg, writer, RunCheckpoint(writer, cfg), _progress(cfg, seeds, quiet),
                     callbacks, device, quiet, verbose)
        try:
            for seed in seeds:
                data, model = _run_seed(s, seed, first=seed == seeds[0])
        finally:
            s.progress.close()
        summary = _finish(s, seeds, n_threads, data, model)
        if not quiet:
            _report(summary, cfg, writer.dir)
        return Results(writer.dir)
