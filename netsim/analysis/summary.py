"""What a run's results come to: summary.json (:func:`summarise`, with the cluster recovery of
what each run learned: :func:`learned`) and the table printed at the end of a run
(:func:`print_table`, by :data:`TABLE_GROUPS`)."""
from __future__ import annotations

import math
import sys
import textwrap
import warnings

import numpy as np

from netsim._version import __version__
from netsim.analysis.clocks import CLOCK_KEYS


def learned(collab: list[np.ndarray], extras: dict[str, dict[str, np.ndarray]],
            cluster: np.ndarray, seed: int) -> dict[str, float | None]:
    """What one run learned (its collaboration matrices ``collab`` and its algorithm's
    ``extras`` arrays), against the ground-truth clusters (none without clusters):
    ``collab_precision`` / ``collab_recall`` of the last collaboration matrix's edges above half
    its largest off-diagonal weight (netsim.analysis.graphs.cluster_recovery) and, for a mixture
    with personal weights (``outer/`` arrays: PDBO-MTL), ``outer_precision`` / ``outer_recall``
    of the pairs of clients whose largest weight is on the same learner. Beside them, with no
    threshold (netsim.analysis.recovery), ``<prefix>_mass_precision`` and
    ``<prefix>_community_ari`` (Louvain seeded with the run's ``seed``) of the collaboration
    matrix and of the mixture's affinity ``pi pi^T``."""
    from netsim.analysis.graphs import cluster_recovery, oracle_matrix, outer_analysis
    from netsim.analysis.recovery import outer_affinity, recovery_scores

    cluster = np.asarray(cluster)
    if not oracle_matrix(cluster).any():
        return {}
    out: dict[str, float | None] = {}

    def put(prefix: str, values: dict[str, float]) -> None:
        for key, v in values.items():
            out[f"{prefix}_{key}"] = None if math.isnan(v) else float(v)
    if collab:
        precision, recall = cluster_recovery(collab[-1], cluster)
        put("collab", {"precision": precision, "recall": recall,
                       **recovery_scores(collab[-1], cluster, seed)})
    if "outer" in extras and "weights" in extras["outer"]:
        weights = extras["outer"]["weights"]
        o = outer_analysis(weights, cluster)
        put("outer", {"precision": o["outer_precision"], "recall": o["outer_recall"],
                      **recovery_scores(outer_affinity(weights[-1]), cluster, seed)})
    return out


def learned_from_peers(cfg: dict, spec: dict, seed: int, history: list[dict]) -> bool:
    """Whether a run could learn whom to work with: False, with a warning, for an algorithm of
    :data:`LEARNED_GROUPS` when every client crashed at t = 0 or every message it sent was lost,
    as its weights are then their initial values; their cluster recovery is not reported."""
    from netsim.links.failures import all_crash_at_start

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
            clocks = {**r.get("clocks", {}), **({"time_to_accuracy": r["time_to_accuracy"]}
                                                 if "time_to_accuracy" in r else {})}
            if "diverged" in r:
                per_seed[seed] = {"diverged": r["diverged"], **r["net"], **clocks}
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
                              **r["net"], **clocks}
        diverged = [v["diverged"] for v in per_seed.values() if "diverged" in v]
        found = [k for k in RECOVERY_KEYS + CLOCK_KEYS if any(k in v for v in per_seed.values())]
        keys = ACCURACY_KEYS + tuple(found) + tuple(next(iter(seeds.values()))["net"])
        agg = {k: (None if any(v.get(k) is None for v in per_seed.values())
                   else float(np.mean([v[k] for v in per_seed.values()]))) for k in keys}
        out[label] = {"seeds": sorted(per_seed), **agg, **_over_seeds(per_seed),
                      "per_seed": per_seed,
                      **({"diverged": diverged} if diverged else {})}
    return {"algorithms": out, "netsim_version": __version__, "scenario": cfg["name"]}


def _over_seeds(per_seed: dict[int, dict]) -> dict:
    """``time_to_accuracy`` per target over seeds: the mean, null unless every seed reached it
    (never a mean over the seeds that did), and ``target_reached``, the share of seeds that did
    (nothing when the run has no targets)."""
    runs = [v["time_to_accuracy"] for v in per_seed.values() if "time_to_accuracy" in v]
    if not runs:
        return {}
    times = {k: [r[k] for r in runs] for k in runs[0]}
    return {"time_to_accuracy": {k: None if None in t else float(np.mean(t))
                                 for k, t in times.items()},
            "target_reached": {k: sum(x is not None for x in t) / len(t)
                               for k, t in times.items()}}


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

