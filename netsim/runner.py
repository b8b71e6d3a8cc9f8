"""Run a scenario: for each seed build the clients' data once, then run every algorithm on it.

``run(scenario, seeds=None, out=None) -> Results`` is the one call behind ``netsim run``.
Results are written while the run goes (see netsim.results); the summary table is printed at
the end.
"""
from __future__ import annotations

import math
import pickle
import sys
import time
from pathlib import Path
from typing import Sequence

import numpy as np

from netsim._version import __version__
from netsim.config import Scenario
from netsim.checkpoint import CHECKPOINT, Checkpointer, load_algorithm
from netsim.loop import Callback, Diverged, HealthCheck, make_algorithm, run_loop
from netsim.progress import Progress
from netsim.results import Results, ResultsWriter, finished_run
from netsim.rng import Streams


class Recorder(Callback):
    """Collects one (algorithm, seed) run's evaluations, network rows, W and links (a callback
    of the run loop) and writes its arrays at the end (:meth:`finish`)."""

    def __init__(self, writer: ResultsWriter, label: str, seed: int, data, progress):
        self.writer, self.label, self.seed, self.data = writer, label, seed, data
        self.progress = progress
        self.collab: list[np.ndarray] = []
        self.collab_rounds: list[int] = []
        self.final: dict[str, np.ndarray] = {}
        self.sim_time = 0.0
        self._eval = {s: data.full(s) for s in ("val", "test")}

    def on_eval(self, alg, rnd: int) -> None:
        """Evaluate every client's personalised model on its val and test split."""
        flat = alg.personal_models()
        rows = []
        for split, (x, y, mask) in self._eval.items():
            acc, loss = alg.bank.evaluate(x, y, mask, flat=flat)
            acc_np = None if acc is None else acc.detach().cpu().numpy()
            loss_np = loss.detach().cpu().numpy()
            bad = np.flatnonzero(~np.isfinite(loss_np))
            if bad.size:
                raise Diverged(rnd, int(bad[0]), f"{split} loss non-finite")
            for i in range(alg.n):
                rows.append((self.label, self.seed, rnd, alg.sim.now, i, split,
                             None if acc_np is None else acc_np[i], loss_np[i]))
            self.final[split] = acc_np if acc_np is not None else -loss_np
            self.final[split + "_loss"] = loss_np
        self.writer.add_metrics(rows)
        w = alg.collaboration()
        if w is not None:
            self.collab.append(np.asarray(w, np.float32)[: alg.n, : alg.n])
            self.collab_rounds.append(rnd)
        self.sim_time = alg.sim.now

    def on_step(self, alg, row: dict) -> None:
        self.writer.add_network([(self.label, self.seed, row["round"], row["sim_time"],
                                  row["bytes_sent"], row["messages_sent"],
                                  row["messages_delivered"], row["messages_dropped"],
                                  row["mean_latency"], row["max_staleness"])])

    def state(self) -> dict:
        """What a checkpoint keeps of this recorder (restored into a fresh one on resume)."""
        return {k: self.__dict__[k] for k in ("collab", "collab_rounds", "final", "sim_time")}

    def on_round(self, alg, t: int) -> None:
        if self.progress is not None:
            self.progress.advance()

    def finish(self, alg) -> None:
        if self.collab:
            self.writer.write_arrays("collab", self.label, self.seed, W=np.stack(self.collab),
                                     rounds=np.asarray(self.collab_rounds))
        if alg.links_log:
            self.writer.write_arrays("links", self.label, self.seed,
                                     delivered=np.stack(alg.links_log),
                                     rounds=np.arange(len(alg.links_log)))
        for kind, arrays in alg.extra_arrays().items():
            self.writer.write_arrays(kind, self.label, self.seed, **arrays)
        if alg.sim.peer_history:
            self.writer.write_arrays("accounting", self.label, self.seed,
                                     peers=np.stack(alg.sim.peer_history),
                                     bytes_sent=np.stack(alg.sim.bytes_history))
        if alg.sim.trace is not None:
            path = self.writer.path("trace", f"{self.label}_seed{self.seed}.csv")
            path.parent.mkdir(exist_ok=True)
            alg.sim.trace.write_csv(path)


def _bottom10(acc: np.ndarray) -> float:
    """Mean accuracy of the worst 10% of clients (at least one client)."""
    k = max(1, math.ceil(0.1 * acc.size))
    return float(np.sort(acc)[:k].mean())


#: summary.json's accuracy statistics, null for an algorithm with a diverged seed.
ACCURACY_KEYS = ("mean_accuracy", "std_accuracy", "bottom10_accuracy", "client_variance",
                 "improved_over_local")


def summarise(per_run: dict[str, dict[int, dict]], cfg: dict) -> dict:
    """summary.json: final-round values per algorithm, mean over seeds, per-seed alongside.

    A diverged (algorithm, seed) run has ``{"diverged": {...}}`` and its network accounting as
    its per-seed entry; an algorithm with any diverged seed lists them under ``diverged`` and
    has no accuracy statistics (null): a mean is never taken over a diverged run."""
    out = {}
    local = next((lab for lab, a in zip(per_run, cfg["algorithms"]) if a["name"] == "local"), None)
    for label, seeds in per_run.items():
        per_seed = {}
        for seed, r in seeds.items():
            if "diverged" in r:
                per_seed[seed] = {"diverged": r["diverged"], **r["net"]}
                continue
            acc = r["test"]
            improved = None
            if local is not None and "test" in per_run.get(local, {}).get(seed, {}):
                improved = float(np.mean(acc > per_run[local][seed]["test"]))
            per_seed[seed] = {"mean_accuracy": float(acc.mean()), "std_accuracy": float(acc.std()),
                              "bottom10_accuracy": _bottom10(acc),
                              "client_variance": float(acc.var()),
                              "improved_over_local": improved, **r["net"]}
        diverged = [v["diverged"] for v in per_seed.values() if "diverged" in v]
        keys = ACCURACY_KEYS + tuple(next(iter(seeds.values()))["net"])
        agg = {k: (None if any(v.get(k) is None for v in per_seed.values())
                   else float(np.mean([v[k] for v in per_seed.values()]))) for k in keys}
        out[label] = {"seeds": sorted(per_seed), **agg, "per_seed": per_seed,
                      **({"diverged": diverged} if diverged else {})}
    return {"algorithms": out, "netsim_version": __version__, "scenario": cfg["name"]}


def print_table(summary: dict, stream=None) -> None:
    """The end-of-run table: one line per algorithm (a diverged one says where it diverged)."""
    stream = stream or sys.stdout
    head = (f"{'algorithm':<14}{'mean':>8}{'bottom10':>10}{'var':>9}{'>local':>8}"
            f"{'MB sent':>10}{'sim s':>10}{'wall s':>8}")
    print(head, file=stream)
    for label, s in summary["algorithms"].items():
        if s.get("diverged"):
            d = s["diverged"][0]
            more = f" (+{len(s['diverged']) - 1} seeds)" if len(s["diverged"]) > 1 else ""
            print(f"{label:<14}  DIVERGED: seed {d['seed']}, round {d['round']}, client "
                  f"{d['client']}: {d['what']}{more}", file=stream)
            continue
        imp = "" if s["improved_over_local"] is None else f"{s['improved_over_local']:.2f}"
        print(f"{label:<14}{s['mean_accuracy']:>8.4f}{s['bottom10_accuracy']:>10.4f}"
              f"{s['client_variance']:>9.4f}{imp:>8}{s['bytes_sent'] / 1e6:>10.2f}"
              f"{s['sim_time']:>10.2f}{s['wall_time']:>8.1f}", file=stream)


def run(scenario: Scenario | str | Path, seeds: list[int] | None = None,
        out: str | Path | None = None, quiet: bool = False, verbose: bool = False,
        overwrite: bool = False, threads: int | None = None,
        callbacks: Sequence[Callback] = (), resume: bool = False) -> Results:
    """Validate and run a scenario for each seed; return the results folder read back.

    ``OUT/<name>/`` must be new, empty, or hold this same run (then it starts afresh); another
    run's folder is refused unless ``overwrite`` (netsim.results.claim_folder). ``threads``: torch
    CPU threads (default: the scenario's ``threads``, else netsim.threads.DEFAULT_THREADS).
    A memory estimate is checked before anything is allocated (netsim.memory).

    Progress (netsim.progress) and notes go to stderr, the summary table to stdout; ``quiet``
    prints neither (warnings only), ``verbose`` adds a line per finished (algorithm, seed).
    ``callbacks``: extra :class:`netsim.loop.Callback` objects for every (algorithm, seed) run.
    ``resume``: continue the unfinished run in ``OUT/<name>/`` from its checkpoint
    (netsim.checkpoint): finished (algorithm, seed) runs are kept, the interrupted one goes on from
    its last checkpoint, and the results equal an uninterrupted run's."""
    from netsim import memory
    from netsim.data import build_client_data
    from netsim.models import build_model
    from netsim.runtime import resolve_device
    from netsim.schema import Field
    from netsim.threads import use_threads

    if not isinstance(scenario, Scenario):
        scenario = Scenario.load(scenario)
    cfg = scenario.resolve()
    seeds = [cfg["seed"]] if not seeds else Field("list", item="int", lo=0).check("seeds", seeds)
    use_threads(cfg["threads"] if threads is None else threads)
    folder = Path(out or cfg["outputs"]["dir"]) / cfg["name"]
    if resume and finished_run(folder, cfg, seeds):      # every (algorithm, seed) run is done
        res = Results(folder)
        if not quiet:
            print(f"{folder}: this run has finished; nothing to resume", file=sys.stderr)
            print_table(res.summary)
            print(f"results: {folder}")
        return res
    device = resolve_device(cfg["device"])
    memory.check(cfg, device)
    writer = ResultsWriter(out or cfg["outputs"]["dir"], cfg, seeds, overwrite=overwrite,
                           resume=resume)
    per_run: dict[str, dict[int, dict]] = {a["label"]: {} for a in cfg["algorithms"]}
    current = None
    if writer.resumed is not None:
        per_run, current = writer.resumed["per_run"], writer.resumed["current"]

    def run_state() -> dict:
        """The run-level part of a checkpoint: rows written and finished runs."""
        return {"metrics": writer.metrics, "network": writer.network, "per_run": per_run,
                "current": None}

    def save(state: dict) -> None:
        writer.write(CHECKPOINT, pickle.dumps(state, protocol=pickle.HIGHEST_PROTOCOL))
    rounds = cfg["schedule"]["rounds"]
    every = cfg["outputs"]["checkpoint_every"] or max(1, rounds // 4)
    progress = None
    if cfg["outputs"]["progress"] and not quiet:
        progress = Progress(cfg["name"], list(per_run), seeds, cfg["schedule"]["rounds"])

    def note(text: str) -> None:
        """A line on stderr (through the progress display when there is one)."""
        if progress is not None:
            progress.note(text)
        else:
            print(text, file=sys.stderr, flush=True)
    try:
        for seed in seeds:
            streams = Streams(seed, cfg["stream_seeds"])
            data = build_client_data(cfg["data"], cfg["clients"], streams.numpy("data"), device)
            if seed == seeds[0]:
                writer.write_clients(np.asarray(data.cluster),
                                     {s: data.n[s].cpu().numpy() for s in data.n}, data.group)
            model = build_model(cfg["model"], data.input_shape, data.num_classes, data.task,
                                device=device)
            if seed == seeds[0]:               # the data is loaded (and out of the free memory)
                memory.check(cfg, device, model.num_params)
            for spec in cfg["algorithms"]:
                label = spec["label"]
                if progress is not None:
                    progress.start(label, seed)
                if seed in per_run[label]:                     # finished before a --resume
                    if progress is not None:
                        progress.skip()
                    continue
                rec = Recorder(writer, label, seed, data, progress)
                start = time.perf_counter()
                alg = make_algorithm(cfg, spec, seed, streams, data, model, device)
                first = 0
                if current is not None and (current["label"], current["seed"]) == (label, seed):
                    load_algorithm(alg, current["algorithm"])
                    rec.__dict__.update(current["recorder"])
                    first, current = current["round"], None
                ckpt = Checkpointer(save, run_state,
                                    lambda: {"label": label, "seed": seed,
                                             "recorder": rec.state()}, every, rounds)
                try:
                    run_loop(alg, rounds, cfg["schedule"]["eval_every"],
                             [HealthCheck(), rec, ckpt, *callbacks], first=first)
                    outcome = {"test": rec.final["test"]}
                except Diverged as err:
                    outcome = {"diverged": err.record(seed)}
                    if progress is not None:
                        progress.skip()
                    note(f"{label} seed {seed}: {err}; its results so far are kept, the run "
                         "goes on with the next algorithm")
                wall = time.perf_counter() - start
                rec.finish(alg)
                hist = alg.sim.history
                per_run[label][seed] = {
                    **outcome,
                    "net": {"bytes_sent": float(sum(h["bytes_sent"] for h in hist)),
                            "messages_sent": int(sum(h["messages_sent"] for h in hist)),
                            "messages_dropped": int(sum(h["messages_dropped"] for h in hist)),
                            "sim_time": float(alg.sim.now), "wall_time": wall,
                            "engine_share": alg.sim.wall_time / wall}}
                if verbose and "test" in outcome:
                    note(f"{label} seed {seed}: mean test {outcome['test'].mean():.4f}, "
                         f"{alg.sim.now:.2f} simulated s, {wall:.1f} s")
                done = {k: v for k, v in per_run.items() if v}
                writer.write_summary(summarise(done, cfg))
                save(run_state())
    finally:
        if progress is not None:
            progress.close()
    summary = {**summarise(per_run, cfg), "seeds": seeds, "backend": model.backend,
               "device": str(device)}
    writer.write_summary(summary)
    if cfg["outputs"]["figures"]:
        from netsim.plot import write_run_figures
        if not quiet:
            note(f"writing figures to {writer.dir / 'figures'} ...")
        start = time.perf_counter()
        paths = write_run_figures(writer.dir, data, pdf=cfg["outputs"]["pdf"])
        if not quiet:
            note(f"{len(paths)} figures written in {time.perf_counter() - start:.1f} s")
    if not cfg["outputs"]["keep_checkpoints"]:
        writer.path(CHECKPOINT).unlink(missing_ok=True)
    writer.finish()
    if not quiet:
        print_table(summary)
        print(f"results: {writer.dir}")
    return Results(writer.dir)
