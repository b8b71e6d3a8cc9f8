"""Bad input the user meets at the command line: one line on stderr, exit code 2, never a
traceback, and nothing run."""
from __future__ import annotations

import pytest
import yaml

from netsim.cli import main
from netsim.errors import ConfigError
from netsim.scenario import memory
from netsim.scenario.config import Scenario
from netsim.util import free_memory

from helpers import TINY, fails

SMALL = dict(TINY, algorithms=["local"], schedule={"rounds": 2, "eval_every": 2})


@pytest.fixture
def files(tmp_path):
    scen = tmp_path / "tiny.yaml"
    scen.write_text(yaml.safe_dump(SMALL))
    sweep = tmp_path / "sw.yaml"
    sweep.write_text(yaml.safe_dump({"scenario": "tiny.yaml", "grid": {"train.lr": [0.1, 0.2]},
                                     "executor": {"name": "serial"}}))
    return scen, sweep


@pytest.mark.parametrize("override,field", [
    ("train.lr=.nan", "train.lr"), ("train.lr=.inf", "train.lr"), ("train.lr=nan", "train.lr"),
    ("network.links.p=.nan", "network.links.p"), ("network.links.p=[0.1, .nan]", "network.links.p"),
    ("network.latency.bandwidth=.inf", "network.latency.bandwidth"),
    ("network.loss.p=-.inf", "network.loss.p")])
def test_non_finite_numbers_are_refused(files, capsys, override, field):
    fails(capsys, ["validate", str(files[0]), "--set", override], field,
          "NaN and infinities are refused")


def test_unreadable_files_and_overrides(files, tmp_path, capsys):
    scen, sweep = files
    latin = tmp_path / "latin.yaml"
    latin.write_bytes("name: caf\xe9\n".encode("latin-1"))
    fails(capsys, ["validate", str(latin)], "scenario: ", "UTF-8")
    fails(capsys, ["sweep", str(latin), "--dry-run"], "sweep: ", "UTF-8")
    broken = tmp_path / "broken_sweep.yaml"
    broken.write_text("scenario: tiny.yaml\ngrid: {train.lr: [0.1\n")
    fails(capsys, ["sweep", str(broken), "--dry-run"], "sweep: ", "valid YAML")
    fails(capsys, ["run", str(scen), "--set", "network.links.p=[0.4"], "--set network.links.p")
    fails(capsys, ["validate", str(scen), "--set", "clients.x=3"], "clients is not a section")
    fails(capsys, ["validate", str(sweep)], "this is a sweep file", f"netsim sweep {sweep} --dry-run")


def test_bad_command_line_values(files, tmp_path, capsys):
    scen, sweep = files
    fails(capsys, ["figures", str(tmp_path)], "results: ", "netsim results folder")
    fails(capsys, ["analyze", str(tmp_path / "nonexistent")], "results: ")
    fails(capsys, ["run", str(scen), "--seeds", "-1"], "seeds[0]: got -1")
    fails(capsys, ["run", str(scen), "--threads", "0"], "threads: got 0")
    fails(capsys, ["sweep", str(sweep), "--workers", "-1"], "--workers: got -1")
    fails(capsys, ["sweep", str(sweep), "--workers", "0"], "--workers: got 0")
    blocker = tmp_path / "a_file"
    blocker.write_text("")
    fails(capsys, ["run", str(scen), "--out", str(blocker / "x")], "--out: ", "a folder that can")
    fails(capsys, ["standin", "cifar10", str(tmp_path / "d"), "--samples", "-1"], "--samples: ")
    fails(capsys, ["standin", "cifar10", str(blocker / "d")], "folder: ")
    assert not (tmp_path / "d").exists()


def test_sweep_settings_are_checked_before_any_run(files, tmp_path, capsys):
    scen, sweep = files
    raw = yaml.safe_load(sweep.read_text())
    out = tmp_path / "out"
    for bad, field in (({"metrics": ["typo"]}, "sweep.metrics[0]"), ({"x": "typo"}, "sweep.x"),
                       ({"seeds": []}, "sweep.seeds"), ({"name": "../up"}, "sweep.name")):
        path = tmp_path / "bad.yaml"
        path.write_text(yaml.safe_dump({**raw, **bad}))
        fails(capsys, ["sweep", str(path), "--out", str(out)], field)
    assert not out.exists()
    fails(capsys, ["sweep", str(sweep), "--seeds", "-2"], "sweep.seeds[0]")


def test_sweep_seeds_and_set(files, capsys):
    from netsim.running.sweep import Sweep

    _, sweep = files
    assert main(["sweep", str(sweep), "--dry-run", "--seeds", "0", "1", "2"]) == 0
    assert "sw: 6 runs" in capsys.readouterr().out
    cells = Sweep.load(sweep, seeds=[3], overrides=["schedule.rounds=1", "train.lr=9"]).cells()
    assert [c.seed for c in cells] == [3, 3]
    assert {c.config["schedule"]["rounds"] for c in cells} == {1}
    assert [c.config["train"]["lr"] for c in cells] == [0.1, 0.2]        # the grid wins


def test_memory_estimate_refuses_what_cannot_fit(files, tmp_path, capsys, monkeypatch):
    scen, _ = files
    err = fails(capsys, ["validate", str(scen), "--set", "clients=10000000"], "clients: got 10000000",
                "algorithms' N x N arrays")
    assert "TB" in err
    fails(capsys, ["run", str(scen), "--set", "clients=10000000", "--out", str(tmp_path / "o")],
          "clients: got 10000000")
    assert not (tmp_path / "o").exists()
    cfg = Scenario(SMALL).resolve()
    parts = memory.estimate(cfg, n_params=1000, data_bytes=5)
    edges = 16                                          # the undirected ring of 8 clients
    small = {"engine and links log (edge lists)": edges * 200 + 2 * 64 // 8,
             "algorithms' N x N arrays": 64 * 4 * 3, "collaboration matrices": 64 * 4 * 3}
    assert parts == {**small, "client banks": 3 * 4 * 8 * 1000, "client data": 5}
    monkeypatch.setattr(free_memory, "available", lambda device: (100_000, "free here"))
    with pytest.raises(ConfigError, match=r"fits in the 100.0 kB free here .*at least 100.8 kB"):
        memory.check(cfg, "cpu", n_params=1000, data_bytes=5)
    assert memory.check(cfg, "cpu", n_params=100) == {**small, "client banks": 9600}


def test_too_small_standin_names_the_samples_it_needs(tmp_path):
    from netsim.data import build_client_data
    from netsim.data.standins import write_standin

    import numpy as np

    data = {"dataset": "cifar10", "root": str(tmp_path / "c10"),
            "partition": {"name": "dirichlet", "alpha": 0.5, "min_size": 8}}
    write_standin("cifar10", tmp_path / "c10")                       # --samples 4: 40 images
    with pytest.raises(ConfigError) as err:
        build_client_data(data, 10, np.random.default_rng(1))
    msg = str(err.value)
    assert msg.startswith("data.partition.min_size: got 8") and "stand-in of 40 samples" in msg
    samples = int(msg.rsplit("--samples ", 1)[1].rstrip("`)"))
    assert samples == 16                                      # 160 images: 10 clients x 8 (+ draws)
    write_standin("cifar10", tmp_path / "big", samples_per_class=samples)
    data["root"] = str(tmp_path / "big")
    assert build_client_data(data, 10, np.random.default_rng(1)).n_clients == 10
