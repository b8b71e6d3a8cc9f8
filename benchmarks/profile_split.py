"""Where a run's time goes: one scenario under cProfile, 1 thread, split into setup, training,
engine, algorithm glue, I/O, evaluation and the rest.

    python benchmarks/profile_split.py [scenario.yaml] [--rounds N] [--top K]

Default: the quickstart with its own rounds; figures and progress off, results in a temporary
folder. The profile starts before netsim is imported, so setup includes the imports.

Each function's own time (cProfile's tottime) goes to a category by the code that called it:
library code (torch, numpy, builtins) takes the category of the innermost netsim frame above it,
and a netsim function its own category (:data:`RULES`, by file and function name). Setup
(imports, building the data, the model and each algorithm) and evaluation are scopes: everything
they call counts to them, except imports (setup) and writes (I/O) inside them. cProfile keeps
caller -> callee edges, not whole stacks, so where a function is called from several contexts its
time is split in proportion to its callers' cumulative time along each edge. The profiler slows
Python code more than torch's kernels: engine and glue shares come out higher than unprofiled.
"""
from __future__ import annotations

import argparse
import cProfile
import os
import pstats
import sys
import tempfile
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")            # before torch is imported

ROOT = Path(__file__).resolve().parent.parent
QUICKSTART = ROOT / "scenarios" / "quickstart.yaml"
CATEGORIES = ("setup", "training", "engine", "algorithm", "I/O", "evaluation", "other")
#: categories that absorb the categories of what they call ...
SCOPES = {"setup", "evaluation"}
#: ... except these
STRONG = {"setup", "I/O"}
#: (path prefix, function name or None for any, category): the first match decides; paths are
#: relative to the repository, or to site-packages for simpy and torch
RULES = (
    ("netsim/running/recorder.py", "on_eval", "evaluation"),
    ("netsim/runtime/bank.py", "evaluate", "evaluation"),
    ("netsim/runtime/bank.py", "mix", "algorithm"),
    ("netsim/running/recorder.py", "finish", "I/O"),      # the run's arrays
    ("netsim/data/client_data.py", "build_client_data", "setup"),
    ("netsim/models/__init__.py", "build_model", "setup"),
    ("netsim/running/loop.py", "make_algorithm", "setup"),
    ("netsim/scenario/config.py", None, "setup"),
    ("netsim/scenario/memory.py", None, "setup"),
    ("netsim/results/__init__.py", None, "I/O"),
    ("netsim/running/checkpoint.py", None, "I/O"),
    ("netsim/runtime/bank.py", None, "training"),
    ("netsim/runtime/sgd.py", None, "training"),
    ("netsim/runtime/adam.py", None, "training"),
    ("netsim/models/", None, "training"),
    ("netsim/data/", None, "training"),                   # mini-batches
    ("netsim/sim/", None, "engine"),
    ("netsim/links/", None, "engine"),
    ("simpy/", None, "engine"),
    ("torch/autograd/", None, "training"),               # gradients, also those algorithms take
    ("netsim/runtime/", None, "algorithm"),               # mixing, push-sum
    ("algorithms/", None, "algorithm"),
    ("topologies/", None, "algorithm"),
    ("netsim/", None, "other"),                           # runner, loop, progress, summary
)
LIBRARIES = ("simpy", "torch")

Func = tuple[str, int, str]


def _where(file: str) -> str | None:
    """``file`` relative to the repository, or to site-packages for :data:`LIBRARIES`; None for
    other code."""
    path = Path(file)
    if path.is_relative_to(ROOT):
        return path.relative_to(ROOT).as_posix()
    lib = next((p for p in LIBRARIES if p in path.parts), None)
    return None if lib is None else "/".join(path.parts[path.parts.index(lib):])


def category(func: Func) -> str | None:
    """A function's own category; None for library code (it takes its caller's)."""
    file, _, name = func
    if file.startswith("<frozen importlib") or name == "<module>":
        return "setup"                                    # imports
    where = _where(file) or ""
    return next((cat for prefix, fn, cat in RULES
                 if where.startswith(prefix) and fn in (None, name)), None)


def _label(own: str | None, context: str) -> str:
    """The category of a function of category ``own`` called in ``context``."""
    if own is None or (context in SCOPES and own not in STRONG):
        return context
    return own


def _order(stats: dict) -> list[Func]:
    """Functions callers first (reverse post-order of a depth-first walk from the roots)."""
    callees: dict[Func, list[Func]] = {f: [] for f in stats}
    for func, row in stats.items():
        for caller in row[4]:
            if caller in callees:
                callees[caller].append(func)
    seen: set[Func] = set()
    post: list[Func] = []
    for root in [f for f in stats if not stats[f][4]] + list(stats):
        stack = [(root, iter(callees[root]))] if root not in seen else []
        seen.add(root)
        while stack:
            func, rest = stack[-1]
            nxt = next((c for c in rest if c not in seen), None)
            if nxt is None:
                post.append(func)
                stack.pop()
            else:
                seen.add(nxt)
                stack.append((nxt, iter(callees[nxt])))
    return post[::-1]


def contexts(stats: dict, sweeps: int = 50) -> dict[Func, dict[str, float]]:
    """Each function's share of calls per category: its callers' categories weighted by the
    cumulative time along each edge, mapped through its own category; swept callers first until
    nothing changes (recursion makes cycles)."""
    ctx: dict[Func, dict[str, float]] = {f: {"other": 1.0} for f in stats}
    order = _order(stats)
    for _ in range(sweeps):
        change = 0.0
        for func in order:
            edges = {c: e for c, e in stats[func][4].items() if c in stats and c != func}
            weight = {c: e[3] for c, e in edges.items()}
            if sum(weight.values()) <= 0:
                weight = {c: e[1] for c, e in edges.items()}
            total = sum(weight.values())
            parent: dict[str, float] = {"other": 1.0} if total <= 0 else {}
            for caller, w in weight.items():
                for cat, share in ctx[caller].items():
                    parent[cat] = parent.get(cat, 0.0) + share * w / total
            own, new = category(func), {}
            for cat, share in parent.items():
                new[_label(own, cat)] = new.get(_label(own, cat), 0.0) + share
            change = max(change, *(abs(new.get(c, 0.0) - ctx[func].get(c, 0.0))
                                   for c in CATEGORIES))
            ctx[func] = new
        if change < 1e-9:
            break
    return ctx


def split(stats: dict) -> tuple[dict[str, float], dict[str, dict[Func, float]]]:
    """Seconds per category, and per category the seconds of each function."""
    seconds = dict.fromkeys(CATEGORIES, 0.0)
    funcs: dict[str, dict[Func, float]] = {c: {} for c in CATEGORIES}
    for func, shares in contexts(stats).items():
        for cat, p in shares.items():
            seconds[cat] += stats[func][2] * p
            funcs[cat][func] = stats[func][2] * p
    return seconds, funcs


def _run(path: Path, rounds: int | None, out: str) -> str:
    """Import netsim and run the scenario (1 thread, no figures, no progress); its name."""
    from netsim import Scenario, run

    overrides = {"outputs.figures": False, "outputs.progress": False}
    if rounds is not None:
        overrides["schedule.rounds"] = rounds
    scenario = Scenario.load(path).with_overrides(overrides)
    run(scenario, out=out, quiet=True, threads=1, overwrite=True)
    return scenario.resolve()["name"]


def _name(func: Func) -> str:
    file, line, name = func
    return f"{_where(file) or Path(file).name}:{line}({name})"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("scenario", nargs="?", default=str(QUICKSTART))
    p.add_argument("--rounds", type=int, help="schedule.rounds (default: the scenario's)")
    p.add_argument("--top", type=int, default=0, help="also list each category's K costliest "
                   "functions")
    args = p.parse_args(argv)
    load = os.getloadavg()
    prof = cProfile.Profile()
    with tempfile.TemporaryDirectory() as out:
        prof.enable()
        name = _run(Path(args.scenario), args.rounds, out)
        prof.disable()
    stats = pstats.Stats(prof).stats
    seconds, funcs = split(stats)
    total = sum(seconds.values())
    print(f"{name}: {total:.1f} s profiled, 1 thread; load average {load[0]:.2f} before, "
          f"{os.getloadavg()[0]:.2f} after")
    for cat in CATEGORIES:
        print(f"  {cat:<11}{seconds[cat]:>8.2f} s {100 * seconds[cat] / total:>6.1f} %")
        for func, s in sorted(funcs[cat].items(), key=lambda kv: -kv[1])[:args.top]:
            print(f"      {s:>8.2f} s  {_name(func)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
