"""The generated reference, docs/reference.md: every scenario section and every registered
component with its parameters (name, default, allowed values, doc), written from the
registries and their ``Field`` schemas, plus the columns of ``netsim analyze``.

``netsim reference`` (or ``python -m netsim.cli.reference``) rewrites the file;
tests/test_reference.py fails when the committed file differs from :func:`render`. Only
components that ship with netsim (defined in netsim/, algorithms/ or topologies/) are listed, so
what a user's script registers never enters it. The output has no timestamp: same code, same
file.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any, Callable, Mapping

from netsim.schema import REQUIRED, Component, Field
from netsim.schema.registry import Registry

DEFAULT_OUT = Path(__file__).resolve().parents[2] / "docs" / "reference.md"
COMMAND = "netsim reference"
SHIPPED = ("netsim", "algorithms", "topologies")


def _cell(text: str, code: bool = False) -> str:
    """Text safe inside one Markdown table cell (``code``: inside backticks, no HTML escape)."""
    text = " ".join(str(text).split()).replace("|", "\\|")
    return text if code else text.replace("<", "&lt;")


def _value(v: Any) -> str:
    """A default as it is written in a scenario (YAML flow style)."""
    if v is REQUIRED:
        return "required"
    return f"`{v if isinstance(v, str) and v else json.dumps(v)}`"


def field_table(fields: Mapping[str, Field]) -> list[str]:
    """One row per field: name, default, allowed values, doc (declaration order)."""
    if not fields:
        return ["No parameters.", ""]
    rows = ["| parameter | default | allowed | description |", "|---|---|---|---|"]
    rows += [f"| `{k}` | {_cell(_value(f.default), code=True)} | {_cell(f.allowed())} "
             f"| {_cell(f.doc)} |" for k, f in fields.items()]
    return rows + [""]


def _shipped(reg: Registry) -> list[Component]:
    return [c for c in reg.items() if c.obj.__module__.split(".")[0] in SHIPPED]


def _source(comp: Component) -> str:
    return comp.obj.__module__.replace(".", "/") + ".py"


def registry_section(title: str, key: str, reg: Registry, intro: str,
                     extra: Callable[[Component], str] | None = None) -> list[str]:
    """A table of the registry's components, then each one's parameters."""
    comps = _shipped(reg)
    out = [f"## {title}", "", f"`{key}`: {intro}", "",
           "| name | description | defined in |", "|---|---|---|"]
    out += [f"| [`{c.name}`](#{_anchor(key, c.name)}) | {_cell(c.doc)} | `{_source(c)}` |"
            for c in comps]
    out.append("")
    for c in comps:
        out += [f'<a id="{_anchor(key, c.name)}"></a>', f"### {key}: `{c.name}`", "",
                _cell(c.doc), ""]
        if extra is not None:
            out += [extra(c), ""]
        out += field_table(c.fields)
    return out


def _anchor(key: str, name: str) -> str:
    return f"{key}-{name}".replace(".", "-").replace("_", "-").lower()


def scenario_sections() -> list[str]:
    """The scenario's own sections, in the order a scenario file has them, then a sweep file's."""
    from netsim.data import DATA_FIELDS
    from netsim.data.augment import AUGMENT_FIELDS
    from netsim.links import (OUTAGES, ChurnParams, ComputeParams, CrashParams, FailureParams,
                              LatencyParams, LossParams, StragglerParams)
    from netsim.running.sweep import EXECUTOR_FIELDS, SWEEP_FIELDS
    from algorithms.async_base import EventSchedule
    from algorithms.base import Schedule
    from netsim.links.continuous import ContinuousParams
    from netsim.runtime.sgd import Train
    from netsim.scenario.config import ALGORITHM_COMMON, OUTPUT_FIELDS, TOP_FIELDS
    from netsim.schema.params import schema
    from netsim.sim.policy import Budget, Policy

    sections: list[tuple[str, str, Mapping[str, Field]]] = [
        ("top level", "the keys of a scenario file", TOP_FIELDS),
        ("`data`", "dataset, partition and per-client splits "
                   "([datasets](#datasets), [partitions](#partitions))", DATA_FIELDS),
        ("`data.augment`", "training-batch image augmentation", AUGMENT_FIELDS),
        ("`train`", "local training, for every algorithm (each may override it in its own "
                    "`train`)", schema(Train)),
        ("`schedule`", "rounds and evaluation cadence", schema(Schedule)),
        ("`schedule` (event-driven)", "a run without rounds, per-client clocks: it names "
                                      "`until` or `steps` ([async.md](async.md))",
         schema(EventSchedule)),
        ("`schedule.links` (event-driven)", "link states in continuous time",
         schema(ContinuousParams)),
        ("`outputs`", "what the run writes", OUTPUT_FIELDS),
        ("`network.latency`", "propagation delay and bandwidths ([jitter](#jitter))",
         schema(LatencyParams)),
        ("`network.loss`", "message loss", schema(LossParams)),
        ("`network.compute`", "local computation time ([speeds](#speeds))", schema(ComputeParams)),
        ("`network.compute.stragglers`", "slowed-down nodes", schema(StragglerParams)),
        ("`network.failures`", "node and edge failures", schema(FailureParams)),
        ("`network.failures.churn`", "random crashes and recoveries", schema(ChurnParams)),
        ("`network.failures.crash`", "a permanent crash", schema(CrashParams)),
        *[(f"`network.failures.scripted` (kind: {kind})", "one scripted outage", schema(params))
          for kind, params in OUTAGES.items()],
        ("`network.budget`", "communication budgets, enforced by the engine", schema(Budget)),
        ("`network.policy`", "receiver policy (also per algorithm: `algorithms[k].policy`)",
         schema(Policy)),
        ("`algorithms[k]`", "keys every algorithm accepts besides its own parameters "
                            "([algorithms](#algorithms))", ALGORITHM_COMMON),
        ("sweep file", "`netsim sweep FILE`: a base scenario, a grid and seeds", SWEEP_FIELDS),
        ("sweep file: `executor`", "how a sweep's runs execute", EXECUTOR_FIELDS),
    ]
    out = ["## Scenario sections", "",
           "`network.topology`, `network.links`, `model`, `data.dataset` and `data.partition` "
           "name a registered component: see their sections below. A sweep file's sections "
           "come last.", ""]
    for heading, intro, fields in sections:
        out += [f"### {heading}", "", intro[0].upper() + intro[1:] + ".", ""]
        out += field_table(fields)
    return out


def _algorithm_note(comp: Component) -> str:
    return ("Runs a server: the engine plays a star of the N clients around node N."
            if comp.obj.server else "Peer to peer on `network.topology`.")


def _dataset_note(comp: Component) -> str:
    from netsim.data import DATASETS, dataset_info

    if any(f.default is REQUIRED for f in comp.fields.values()):
        return "Task and outputs: set by its required parameters."
    info = dataset_info(DATASETS.resolve(comp.name, "data.dataset"))
    kind = "classes" if info.task == "classification" else "outputs"
    return (f"Task: {info.task}, {info.num_classes} {kind} (default parameters)"
            f"{', image inputs' if info.image else ''}.")


def analysis_section() -> list[str]:
    """The columns of ``netsim analyze``; those of its printed table are marked."""
    from netsim.analysis.columns import COLUMNS
    from netsim.analysis.table import TABLE_ROWS

    missing = [k for k in TABLE_ROWS if k not in COLUMNS]
    if missing:
        raise KeyError(f"analysis columns without a definition in netsim/analysis/columns.py: "
                       f"{missing}")
    out = ["## Analysis columns", "",
           "`netsim analyze RESULTS`: per algorithm and seed, then mean and std over seeds "
           "(analysis.json, analysis.csv); collaboration-graph columns are from the final W of "
           "`collab/`, link columns from `links/`, cost columns from `accounting/` and "
           "network.csv. Definitions: `netsim/analysis/columns.py`; details and tests: "
           "docs/papers/analysis.md.", "",
           "| column | in the printed table | definition |", "|---|---|---|"]
    out += [f"| `{k}` | {'yes' if k in TABLE_ROWS or k.startswith('share_') else ''} | "
            f"{_cell(doc)} |" for k, doc in COLUMNS.items()]
    return out + [""]


def render() -> str:
    """The whole reference as Markdown."""
    from algorithms import ALGORITHMS
    from netsim.data import DATASETS, PARTITIONS
    from netsim.links import JITTER, LINKS, SPEEDS
    from netsim.models import MODELS
    from topologies import TOPOLOGIES

    parts = [
        ["# netsim reference", "",
         f"Generated by `{COMMAND}` from the registries and their parameter schemas; do not "
         "edit by hand (tests/test_reference.py fails when this file is stale). How the parts "
         "fit together: [architecture.md](architecture.md).", "",
         "Contents: [scenario sections](#scenario-sections), [algorithms](#algorithms), "
         "[topologies](#topologies), [link models](#link-models), [jitter](#jitter), "
         "[speeds](#speeds), [datasets](#datasets), [partitions](#partitions), "
         "[models](#models), [analysis columns](#analysis-columns).", ""],
        scenario_sections(),
        registry_section("Algorithms", "algorithms", ALGORITHMS,
                         "a list of names or `{name: ..., params}`; each also takes the "
                         "[common keys](#algorithmsk).", _algorithm_note),
        registry_section("Topologies", "network.topology", TOPOLOGIES,
                         "the base communication graph over the clients."),
        registry_section("Link models", "network.links", LINKS,
                         "which base-graph edges are up at each step."),
        registry_section("Jitter", "network.latency.jitter", JITTER,
                         "per-message jitter; every kind has mean `scale`."),
        registry_section("Speeds", "network.compute.speed", SPEEDS,
                         "per-node device speed, drawn once."),
        registry_section("Datasets", "data.dataset", DATASETS,
                         "nothing is downloaded; local-file datasets read `data.root`.",
                         _dataset_note),
        registry_section("Partitions", "data.partition", PARTITIONS,
                         "which samples each client holds, and its ground-truth cluster."),
        registry_section("Models", "model", MODELS, "batched over the clients."),
        analysis_section(),
    ]
    return "\n".join(line for part in parts for line in part).rstrip("\n") + "\n"


def write(out: str | Path | None = None) -> Path:
    """Write :func:`render` to ``out`` (default docs/reference.md); return the path."""
    out = Path(out) if out else DEFAULT_OUT
    out.write_text(render(), encoding="utf-8")
    return out


def main(argv: list[str] | None = None) -> int:
    """``python -m netsim.cli.reference [--out PATH]``."""
    p = argparse.ArgumentParser(prog="python -m netsim.cli.reference",
                                description=__doc__.splitlines()[0])
    p.add_argument("--out", help="default: docs/reference.md")
    print(f"reference written to {write(p.parse_args(argv).out)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
