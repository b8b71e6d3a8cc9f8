"""Scenario validation: every bad input fails before running, naming field, value and allowed."""
from __future__ import annotations

import pytest
import yaml

from netsim.cli import DEFAULT_SCENARIO, main
from netsim.errors import ConfigError
from netsim.scenario.config import Scenario

BASE = Scenario.load(DEFAULT_SCENARIO)

BAD = [
    ({"clients": 0}, "clients"),
    ({"clients": "many"}, "clients"),
    ({"seed": -1}, "seed"),
    ({"colour": "red"}, "colour"),
    ({"device": "tpu"}, "device"),
    ({"data.dataset": "imagenet"}, "data.dataset"),
    ({"data.partition.name": "by_magic"}, "data.partition"),
    ({"data.partition.clusters": 50}, "data.partition.clusters"),
    ({"data.val_fraction": 1.5}, "data.val_fraction"),
    ({"model.name": "transformer"}, "model.name"),
    ({"network.topology.name": "hypercube"}, "network.topology"),
    ({"network.links": {"name": "bernoulli", "p": 1.5}}, "network.links.p"),
    ({"network.links": {"name": "bernoulli", "p": [0.8, 0.4]}}, "network.links.p"),
    ({"network.loss.p": -0.1}, "network.loss.p"),
    ({"network.budget": {"peers_per_round": -1}}, "network.budget.peers_per_round"),
    ({"network.budget": {"total_bytes": -5}}, "network.budget.total_bytes"),
    ({"network.policy": {"name": "deadline"}}, "network.policy.deadline"),
    ({"network.policy": {"name": "psychic"}}, "network.policy.name"),
    ({"network.wormholes": 3}, "network.wormholes"),
    ({"train.lr": -0.1}, "train.lr"),
    ({"train.batch_size": 0}, "train.batch_size"),
    ({"schedule.rounds": 0}, "schedule.rounds"),
    ({"algorithms": []}, "algorithms"),
    ({"algorithms": ["fedavg", "magic"]}, "algorithms[1].name"),
    ({"algorithms": [{"name": "fedprox", "mu": -1}]}, "algorithms[0].mu"),
    ({"algorithms": [{"name": "fedavg", "participation": 0}]}, "algorithms[0].participation"),
    ({"algorithms": ["fedavg", "fedavg"]}, "algorithms[1].label"),
    ({"algorithms": [{"name": "fedavg_ft", "finetune_rounds": 100}]}, "algorithms[0].finetune_rounds"),
    ({"stream_seeds": {"weather": 3}}, "stream_seeds.weather"),
]


@pytest.mark.parametrize("override,field", BAD, ids=[f for _, f in BAD])
def test_bad_input_names_field_value_and_allowed(override, field):
    with pytest.raises(ConfigError) as err:
        BASE.with_overrides(override).resolve()
    msg = str(err.value)
    assert msg.startswith(field), msg
    assert "allowed:" in msg


def test_oracle_needs_clusters():
    bad = BASE.with_overrides({"data.partition": {"name": "iid"}, "algorithms": ["oracle"]})
    with pytest.raises(ConfigError, match="algorithms\\[0\\].name"):
        bad.resolve()


def test_defaults_are_filled_and_overrides_apply():
    cfg = BASE.with_overrides(["train.lr=0.5", "algorithms.fedprox.mu=0.3",
                               "network.links.p=[0.2, 0.3]"]).resolve()
    assert cfg["train"]["lr"] == 0.5
    fedprox = next(a for a in cfg["algorithms"] if a["name"] == "fedprox")
    assert fedprox["mu"] == 0.3 and fedprox["train"]["lr"] == 0.5
    assert cfg["network"]["links"]["p"] == [0.2, 0.3]
    assert cfg["network"]["budget"]["peers_per_round"] is None


def test_cli_validate_reports_error_with_exit_code_2(tmp_path, capsys):
    raw = dict(BASE.raw, clients=3, data={"dataset": "digits",
                                          "partition": {"name": "label_permutation", "clusters": 4}})
    path = tmp_path / "bad.yaml"
    path.write_text(yaml.safe_dump(raw))
    assert main(["validate", str(path)]) == 2
    err = capsys.readouterr().err
    assert "data.partition.clusters" in err and "4" in err


def test_cli_missing_file_and_bad_yaml(tmp_path, capsys):
    assert main(["validate", str(tmp_path / "nope.yaml")]) == 2
    bad = tmp_path / "broken.yaml"
    bad.write_text("clients: [1, 2\n")
    assert main(["validate", str(bad)]) == 2
    assert "valid YAML" in capsys.readouterr().err


def test_cli_list(capsys):
    assert main(["list", "algorithms"]) == 0
    out = capsys.readouterr().out
    for name in ("local", "fedavg", "fedavg_ft", "fedprox", "oracle", "sgp", "dpsgd"):
        assert name in out
