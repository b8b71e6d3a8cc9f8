"""Paired comparisons over seeds: runs with the same seed share the data split and the initial
models, so the difference between two methods is judged seed by seed (issue 20, item 4)."""
from __future__ import annotations

from netsim.analysis.stats import mean_ci


def paired_difference(summary: dict, a: str, b: str, key: str = "mean_accuracy") -> dict:
    """``a - b`` of summary.json's per-seed ``key`` over the seeds both finished (diverged seeds
    are left out and counted): mean and 95% Student-t interval of the per-seed differences,
    beside the unpaired means of the same seeds."""
    algs = summary["algorithms"]
    for label in (a, b):
        if label not in algs:
            raise KeyError(f"{label!r} is not an algorithm of this run (it has "
                           f"{', '.join(algs)})")
    sa, sb = algs[a]["per_seed"], algs[b]["per_seed"]
    seeds = sorted(s for s in set(sa) & set(sb) if key in sa[s] and key in sb[s]
                   and sa[s][key] is not None and sb[s][key] is not None)
    diff = [sa[s][key] - sb[s][key] for s in seeds]
    mean, low, high = mean_ci(diff)
    return {"a": a, "b": b, "metric": key, "seeds": [int(s) for s in seeds],
            "per_seed": diff, "mean": mean, "ci_low": low, "ci_high": high,
            "a_mean": mean_ci([sa[s][key] for s in seeds])[0],
            "b_mean": mean_ci([sb[s][key] for s in seeds])[0],
            "left_out": len((set(sa) | set(sb))) - len(seeds)}


def format_paired(rows: list[dict]) -> str:
    """One line per comparison: ``A - B: mean [low, high] over k seeds (A, B unpaired)``; the
    verdict says whether the interval excludes 0."""
    lines = []
    for r in rows:
        if not r["seeds"]:
            lines.append(f"{r['a']} - {r['b']}: no seed where both finished")
            continue
        k = len(r["seeds"])
        verdict = ("A better" if r["ci_low"] > 0 else "B better" if r["ci_high"] < 0
                   else "within the interval of 0" if k > 1 else "one seed: no interval")
        lines.append(f"{r['a']} - {r['b']} ({r['metric']}): {r['mean']:+.4f} "
                     f"[{r['ci_low']:+.4f}, {r['ci_high']:+.4f}] over {k} seeds, paired "
                     f"({r['a']} {r['a_mean']:.4f}, {r['b']} {r['b_mean']:.4f}): {verdict}")
    return "\n".join(lines)
