"""Run a scenario: for each seed build the clients' data once, then run every algorithm on it.

``run(scenario, seeds=None, out=None) -> Results`` is the one call behind ``netsim run``.
Results are written while the run goes (see netsim.results); the summary table is printed at
the end.
"""
from __future__ import annotations

import math
import pickle
import sys
import textwrap
import time
import warnings
from pathlib import Path
from typing import Sequence

import numpy as np

from netsim._version import __version__, environment
from netsim.allocator import tune_malloc
from netsim.config import Scenario
from netsim.errors import ConfigError
from netsim.checkpoint import CHECKPOINT, CHECKPOINT_SECONDS, Checkpointer, load_algorithm
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
        self.extras: dict[str, dict[str, np.ndarray]] = {}
        self.sim_time = 0.0
        self._eval = {s: data.full(s) for s in ("val", "test")}
        #: clients without samples of a split: no score there (NaN, an empty cell of metrics.csv)
        self._empty = {s: (data.n[s] == 0).cpu().numpy() for s in self._eval}

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
            empty = self._empty[split]
            if empty.any():
                loss_np = np.where(empty, np.nan, loss_np).astype(loss_np.dtype)
                if acc_np is not None:
                    acc_np = np.where(empty, np.nan, acc_np).astype(acc_np.dtype)
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
            self.writer.write_arrays("links", self.label, self.seed, **alg.links_log.arrays())
        self.extras = alg.extra_arrays()
        for kind, arrays in self.extras.items():
            self.writer.write_arrays(kind, self.label, self.seed, **arrays)
        if alg.sim.peer_history:
            self.writer.write_arrays("accounting", self.label, self.seed,
                                     peers=np.stack(alg.sim.peer_history),
                                     bytes_sent=np.stack(alg.sim.bytes_history))
        if alg.sim.trace is not None:
            path = self.writer.path("trace", f"{self.label}_seed{self.seed}.csv")
            path.parent.mkdir(exist_ok=True)
            alg.sim.trace.write_csv(path)


def learned(rec: Recorder, cluster: np.ndarray) -> dict[str, float | None]:
    """What one run learned, against the ground-truth clusters (none without clusters):
    ``collab_precision`` / ``collab_recall`` of the last collaboration matrix's edges above half
    its largest off-diagonal weight (netsim.analysis.graphs.cluster_recovery) and, for a mixture
    with personal weights (``outer/`` arrays: PDBO-MTL), ``outer_precision`` / ``outer_recall``
    of the pairs of clients whose largest weight is on the same learner. Beside them, with no
    threshold (netsim.analysis.recovery), ``<prefix>_mass_precision`` and
    ``<prefix>_community_ari`` (Louvain seeded with the run's seed) of the collaboration matrix
    and of the mixture's affinity ``pi pi^T``."""
    from netsim.analysis.graphs import cluster_recovery, oracle_matrix, outer_analysis
    from netsim.analysis.recovery import outer_affinity, recovery_scores

    cluster = np.asarray(cluster)
    if not oracle_matrix(cluster).any():
        return {}
    out: dict[str, float | None] = {}

    def put(prefix: str, values: dict[str, float]) -> None:
        for key, v in values.items():
            out[f"{prefix}_{key}"] = None if math.isnan(v) else float(v)
    if rec.collab:
        precision, recall = cluster_recovery(rec.collab[-1], cluster)
        put("collab", {"precision": precision, "recall": recall,
                       **recovery_scores(rec.collab[-1], cluster, rec.seed)})
    if "outer" in rec.extras and "weights" in rec.extras["outer"]:
        weights = rec.extras["outer"]["weights"]
        o = outer_analysis(weights, cluster)
        put("outer", {"precision": o["outer_precision"], "recall": o["outer_recall"],
                      **recovery_scores(outer_affinity(weights[-1]), cluster, rec.seed)})
    return out


def learned_from_peers(cfg: dict, spec: dict, seed: int, history: list[dict]) -> bool:
    """Whether a run could learn whom to work with: False, with a warning, for an algorithm of
    :data:`LEARNED_GROUPS` when every client crashed at t = 0 or every message it sent was lost,
    as its weights are then their initial values; their cluster recovery is not reported."""
    from netsim.network.failures import all_crash_at_start

    sent = sum(h["messages_sent"] for h in history)
    lost = sent > 0 and not any(h["messages_delivered"] for h in history)
    if table_group(spec["name"]) not in LEARNED_GROUPS or not (
            lost or all_crash_at_start(cfg["network"]["failures"], cfg["clients"])):
        return True
    warnings.warn(f"{spec['label']} seed {seed}: no message was delivered, so it learned nothing "
                  "from the other clients; its cluster recovery is not reported", RuntimeWarning,
                  stacklevel=2)
    return False


def _bottom10(acc: np.ndarray) -> float:
    """Mean accuracy of the worst 10% of clients (at least one client)."""
    k = max(1, math.ceil(0.1 * acc.size))
    return float(np.sort(acc)[:k].mean())


#: summary.json's accuracy statistics, null for an algorithm with a diverged seed.
ACCURACY_KEYS = ("mean_accuracy", "std_accuracy", "bottom10_accuracy", "client_variance",
                 "improved_over_local")
#: summary.json's cluster recovery (:func:`learned`), where the run has it
RECOVERY_KEYS = tuple(f"{kind}_{key}" for kind in ("collab", "outer")
                      for key in ("precision", "recall", "mass_precision", "community_ari"))


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
            scored = ~np.isnan(r["test"])             # clients without test samples: no score
            acc = r["test"][scored]
            improved = None
            if local is not None and "test" in per_run.get(local, {}).get(seed, {}):
                improved = float(np.mean(acc > per_run[local][seed]["test"][scored]))
            per_seed[seed] = {"mean_accuracy": float(acc.mean()), "std_accuracy": float(acc.std()),
                              "bottom10_accuracy": _bottom10(acc),
                              "client_variance": float(acc.var()),
                              "improved_over_local": improved, **r.get("learned", {}),
                              **r["net"]}
        diverged = [v["diverged"] for v in per_seed.values() if "diverged" in v]
        found = [k for k in RECOVERY_KEYS if any(k in v for v in per_seed.values())]
        keys = ACCURACY_KEYS + tuple(found) + tuple(next(iter(seeds.values()))["net"])
        agg = {k: (None if any(v.get(k) is None for v in per_seed.values())
                   else float(np.mean([v[k] for v in per_seed.values()]))) for k in keys}
        out[label] = {"seeds": sorted(per_seed), **agg, "per_seed": per_seed,
                      **({"diverged": diverged} if diverged else {})}
    return {"algorithms": out, "netsim_version": __version__, "scenario": cfg["name"]}


#: the printed table's groups, in order (each algorithm class names its own: ``group``)
TABLE_GROUPS = ("baselines", "federated", "clustered", "decentralised", "learned graph",
                "learned weights", "other")
#: groups whose "clusters P/R" and "mass/ARI" columns show the cluster recovery (:func:`learned`)
#: of what they learn: the collaboration matrix, or (learned weights) the outer weights
LEARNED_GROUPS = {"clustered": "collab", "learned graph": "collab", "learned weights": "outer",
                  "other": "collab"}


def table_group(name: str) -> str:
    """The printed table's group of a registered algorithm name (``other`` if unknown)."""
    from algorithms import ALGORITHMS

    group = ALGORITHMS.get(name, "algorithms").obj.group if name in ALGORITHMS else "other"
    return group if group in TABLE_GROUPS else "other"


def _accuracy_cell(s: dict) -> str:
    """``mean`` or, over several seeds, ``mean ± half-width`` of the 95% Student-t interval."""
    from netsim.analysis.stats import mean_ci

    vals = [v["mean_accuracy"] for v in s["per_seed"].values() if "mean_accuracy" in v]
    mean, lo, hi = mean_ci(vals)
    return f"{mean:.4f}" if len(vals) < 2 else f"{mean:.4f} ± {(hi - lo) / 2:.4f}"


def _recovery_cell(s: dict, group: str, keys: tuple[str, str]) -> str:
    """``a/b`` of the group's learned ``<kind>_<key>`` values (``-`` where one is undefined;
    blank where both are, or the group learns nothing)."""
    kind = LEARNED_GROUPS.get(group)
    vals = [s.get(f"{kind}_{key}") for key in keys] if kind else [None, None]
    return "" if vals == [None, None] else "/".join(
        "-" if v is None else f"{v:.2f}" for v in vals)


def print_table(summary: dict, stream=None, names: dict[str, str] | None = None) -> None:
    """The end-of-run table: algorithms by group (:data:`TABLE_GROUPS`; ``names`` maps a label to
    its registered name, default the label itself), mean test accuracy with its 95% interval over
    seeds, the bottom decile, the share of clients beating Local, the cluster recovery of what the
    algorithm learned (:func:`learned`) and the run's cost; a diverged algorithm says where."""
    stream = stream or sys.stdout
    names = names or {}
    seeds = max((len(s["seeds"]) for s in summary["algorithms"].values()), default=0)
    head = (f"{'algorithm':<18}{'accuracy':<18}{'bottom10':>9}{'>local':>7}{'clusters P/R':>13}"
            f"{'mass/ARI':>11}{'MB sent':>10}{'sim s':>9}{'wall s':>8}")
    print(head, file=stream)
    groups: dict[str, list[str]] = {}
    for label in summary["algorithms"]:
        groups.setdefault(table_group(names.get(label, label)), []).append(label)
    for group in TABLE_GROUPS:
        if group not in groups:
            continue
        print(group, file=stream)
        for label in groups[group]:
            s = summary["algorithms"][label]
            if s.get("diverged"):
                d = s["diverged"][0]
                more = f" (+{len(s['diverged']) - 1} seeds)" if len(s["diverged"]) > 1 else ""
                print(f"  {label:<16}DIVERGED: seed {d['seed']}, round {d['round']}, client "
                      f"{d['client']}: {d['what']}{more}", file=stream)
                continue
            imp = "" if s["improved_over_local"] is None else f"{s['improved_over_local']:.2f}"
            print(f"  {label:<16}{_accuracy_cell(s):<18}{s['bottom10_accuracy']:>9.4f}{imp:>7}"
                  f"{_recovery_cell(s, group, ('precision', 'recall')):>13}"
                  f"{_recovery_cell(s, group, ('mass_precision', 'community_ari')):>11}"
                  f"{s['bytes_sent'] / 1e6:>10.2f}"
                  f"{s['sim_time']:>9.2f}{s['wall_time']:>8.1f}", file=stream)
    ci = f" ± 95% interval over {seeds} seeds" if seeds > 1 else ""
    note = (f"(accuracy: mean test accuracy over clients{ci}; clusters P/R: precision and recall "
            "against the same-cluster pairs of the last collaboration matrix's weights above "
            "half its largest off-diagonal weight; mass/ARI, with no threshold: the share of "
            "each client's weight on others that stays in its cluster, mean over clients, and "
            "the adjusted Rand index of the Louvain communities of (W + W^T) / 2; learned "
            "weights: of the pairs whose largest weight is on the same learner, and of the "
            "learners' overlap pi pi^T)")
    print(textwrap.fill(note, 100), file=stream)


def _registered_names(cfg: dict) -> dict[str, str]:
    """Each algorithm label of a resolved config -> its registered name (the table's groups)."""
    return {a["label"]: a["name"] for a in cfg["algorithms"]}


def run(scenario: Scenario | str | Path, seeds: list[int] | None = None,
        out: str | Path | None = None, quiet: bool = False, verbose: bool = False,
        overwrite: bool = False, threads: int | None = None,
        callbacks: Sequence[Callback] = (), resume: bool = False) -> Results:
    """Validate and run a scenario for each seed; return the results folder read back.

    ``OUT/<name>/`` must be new, empty, or hold this same run (then it starts afresh); another
    run's folder is refused unless ``overwrite`` (netsim.results.claim_folder), and either way
    only netsim's own files are removed. The run holds the folder's lock (netsim.folder_lock):
    a second writer is refused while it runs. ``threads``: torch CPU threads (default: the
    scenario's ``threads``, else one per core: netsim.threads); the number is recorded in
    summary.json.
    A memory estimate is checked before anything is allocated (netsim.memory).

    Progress (netsim.progress) and notes go to stderr, the summary table to stdout; ``quiet``
    prints neither (warnings only), ``verbose`` adds a line per finished (algorithm, seed).
    ``callbacks``: extra :class:`netsim.loop.Callback` objects for every (algorithm, seed) run.
    ``resume``: continue the unfinished run in ``OUT/<name>/`` from its checkpoint
    (netsim.checkpoint): finished (algorithm, seed) runs are kept, the interrupted one goes on from
    its last checkpoint, and the results equal an uninterrupted run's; the analyses and figures
    of the partial run (netsim.results.DERIVED) are removed."""
    from netsim import memory
    from netsim.data import build_client_data
    from netsim.data.client_data import check_test_samples
    from netsim.models import build_model
    from netsim.runtime import resolve_device
    from netsim.schema import Field
    from netsim.threads import use_threads

    if not isinstance(scenario, Scenario):
        scenario = Scenario.load(scenario)
    cfg = scenario.resolve()
    seeds = [cfg["seed"]] if not seeds else Field("list", item="int", lo=0).check("seeds", seeds)
    if isinstance(out, str) and not out.strip():         # "" would fall back to outputs.dir
        raise ConfigError("out", out, "a path (not empty), or None for outputs.dir")
    n_threads = use_threads(cfg["threads"] if threads is None else threads)
    tune_malloc()
    folder = Path(out or cfg["outputs"]["dir"]) / cfg["name"]
    if resume and finished_run(folder, cfg, seeds):      # every (algorithm, seed) run is done
        res = Results(folder)
        if not quiet:
            print(f"{folder}: this run has finished; nothing to resume", file=sys.stderr)
            print_table(res.summary, names=_registered_names(cfg))
            print(f"results: {folder}")
        return res
    device = resolve_device(cfg["device"])
    memory.check(cfg, device)
    with ResultsWriter(out or cfg["outputs"]["dir"], cfg, seeds, overwrite=overwrite,
                       resume=resume) as writer:
        if writer.lock.stale and not quiet:
            print(f"netsim: note: {writer.lock.stale}", file=sys.stderr)
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
        min_seconds = CHECKPOINT_SECONDS if cfg["outputs"]["checkpoint_every"] is None else 0.0
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
                check_test_samples(data, cfg["data"]["test_fraction"])
                writer.write_clients(seed, np.asarray(data.cluster),
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
                                                 "recorder": rec.state()}, every, rounds,
                                        min_seconds)
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
                    if "test" in outcome and learned_from_peers(cfg, spec, seed, alg.sim.history):
                        outcome["learned"] = learned(rec, data.cluster)
                    hist = alg.sim.history
                    per_run[label][seed] = {
                        **outcome,
                        "net": {"bytes_sent": float(sum(h["bytes_sent"] for h in hist)),
                                "messages_sent": int(sum(h["messages_sent"] for h in hist)),
                                "messages_dropped": int(sum(h["messages_dropped"] for h in hist)),
                                "sim_time": float(alg.sim.now), "wall_time": wall,
                                "engine_share": alg.sim.wall_time / wall}}
                    if verbose and "test" in outcome:
                        note(f"{label} seed {seed}: mean test {np.nanmean(outcome['test']):.4f}, "
                             f"{alg.sim.now:.2f} simulated s, {wall:.1f} s")
                    done = {k: v for k, v in per_run.items() if v}
                    writer.write_summary(summarise(done, cfg))
                    save(run_state())
        finally:
            if progress is not None:
                progress.close()
        summary = {**summarise(per_run, cfg), "seeds": seeds, "backend": model.backend,
                   "device": str(device), "threads": n_threads, "environment": environment()}
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
            print_table(summary, names=_registered_names(cfg))
            print(f"results: {writer.dir}")
        return Results(writer.dir)
