"""The ``netsim`` command line: run, validate, list, figures.

Each action is one documented function call (``netsim.run``, ``Scenario.resolve``,
``netsim.plot.write_run_figures``), so scripts can do the same from Python.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from netsim.errors import ConfigError

DEFAULT_SCENARIO = Path(__file__).resolve().parent.parent / "scenarios" / "quickstart.yaml"

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
        from netsim.network.links import LINKS as reg
    return reg


def _scenario(args):
    from netsim.config import Scenario

    scenario = Scenario.load(args.scenario or DEFAULT_SCENARIO)
    return scenario.with_overrides(args.set or [])


def cmd_run(args) -> int:
    from netsim.runner import run

    scenario = _scenario(args)
    scenario.resolve()                      # fail before anything runs
    run(scenario, seeds=args.seeds, out=args.out)
    return 0


def cmd_validate(args) -> int:
    import yaml

    cfg = _scenario(args).resolve()
    if args.show:
        print(yaml.safe_dump(cfg, sort_keys=False))
    print(f"{args.scenario or DEFAULT_SCENARIO}: valid ({len(cfg['algorithms'])} algorithms, "
          f"{cfg['clients']} clients)")
    return 0


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

    for path in write_run_figures(args.results, pdf=args.pdf):
        print(path)
    return 0


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="netsim", description=__doc__.splitlines()[0])
    sub = p.add_subparsers(dest="command", required=True)

    def scenario_args(sp):
        sp.add_argument("scenario", nargs="?", help="scenario YAML (default: the quickstart)")
        sp.add_argument("--set", action="append", metavar="PATH=VALUE",
                        help="override a scenario value, e.g. network.links.p=0.5 (repeatable)")

    r = sub.add_parser("run", help="run a scenario (default: scenarios/quickstart.yaml)")
    scenario_args(r)
    r.add_argument("--seeds", type=int, nargs="+", help="run these seeds (default: the scenario's)")
    r.add_argument("--out", help="results root (default: outputs.dir); results go to OUT/<name>/")
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
    f.add_argument("--pdf", action="store_true")
    f.set_defaults(func=cmd_figures)
    return p


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return args.func(args)
    except ConfigError as exc:
        print(f"netsim: error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
