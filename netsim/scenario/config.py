"""Scenario schema, validation and ``--set`` overrides.

A scenario is a YAML mapping (see docs/scenario_format.md); :class:`Scenario` loads it,
applies overrides and validates it into the fully resolved config (every default filled in)
that is saved as ``config.yaml`` next to the results. Everything is checked before anything
runs; errors name the field, the bad value and what is allowed.
"""
from __future__ import annotations

import copy
from pathlib import Path
from typing import Any, Iterable, Mapping

import yaml

from netsim.errors import ConfigError
from netsim.runtime.sgd import Train
from netsim.schema import Field, check_section
from netsim.schema.params import schema
from netsim.util import strict_yaml
from netsim.util.rng import STREAMS
from netsim.util.text_file import read_text

TOP_FIELDS = {
    "name": Field("name", None, "scenario name (results go to OUT/<name>/)", nullable=True),
    "description": Field("str", "", "free text"),
    "seed": Field("int", 0, "the one seed every generator derives from", lo=0),
    "stream_seeds": Field("dict", {}, "per-stream seed overrides, e.g. {links: 7}"),
    "device": Field("str", "auto", "where tensors live", choices=("auto", "cpu", "cuda")),
    "threads": Field("int", None, "torch CPU threads of the run (null: one per core, see "
                     "netsim.util.threads); --threads overrides it", lo=1, nullable=True),
    "clients": Field("int", doc="number of clients N", lo=1),
    "data": Field("dict", doc="dataset, partition and per-client splits"),
    "model": Field("any", doc="model spec: a name or {name: ..., params}"),
    "network": Field("dict", {}, "topology, links, latency, loss, compute, failures, budget, policy"),
    "train": Field("dict", {}, "local training hyper-parameters"),
    "schedule": Field("dict", {}, "rounds and evaluation period, or an event-driven run's "
                      "until / steps (docs/async.md)"),
    "algorithms": Field("list", doc="algorithms to compare: names or {name: ..., params}"),
    "outputs": Field("dict", {}, "where and what to write"),
}

OUTPUT_FIELDS = {
    "dir": Field("str", "results", "results root; the run goes to DIR/<name>/"),
    "figures": Field("bool", True, "write figures at the end"),
    "pdf": Field("bool", False, "also write PDF figures"),
    "trace": Field("bool", False, "record every network event to trace/<alg>_seed<k>.csv"),
    "progress": Field("bool", True, "show a progress bar"),
    "checkpoint_every": Field("int", None, "write the run's checkpoint every k rounds (windows "
                              "of an event-driven run) of each (algorithm, seed) run, for netsim "
                              "run --resume (null: every rounds // 4 rounds once 10 s of wall "
                              "time have passed since the last one)", lo=1, nullable=True),
    "keep_checkpoints": Field("bool", False, "keep checkpoint.pkl after the run finishes"),
    "targets": Field("list", [], "mean test accuracies over clients whose first simulated time "
                     "summary.json gives (time_to_accuracy; docs/async.md, \"Results\")",
                     item="float", lo=0.0, hi=1.0),
}

NETWORK_SECTIONS = ("topology", "links", "latency", "loss", "compute", "failures", "budget", "policy")

#: keys every algorithm spec accepts besides its own parameters
ALGORITHM_COMMON = {
    "label": Field("name", None, "display name and file name of its results (default: the "
                   "algorithm name)", nullable=True),
    "train": Field("dict", {}, "overrides of the scenario's train section for this algorithm"),
    "policy": Field("dict", None, "receiver policy for this algorithm", nullable=True),
}


def _validate_network(section: Mapping, n_clients: int) -> dict:
    from netsim.links import (validate_compute, validate_failures, validate_latency, validate_links,
                              validate_loss)
    from netsim.sim.policy import validate_budget, validate_policy
    from topologies import validate_topology

    unknown = set(section) - set(NETWORK_SECTIONS)
    if unknown:
        key = sorted(unknown)[0]
        raise ConfigError(f"network.{key}", section[key],
                          "no such key; known keys: " + ", ".join(NETWORK_SECTIONS))
    return {
        "topology": validate_topology(section.get("topology", "complete"), "network.topology",
                                     n_clients),
        "links": validate_links(section.get("links") or {"name": "always"}, "network.links",
                                n_clients),
        "latency": validate_latency(section.get("latency") or {}, "network.latency", n_clients),
        "loss": validate_loss(section.get("loss") or {}, "network.loss", n_clients),
        "compute": validate_compute(section.get("compute") or {}, "network.compute", n_clients),
        "failures": validate_failures(section.get("failures") or {}, "network.failures",
                                      n_clients),
        "budget": validate_budget(section.get("budget"), "network.budget"),
        "policy": validate_policy(section.get("policy"), "network.policy"),
    }


def _validate_algorithms(specs: list, cfg: dict) -> list[dict]:
    from algorithms import ALGORITHMS
    from netsim.sim.policy import validate_policy

    if not specs:
        raise ConfigError("algorithms", specs, "a non-empty list of " + ", ".join(ALGORITHMS.names()))
    out, labels = [], set()
    for k, spec in enumerate(specs):
        path = f"algorithms[{k}]"
        if isinstance(spec, str):
            spec = {"name": spec}
        if not isinstance(spec, Mapping) or "name" not in spec:
            raise ConfigError(path, spec, "an algorithm name or {name: ..., params}: "
                              + ", ".join(ALGORITHMS.names()))
        comp = ALGORITHMS.get(spec["name"], f"{path}.name")
        fields = {**ALGORITHM_COMMON, **comp.fields}
        params = check_section(path, {k2: v for k2, v in spec.items() if k2 != "name"}, fields)
        params["label"] = params["label"] or comp.name
        if params["label"] in labels:
            raise ConfigError(f"{path}.label", params["label"], "a label not used by another "
                              "algorithm of this scenario")
        labels.add(params["label"])
        params["train"] = check_section(f"{path}.train", {**cfg["train"], **params["train"]},
                                        schema(Train))
        params["policy"] = (validate_policy(params["policy"], f"{path}.policy")
                            if params["policy"] is not None else cfg["network"]["policy"])
        resolved = {"name": comp.name, **params}
        check = getattr(comp.obj, "check_config", None)
        if check is not None:
            check(resolved, cfg, path)
        out.append(resolved)
    return out


def validate(raw: Mapping) -> dict:
    """Validate a raw scenario mapping; return the fully resolved config."""
    from algorithms.async_base import check_schedule_fits, validate_schedule
    from netsim.data import validate_data
    from netsim.models import MODELS

    cfg = check_section("", raw, TOP_FIELDS)
    for key, value in cfg["stream_seeds"].items():
        if key not in STREAMS:
            raise ConfigError(f"stream_seeds.{key}", value, "streams " + ", ".join(STREAMS))
        Field("int", lo=0).check(f"stream_seeds.{key}", value)
    n = cfg["clients"]
    cfg["data"] = validate_data(cfg["data"], n)
    cfg["model"] = MODELS.resolve(cfg["model"], "model")
    cfg["network"] = _validate_network(cfg["network"], n)
    cfg["train"] = check_section("train", cfg["train"], schema(Train))
    cfg["schedule"] = validate_schedule(cfg["schedule"])     # rounds, or event-driven
    cfg["outputs"] = check_section("outputs", cfg["outputs"], OUTPUT_FIELDS)
    cfg["algorithms"] = _validate_algorithms(cfg["algorithms"], cfg)
    check_schedule_fits(cfg)
    return cfg


def read_yaml(path: Path, field: str) -> dict:
    """A YAML file's top-level mapping; any unreadable, non-UTF-8 or invalid file (duplicate keys
    and alias bombs included: netsim.util.strict_yaml) is a ConfigError on ``field`` (``scenario``
    or ``sweep``)."""
    try:
        raw = strict_yaml.load(read_text(path, field, "YAML file"))
    except (yaml.YAMLError, RecursionError) as exc:
        raise ConfigError(field, str(path), "valid YAML", strict_yaml.problem(exc)) from None
    if not isinstance(raw, Mapping):
        raise ConfigError(field, str(path), "a YAML mapping at the top level")
    return dict(raw)


def parse_override(text: str) -> tuple[str, Any]:
    """Split ``path.to.key=value``; the value is parsed as YAML (numbers, lists, null, ...)."""
    if "=" not in text:
        raise ConfigError("--set", text, "path.to.key=value")
    key, value = text.split("=", 1)
    if not key.strip():
        raise ConfigError("--set", text, "path.to.key=value with a non-empty path")
    try:
        return key.strip(), strict_yaml.load(value)
    except (yaml.YAMLError, RecursionError) as exc:
        raise ConfigError(f"--set {key.strip()}", value, "a YAML value, e.g. 0.5, [0.4, 0.8] or "
                          "{name: ring}", strict_yaml.problem(exc)) from None


def apply_override(raw: dict, key: str, value: Any) -> None:
    """Set ``key`` (dotted path; list items by index or by algorithm name/label) in ``raw``."""
    parts = key.split(".")
    node: Any = raw
    for depth, part in enumerate(parts):
        last = depth == len(parts) - 1
        where = ".".join(parts[:depth + 1])
        if isinstance(node, list):
            idx = _list_index(node, part, where)
            if last:
                node[idx] = value
                return
            if isinstance(node[idx], str):
                node[idx] = {"name": node[idx]}
            node = node[idx]
        elif isinstance(node, dict):
            if last:
                node[part] = value
                return
            if not isinstance(node.get(part), (dict, list, str, type(None))):
                raise ConfigError(f"--set {key}", value, f"a path through sections; {where} is "
                                  f"not a section (it holds {node[part]!r})")
            if not isinstance(node.get(part), (dict, list)):
                node[part] = {} if node.get(part) is None else {"name": node[part]}
            node = node[part]
        else:
            raise ConfigError(f"--set {key}", value, f"a path through mappings and lists; {where} "
                              f"is a {type(node).__name__}")


def _list_index(items: list, part: str, where: str) -> int:
    if part.lstrip("-").isdigit():
        idx = int(part)
        if -len(items) <= idx < len(items):
            return idx
    for idx, item in enumerate(items):
        name = item if isinstance(item, str) else (item or {}).get("label") or (item or {}).get("name")
        if name == part:
            return idx
    names = [it if isinstance(it, str) else (it.get("label") or it.get("name")) for it in items]
    raise ConfigError(f"--set {where}", part, f"an index below {len(items)} or one of {names}")


class Scenario:
    """A scenario: raw YAML data plus its origin; validated on demand."""

    def __init__(self, raw: Mapping, path: str | Path | None = None):
        self.raw = copy.deepcopy(dict(raw))
        self.path = Path(path) if path is not None else None
        if not self.raw.get("name"):
            self.raw["name"] = self.path.stem if self.path else "scenario"

    @classmethod
    def load(cls, path: str | Path) -> "Scenario":
        """Read a YAML scenario file."""
        path = Path(path)
        raw = read_yaml(path, "scenario")
        if "scenario" in raw and "clients" not in raw:
            raise ConfigError("scenario", str(path), "a scenario file", f"this is a sweep file: "
                              f"check it with `netsim sweep {path} --dry-run`")
        return cls(raw, path)

    def with_overrides(self, overrides: Mapping[str, Any] | Iterable[str]) -> "Scenario":
        """A copy with dotted-path overrides applied (a mapping or ``key=value`` strings)."""
        raw = copy.deepcopy(self.raw)
        items = overrides.items() if isinstance(overrides, Mapping) else map(parse_override, overrides)
        for key, value in items:
            apply_override(raw, key, value)
        return Scenario(raw, self.path)

    def resolve(self) -> dict:
        """The validated, fully resolved config."""
        return validate(self.raw)

    @property
    def name(self) -> str:
        return str(self.raw["name"])

    def __repr__(self) -> str:
        algs = [a if isinstance(a, str) else a.get("label") or a.get("name")
                for a in self.raw.get("algorithms") or []]
        where = f", from '{self.path}'" if self.path else ""
        return (f"Scenario({self.name!r}: {self.raw.get('clients')} clients, "
                f"algorithms {algs}{where})")
