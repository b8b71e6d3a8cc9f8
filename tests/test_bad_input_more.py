"""More bad input and faults (issue 29): every one is a single line on stderr, never a traceback,
with exit code 2 (130 for Ctrl-C); bounded inputs (names, threads, memory, YAML); warnings where a
result would otherwise be silently wrong."""
from __future__ import annotations

import errno
import json
import os
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import torch
import yaml

import netsim.util.threads as nt
from netsim import Scenario, run
from netsim.cli import main
from netsim.errors import MAX_LINE, ConfigError
from netsim.results import ResultsWriter
from netsim.running.sweep import pool_size
from netsim.util import free_memory

from helpers import TINY, fails

SMALL = dict(TINY, algorithms=["local"], schedule={"rounds": 2, "eval_every": 2})


@pytest.fixture(scope="module")
def finished(tmp_path_factory) -> Path:
    """A finished results folder of :data:`SMALL`."""
    return run(Scenario(SMALL), out=tmp_path_factory.mktemp("res"), quiet=True).dir


@pytest.fixture
def scen(tmp_path) -> Path:
    path = tmp_path / "small.yaml"
    path.write_text(yaml.safe_dump(SMALL))
    return path


def warns(capsys, argv: list[str], *expected: str) -> str:
    """Run the CLI; assert exit code 0 and a ``netsim: warning:`` line with ``expected``."""
    capsys.readouterr()
    assert main(argv) == 0
    err = capsys.readouterr().err
    lines = [line for line in err.splitlines() if line.startswith("netsim: warning: ")]
    assert any(all(t in line for t in expected) for line in lines), err
    assert "Traceback" not in err
    return err


def test_names_are_bounded_and_error_lines_short(scen, tmp_path, capsys):
    long = "a" * 300
    err = fails(capsys, ["run", str(scen), "--set", f"name={long}", "--out", str(tmp_path / "o")],
                "name: got 'aaa", "at most 100")
    assert len(err) <= MAX_LINE + 1 and not (tmp_path / "o").exists()
    fails(capsys, ["validate", str(scen), "--set", f"algorithms=[{{name: local, label: {long}}}]"],
          "algorithms[0].label")
    assert len(str(ConfigError("x", ["y" * 1000] * 1000, "z" * 1000))) <= MAX_LINE


def test_yaml_alias_bombs_and_duplicate_keys(scen, tmp_path, capsys):
    keys = "abcdefghi"                                        # 9^9 values from 0.4 kB
    lines = [f"a: &a [{', '.join(['lol'] * 9)}]"] + [
        f"{k}: &{k} [{', '.join(['*' + prev] * 9)}]" for prev, k in zip(keys, keys[1:])]
    bomb = tmp_path / "bomb.yaml"
    bomb.write_text("\n".join([*yaml.safe_dump(SMALL).splitlines(), *lines]))
    err = fails(capsys, ["validate", str(bomb)], "scenario: ", "aliases expand to more than")
    assert len(err) <= MAX_LINE + 1
    small_bomb = tmp_path / "small_bomb.yaml"                  # 9^5 values: read, then refused
    nested = [[[[["x"] * 9] * 9] * 9] * 9] * 9                     # dumped with aliases
    small_bomb.write_text(yaml.safe_dump({**SMALL, "description": nested}))
    err = fails(capsys, ["validate", str(small_bomb)], "description: got [[[[['x', 'x'")
    assert len(err) <= MAX_LINE + 1
    fails(capsys, ["validate", str(scen), "--set", "description=&a [*a]"], "--set description",
          "aliases expand")
    dup = tmp_path / "dup.yaml"
    dup.write_text(yaml.safe_dump(SMALL) + "seed: 3\n")
    line = len(yaml.safe_dump(SMALL).splitlines()) + 1
    fails(capsys, ["validate", str(dup)], f"duplicate key 'seed' at line {line}")
    own = tmp_path / "config_alias.yaml"                # netsim's own config.yaml shares sections
    own.write_text("x: &p {name: wait_all}\n" + yaml.safe_dump(SMALL) + "y: *p\n")
    fails(capsys, ["validate", str(own)], "x: got {'name': 'wait_all'}; allowed: no such key")


def test_misleading_messages_are_fixed(scen, capsys):
    fails(capsys, ["validate", str(scen), "--set", "schedule.rounds=1e12"],
          "schedule.rounds: got 1000000000000", "fits in the")
    err = fails(capsys, ["validate", str(scen), "--set", "train.lr=.inf"], "train.lr",
                "a float >= 0 (NaN and infinities are refused)")
    assert "inf]" not in err
    if Path("/dev/zero").exists():
        fails(capsys, ["validate", str(scen), "--set",
                       "network.links={name: trace, path: /dev/zero}"],
              "network.links.path: got '/dev/zero'", "not a regular file")
    quickstart = Path(__file__).parent.parent / "scenarios" / "quickstart.yaml"
    assert main(["validate", str(quickstart), "--set", "schedule.rounds=10"]) == 0
    fails(capsys, ["validate", str(quickstart), "--set", "schedule.rounds=10", "--set",
                   "algorithms.fedavg_ft.finetune_rounds=10"],
          "algorithms[2].finetune_rounds: got 10", "set it to null")


def test_fine_tuning_follows_the_rounds():
    """The quickstart's fedavg_ft fine-tunes a quarter of its 40 rounds, as its former
    ``finetune_rounds: 10``; the default share gives a fifth (rounds // 5), as before."""
    from algorithms.fedavg import FedAvgFT
    from netsim.running.loop import build_algorithm

    quickstart = Path(__file__).parent.parent / "scenarios" / "quickstart.yaml"
    alg = build_algorithm(Scenario.load(quickstart).with_overrides({"clients": 4}), 2)
    assert isinstance(alg, FedAvgFT) and (alg.ft, alg.start_ft) == (10, 30)
    for rounds in (1, 4, 5, 23, 40):
        raw = dict(SMALL, algorithms=["fedavg_ft"], schedule={"rounds": rounds, "eval_every": 1})
        assert build_algorithm(raw).ft == max(1, rounds // 5)


def test_analyze_refuses_bad_thresholds_and_targets(finished, capsys):
    res = str(finished)
    fails(capsys, ["analyze", res, "--threshold", "-1"], "--threshold: got -1.0")
    fails(capsys, ["analyze", res, "--threshold", "nan"], "--threshold: got nan")
    fails(capsys, ["analyze", res, "--threshold", "2", "--relative"], "in [0, 1]")
    fails(capsys, ["analyze", res, "--target", "5"], "target: got 5.0", "accuracy in [0, 1]")
    fails(capsys, ["analyze", res, "--target", "-1"], "--target: got -1.0")
    assert main(["analyze", res, "--target", "1"]) == 0          # never reached: said so
    out = capsys.readouterr().out
    assert "time_to_target" in out and "round_to_target" in out and "not reached" in out


def test_unreadable_results_folders(finished, tmp_path, capsys):
    killed = tmp_path / "killed"                      # a run killed before its first round
    killed.mkdir()
    (killed / "config.yaml").write_text((finished / "config.yaml").read_text())
    for cmd in ("figures", "analyze"):
        fails(capsys, [cmd, str(killed)], "no results yet", "--resume")
    garbage = tmp_path / "garbage"
    garbage.mkdir()
    for name in ("config.yaml", "network.csv", "clients.csv"):
        (garbage / name).write_bytes((finished / name).read_bytes())
    (garbage / "metrics.csv").write_text("garbage,,x\n1,2\n")
    for cmd in ("figures", "analyze"):
        fails(capsys, [cmd, str(garbage)], "metrics.csv", "its first line is 'garbage,,x'")
    (garbage / "metrics.csv").write_bytes(b"\xff\xfe\x00garbage")
    fails(capsys, ["analyze", str(garbage)], "not UTF-8 text")
    (garbage / "config.yaml").write_bytes("name: caf\xe9\n".encode("latin-1"))
    for cmd in ("figures", "analyze"):
        fails(capsys, [cmd, str(garbage)], "results: ", "config.yaml", "UTF-8")


def test_bad_paths_and_empty_out(scen, tmp_path, capsys):
    blocker = tmp_path / "a_file"
    blocker.write_text("")
    fails(capsys, ["reference", "--out", str(blocker / "ref.md")], "--out: ",
          "a file path that can be written")
    for argv in (["run", str(scen)], ["sweep", str(scen)], ["reference"]):
        fails(capsys, [*argv, "--out", ""], "--out: got ''")
    from netsim import run
    from netsim.errors import ConfigError
    with pytest.raises(ConfigError, match="out: got ''"):        # the Python API alike
        run(scen, out="")
    fails(capsys, ["standin", "emnist", str(tmp_path / "em"), "--split", "bogus"],
          "--split: got 'bogus'", "balanced, letters, digits")
    assert not (tmp_path / "em").exists()


def test_memory_is_estimated_before_data_is_made(scen, tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(free_memory, "available", lambda device: (10_000_000, "free here"))
    fails(capsys, ["standin", "cifar10", str(tmp_path / "c"), "--samples", "1000"], "--samples: "
          "got 1000", "cifar10 stand-in that fits in the 10.0 MB free here", "at least 30.7 MB")
    fails(capsys, ["standin", "femnist", str(tmp_path / "f"), "--samples", "100"], "--samples")
    assert not (tmp_path / "c").exists() and not (tmp_path / "f").exists()
    for dataset, field in (("{name: gaussian_mixture, n_samples: 1e6, dim: 10}", "n_samples"),
                           ("{name: cobo_quadratic, n_samples: 1e6}", "n_samples"),
                           ("{name: rotated, base: mnist, angles: [0, 90]}", "angles")):
        fails(capsys, ["validate", str(scen), "--set", f"data.dataset={dataset}", "--set",
                       "data.partition=iid"], f"data.dataset.{field}: got", "dataset that fits")


def test_threads_are_capped_and_split(scen, tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(nt, "cores", lambda: 1)
    monkeypatch.setattr("netsim.running.sweep.machine_cores", lambda: 1)
    warns(capsys, ["run", str(scen), "--threads", "10000", "--out", str(tmp_path / "a"), "-q"],
          "threads: 10000 threads capped at 1", "cores of this machine")
    assert json.loads((tmp_path / "a/tiny/summary.json").read_text())["threads"] == 1
    sweep = tmp_path / "sw.yaml"
    sweep.write_text(yaml.safe_dump({"scenario": str(scen), "grid": {"train.lr": [0.1, 0.2]}}))
    warns(capsys, ["sweep", str(sweep), "--threads", "100000", "--dry-run"],
          "sweep.executor.threads: 100000 threads capped at 1")
    monkeypatch.setattr("netsim.running.sweep.machine_cores", lambda: 8)
    local = {"name": "local", "workers": None, "threads": None}
    assert pool_size(local, 3) == (3, 2) and pool_size(local, 100) == (8, 1)
    assert pool_size({**local, "workers": 2}, 100) == (2, 4)
    with pytest.warns(RuntimeWarning, match="capped at 4, the 8 cores of this machine split"):
        assert pool_size({**local, "workers": 2, "threads": 100}, 100) == (2, 4)
    assert pool_size({**local, "name": "submitit", "workers": 2, "threads": 100}, 100) == (2, 100)


def test_a_busy_machine_is_named(scen, tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(nt, "cores", lambda: 2)
    monkeypatch.setattr(os, "getloadavg", lambda: (3.0, 3.0, 3.0))
    try:
        warns(capsys, ["run", str(scen), "--threads", "2", "--out", str(tmp_path), "-q"],
              "the machine is busy (load average 3.0 on 2 cores)", "--threads 1")
    finally:
        torch.set_num_threads(1)
    capsys.readouterr()
    assert main(["run", str(scen), "--threads", "1", "--out", str(tmp_path), "-q"]) == 0
    assert "busy" not in capsys.readouterr().err
    monkeypatch.setattr(os, "getloadavg", lambda: (0.2, 0.2, 0.2))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        nt.warn_if_busy(2)                             # a quiet machine: nothing said


def test_disk_full_and_ctrl_c_say_what_is_kept_and_how_to_resume(scen, tmp_path, capsys,
                                                                monkeypatch):
    out = tmp_path / "out"
    argv = ["run", str(scen), "--out", str(out), "-q"]

    def full(self, summary):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(self.dir / "summary.json"))
    with monkeypatch.context() as m:
        m.setattr(ResultsWriter, "write_summary", full)
        err = fails(capsys, argv, "No space left on device", str(out / "tiny"), "--resume")
    assert "Traceback" not in err
    assert main([*argv, "--resume"]) == 0 and (out / "tiny/summary.json").is_file()

    def stop(*args, **kwargs):
        raise KeyboardInterrupt
    with monkeypatch.context() as m:
        m.setattr("netsim.running.runner.run_loop", stop)
        capsys.readouterr()
        assert main([*argv, "--overwrite"]) == 130
    err = capsys.readouterr().err
    assert err.startswith("netsim: interrupted; ") and err.count("\n") == 1, err
    assert str(out / "tiny") in err and "--resume" in err
    assert main([*argv, "--resume"]) == 0


def test_a_closed_stdout_ends_quietly(finished):
    proc = subprocess.Popen([sys.executable, "-m", "netsim.cli", "analyze", str(finished)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    proc.stdout.close()                                      # as `| head` does
    err = proc.stderr.read().decode()
    assert proc.wait() == 141 and err == "", err
    assert (finished / "analysis.json").is_file()            # written before the table


def test_clients_without_test_samples_are_left_out_of_the_means(scen, tmp_path, capsys):
    for cap in (1, 3):
        fails(capsys, ["validate", str(scen), "--set", f"data.max_samples_per_client={cap}"],
              f"data.max_samples_per_client: got {cap}; allowed: at least 4")
    fails(capsys, ["run", str(scen), "--set", "data.test_fraction=0", "--out", str(tmp_path)],
          "data.test_fraction: got 0.0", "no client has one")
    argv = ["run", str(scen), "--set", "clients=200", "--set", "network.topology=ring", "--set",
            "data.partition={name: dirichlet, alpha: 1.0, min_size: 1}", "--out", str(tmp_path),
            "-q", "--overwrite"]
    warns(capsys, argv, "2 of 200 clients have no test sample", "left out of the test means")
    folder = tmp_path / "tiny"
    clients = pd.read_csv(folder / "clients.csv")
    empty = set(clients.loc[clients["n_test"] == 0, "client"])
    m = pd.read_csv(folder / "metrics.csv")
    last = m[(m["split"] == "test") & (m["round"] == m["round"].max())]
    assert last[last["client"].isin(empty)][["accuracy", "loss"]].isna().all().all()
    summary = json.loads((folder / "summary.json").read_text())["algorithms"]["local"]
    assert summary["mean_accuracy"] == pytest.approx(last["accuracy"].mean())   # NaN skipped
    assert summary["mean_accuracy"] != pytest.approx(last["accuracy"].fillna(0).mean())
    assert np.isfinite(summary["bottom10_accuracy"])


def test_a_run_where_nothing_can_be_learned_warns(scen, tmp_path, capsys):
    base = ["run", str(scen), "--set", "algorithms=[local, ifca]", "--out", str(tmp_path), "-q"]
    assert main([*base, "--set", "schedule.rounds=1"]) == 0
    summary = json.loads((tmp_path / "tiny/summary.json").read_text())["algorithms"]
    assert "collab_precision" in summary["ifca"]
    err = warns(capsys, [*base, "--overwrite", "--set", "network.failures.crash={share: 1, at: 0}"],
                "network.failures.crash: every client crashes at t = 0")
    assert "netsim: warning: ifca seed 0: no message was delivered" in err
    assert "local seed 0" not in err                          # a baseline learns no graph
    summary = json.loads((tmp_path / "tiny/summary.json").read_text())["algorithms"]
    assert "collab_precision" not in summary["ifca"]
