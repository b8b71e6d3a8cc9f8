"""The printed table of an analysis (``netsim analyze``): metrics as rows, algorithms as
columns, the mean over seeds."""
from __future__ import annotations

import math

# rows of the printed table, in order (those without a value for any algorithm are left out)
TABLE_ROWS = ("final_accuracy", "final_loss", "time_to_target", "round_to_target",
              "density", "sparsity", "asymmetry", "reciprocity", "in_degree_mean", "n_strong",
              "n_weak", "slem", "spectral_gap", "mixing_time", "n_communities", "ari", "nmi",
              "precision", "recall", "mass_precision", "community_ari", "outer_precision",
              "outer_recall", "outer_mass_precision", "outer_community_ari", "outer_max_weight",
              "outer_learners", "jaccard_mean", "stable_from", "link_density",
              "link_asymmetry", "rounds_to_connect", "joint_window", "bytes_per_client",
              "messages_per_client", "peers_per_round", "server_bytes")


#: rows shown whenever the analysis has a target, ``not reached`` where a seed never reached it
TARGET_ROWS = ("time_to_target", "round_to_target")
NOT_REACHED = "not reached"


def format_table(analysis: dict, width: int | None = 100) -> str:
    """Metrics as rows, algorithms as columns: the mean over seeds (3 significant digits); the
    algorithm columns are split into blocks of at most ``width`` characters (None: one block)."""
    algs = analysis["algorithms"]
    names = list(algs)
    extra = sorted({k for a in algs.values() for k in a["mean"] if k.startswith("share_")})
    rows = []
    for key in (*TABLE_ROWS, *extra):
        vals = [algs[n]["mean"].get(key, float("nan")) for n in names]
        if key in TARGET_ROWS and analysis.get("target") is not None:
            rows.append((key, [NOT_REACHED if math.isnan(v) else v for v in vals]))
        elif not all(isinstance(v, float) and math.isnan(v) for v in vals):
            rows.append((key, vals))
    first = max(len(k) for k, _ in rows) + 2 if rows else 10
    cols = [max(len(NOT_REACHED) + 1, len(n) + 2) for n in names]
    blocks, used = [[]], first
    for k, c in enumerate(cols):
        if blocks[-1] and width is not None and used + c > width:
            blocks.append([])
            used = first
        blocks[-1].append(k)
        used += c
    lines = []
    for block in blocks:
        head = f"{'metric':<{first}}" + "".join(f"{names[k]:>{cols[k]}}" for k in block)
        lines += ([""] if lines else []) + [head, "-" * len(head)]
        lines += [f"{key:<{first}}" + "".join(f"{_fmt(vals[k]):>{cols[k]}}" for k in block)
                  for key, vals in rows]
    seeds = sorted({len(a["seeds"]) for a in algs.values()})
    scale = " x the largest off-diagonal weight" if analysis.get("relative") else ""
    target = (f"; target {analysis['target']}: '{NOT_REACHED}' where a seed never reached it"
              if analysis.get("target") is not None else "")
    lines.append(f"(mean over {'/'.join(map(str, seeds))} seed(s); threshold "
                 f"{analysis['threshold']}{scale}{target}; '-' = not applicable)")
    return "\n".join(lines)


def _fmt(v: float | str) -> str:
    if isinstance(v, str):
        return v
    if isinstance(v, float) and math.isnan(v):
        return "-"
    if math.isinf(v):
        return "inf"
    return f"{v:.3g}" if abs(v) < 1e4 else f"{v:.3e}"
