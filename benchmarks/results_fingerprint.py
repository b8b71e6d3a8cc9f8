"""Fingerprint every scenario's results on a short schedule, to check that a refactoring changes
no number.

    python benchmarks/results_fingerprint.py before.json          # on the old commit
    python benchmarks/results_fingerprint.py after.json           # on the new one
    python benchmarks/results_fingerprint.py --compare before.json after.json
    python benchmarks/results_fingerprint.py --store              # tests/fingerprint.json

Each scenario in scenarios/ (top level: its first seed with ``schedule.rounds`` lowered to
``--rounds``, or more when the scenario needs them; scenarios/paper/: shrunk onto tiny stand-ins as
tests/test_paper_scenarios.py does) is run once; the fingerprint is its summary.json without
wall-clock fields. ``--compare`` prints every value that differs and exits 1 if any does.

``--store`` fingerprints :data:`SUITE` with one torch thread and writes it, with the environment
it ran in (``netsim._version.environment``: versions, CPU kernel level and the BLAS signature), to
tests/fingerprint.json, which tests/test_fingerprint.py checks bit for bit in that same
environment: run it in the commit that changes numbers on purpose, and say which moved. It
replaces every stored machine's entry; ``--add-machine`` adds (or replaces) only this machine's,
for a machine whose BLAS rounds differently, where the code's numbers have not changed.
"""
from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))
WALL = ("wall_time", "engine_share")
#: the short scenarios whose numbers the test suite checks: an MLP on bundled data with every
#: algorithm, generated MNIST-1D, and a BatchNorm CNN on a stand-in of CIFAR-100
SUITE = ("scenarios/quickstart.yaml", "scenarios/cobo_cross_device_mnist1d.yaml",
         "scenarios/paper/pdbo_cifar100.yaml")
#: where ``--store`` writes the suite's fingerprint
STORED = ROOT / "tests" / "fingerprint.json"
#: torch threads of a stored fingerprint (CNN results depend on the count in their last bits)
STORED_THREADS = 1


def _clean(summary: dict) -> dict:
    """summary.json without what depends on the machine."""
    def strip(d: dict) -> dict:
        return {k: v for k, v in d.items() if k not in WALL}
    return {label: {**strip(a), "per_seed": {s: strip(v) for s, v in a["per_seed"].items()}}
            for label, a in summary["algorithms"].items()}


def _run(raw: dict, out: Path, threads: int | None) -> dict:
    from netsim import Scenario, run
    from netsim.errors import ConfigError

    last: ConfigError | None = None
    tries = (raw["schedule"]["rounds"], 6, 12) if "rounds" in raw["schedule"] else (None,)
    for rounds in tries:                                     # e.g. DPFL's preprocessing rounds
        if rounds is not None:
            raw["schedule"]["rounds"] = rounds
        try:
            return _clean(run(Scenario(raw), out=out, quiet=True, overwrite=True,
                              threads=threads).summary)
        except ConfigError as err:
            last = err
    raise last


def _short(path: Path, rounds: int, tmp: Path) -> dict:
    """The scenario at ``path`` on its short schedule (paper scenarios on stand-ins in ``tmp``)."""
    from test_paper_scenarios import shrink
    from netsim.data.standins import write_standin

    raw = yaml.safe_load(path.read_text())
    raw.setdefault("schedule", {})
    raw["outputs"] = {"figures": False, "progress": False}
    if path.parent.name == "paper":
        spec = raw["data"]["dataset"]
        spec = spec if isinstance(spec, dict) else {"name": spec}
        split = spec.get("split", "balanced")
        folder = tmp / "data" / f"{spec['name']}-{split}"
        if not folder.exists():                    # as tests/test_paper_scenarios.py writes them
            write_standin(spec["name"], folder, samples_per_class=6, writers=8, split=split)
        raw = shrink(raw, folder)
    elif "until" in raw["schedule"]:          # event-driven: ``rounds`` evaluation windows
        sched = raw["schedule"]
        sched["until"] = min(sched["until"], rounds * sched.get("eval_every", 1.0))
    elif "steps" in raw["schedule"]:
        raw["schedule"]["steps"] = min(raw["schedule"]["steps"], rounds)
    else:
        raw["schedule"]["rounds"] = min(raw["schedule"].get("rounds", rounds), rounds)
        raw["schedule"]["eval_every"] = 1
        raw["algorithms"] = [{**a, "finetune_rounds": 1}
                             if isinstance(a, dict) and "finetune_rounds" in a else a
                             for a in raw["algorithms"]]
    raw["name"] = path.stem
    return raw


def fingerprint(rounds: int, only: str | None = None, paths: tuple[str, ...] | None = None,
                threads: int | None = None) -> dict:
    """{scenario path: its fingerprint} for ``paths`` (default: every scenario file)."""
    files = ([ROOT / p for p in paths] if paths is not None else
             sorted((ROOT / "scenarios").glob("*.yaml"))
             + sorted((ROOT / "scenarios" / "paper").glob("*.yaml")))
    results = {}
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        for path in files:
            key = str(path.relative_to(ROOT))
            if "algorithms" not in yaml.safe_load(path.read_text()) or (only and only not in key):
                continue                                       # sweep files
            results[key] = _run(_short(path, rounds, tmp), tmp / "out", threads)
            print(f"{key}: {len(results[key])} algorithms", file=sys.stderr)
    return results


def suite_fingerprint() -> dict:
    """One machine's entry of tests/fingerprint.json: the environment and :data:`SUITE`'s
    fingerprints (2 rounds, :data:`STORED_THREADS` threads)."""
    from netsim._version import environment

    return {"environment": environment(),
            "scenarios": fingerprint(2, paths=SUITE, threads=STORED_THREADS)}


def store(add: bool) -> None:
    """Write this machine's :func:`suite_fingerprint` to :data:`STORED`: alone, or (``add``)
    beside the other machines' entries, replacing one stored in the same environment."""
    entry = suite_fingerprint()
    machines = json.loads(STORED.read_text())["machines"] if add and STORED.exists() else []
    machines = [m for m in machines if m["environment"] != entry["environment"]] + [entry]
    STORED.write_text(json.dumps({"rounds": 2, "threads": STORED_THREADS, "machines": machines},
                                 indent=1, sort_keys=True) + "\n")


def stored_for(here: dict) -> tuple[dict | None, list[dict]]:
    """The stored entry made in environment ``here`` (every key it recorded but netsim's
    version equal; the one that recorded the most keys), and every stored environment."""
    machines = json.loads(STORED.read_text())["machines"]
    same = [m for m in machines if all(here.get(k) == v for k, v in m["environment"].items()
                                       if k != "netsim")]
    best = max(same, key=lambda m: len(m["environment"]), default=None)
    return best, [m["environment"] for m in machines]


def compare(a: dict, b: dict, path: str = "") -> list[str]:
    """Every leaf that differs between two fingerprints (float equality, bit for bit)."""
    if isinstance(a, dict) and isinstance(b, dict):
        out = [f"{path}/{k}: only in one" for k in sorted(set(a) ^ set(b))]
        for k in sorted(set(a) & set(b)):
            out += compare(a[k], b[k], f"{path}/{k}")
        return out
    return [] if a == b else [f"{path}: {a} != {b}"]


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("files", nargs="*")
    p.add_argument("--compare", action="store_true")
    p.add_argument("--store", action="store_true", help=f"write {STORED.relative_to(ROOT)}")
    p.add_argument("--add-machine", action="store_true",
                   help=f"add this machine's entry to {STORED.relative_to(ROOT)}")
    p.add_argument("--rounds", type=int, default=2)
    p.add_argument("--threads", type=int, help="torch threads (default: netsim's)")
    p.add_argument("--only", help="scenarios whose path contains this")
    args = p.parse_args()
    if args.store or args.add_machine:
        store(add=args.add_machine)
        return 0
    if len(args.files) != (2 if args.compare else 1):
        p.error("give one output file, or two fingerprints with --compare")
    if args.compare:
        a, b = (json.loads(Path(f).read_text()) for f in args.files)
        diffs = compare(a, b)
        print("\n".join(diffs) or f"identical: {len(a)} scenarios")
        return 1 if diffs else 0
    Path(args.files[0]).write_text(json.dumps(fingerprint(args.rounds, args.only,
                                                          threads=args.threads),
                                              indent=1, sort_keys=True))
    return 0


if __name__ == "__main__":
    sys.exit(main())
