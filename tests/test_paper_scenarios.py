"""Every paper-scale scenario (scenarios/paper/) validates as shipped and runs end to end for a
few rounds on a tiny stand-in of its dataset written in the public format, so the configs cannot
rot.

The shrinking keeps each scenario's dataset, partition kind, model architecture and algorithm
list; it only lowers sizes (clients, steps, widths, samples) to what a stand-in can feed.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import yaml

from netsim import Scenario, run
from netsim.data.standins import write_standin

ROOT = Path(__file__).resolve().parent.parent
PAPER = sorted((ROOT / "scenarios" / "paper").glob("*.yaml"))
TINY_MODEL = {"resnet9": {"width": 0.0625}, "mobilenet_v2": {"width": 0.1, "hidden": 16},
              "char_lstm": {"hidden": 8}, "lenet5": {"hidden": [8]}}
TINY_ALGORITHM = {"neumann_steps": 2, "finetune_rounds": 1, "sample_peers": 2}
TINY_PDBO = {"inner_steps": 3, "decay_last": [2, 1], "learners": 2}


def test_there_is_one_scenario_per_paper_experiment():
    names = {p.stem for p in PAPER}
    assert {"cobo_cross_silo", "cobo_cross_device", "diple_emnist", "diple_cifar10",
            "dpfl_cifar10_dir", "dpfl_cifar10_patho", "dpfl_cinic10_dir", "dpfl_femnist",
            "pdbo_emnist", "pdbo_cifar10", "pdbo_cifar100", "pdbo_shakespeare"} <= names


@pytest.mark.parametrize("path", PAPER, ids=lambda p: p.stem)
def test_validates_as_shipped(path):
    cfg = Scenario.load(path).resolve()
    assert cfg["data"]["root"] is None            # the user points it at the data


def shrink(raw: dict, root: Path) -> dict:
    """The scenario at stand-in size: 3 rounds of 1 step on 6 clients (10 for class clusters)."""
    data = raw["data"]
    data["root"] = str(root)
    if isinstance(data["dataset"], dict):
        data["dataset"].pop("max_samples", None)
    part = data["partition"]
    if part["name"] == "class_clusters":
        raw["clients"], part["sizes"] = part["clusters"], [1] * part["clusters"]
    elif part["name"] != "label_permutation":
        raw["clients"] = min(raw["clients"], 6)
    elif part.get("replicate"):                 # every client holds the whole stand-in
        data["max_samples_per_client"] = 60
    part.update({k: 1 for k in ("min_size",) if k in part})
    part.update({k: 20 for k in ("samples_per_client",) if k in part})
    data["val_fraction"] = max(data.get("val_fraction", 0.0), 0.2)
    model = raw["model"] if isinstance(raw["model"], dict) else {"name": raw["model"]}
    raw["model"] = {**model, **TINY_MODEL.get(model["name"], {})}
    raw["train"].update(batch_size=4, local_steps=1)
    raw["schedule"] = {"rounds": 3, "eval_every": 1}        # DPFL: 2 rounds of preprocessing
    specs = [{"name": a} if isinstance(a, str) else a for a in raw["algorithms"]]
    raw["algorithms"] = [{**a, **{k: v for k, v in TINY_ALGORITHM.items() if k in a},
                          **(TINY_PDBO if a["name"].startswith("pdbo") else {})} for a in specs]
    if any(a["name"].startswith("pdbo") for a in specs):   # HGP through MobileNet is the slowest
        raw["clients"], raw["schedule"]["rounds"] = 3, 2
    raw["outputs"] = {"figures": False, "progress": False}
    return raw


@pytest.fixture(scope="module")
def standins(tmp_path_factory):
    """One stand-in folder per dataset, written on first use."""
    folders: dict[str, Path] = {}

    def get(dataset: dict | str) -> Path:
        spec = dataset if isinstance(dataset, dict) else {"name": dataset}
        key = f"{spec['name']}-{spec.get('split', 'balanced')}"
        if key not in folders:
            folders[key] = write_standin(spec["name"], tmp_path_factory.mktemp(key),
                                         samples_per_class=6, writers=8,
                                         split=spec.get("split", "balanced"))
        return folders[key]
    return get


@pytest.mark.parametrize("path", PAPER, ids=lambda p: p.stem)
def test_runs_a_few_rounds_on_a_standin(path, standins, tmp_path):
    raw = yaml.safe_load(path.read_text())
    raw = shrink(raw, standins(raw["data"]["dataset"]))
    res = run(Scenario(raw), out=tmp_path, quiet=True)
    summary = res.summary["algorithms"]
    assert len(summary) == len(raw["algorithms"])
    assert all(np.isfinite(s["mean_accuracy"]) for s in summary.values())
